// Package sqlite is the embedded backend of every store interface, over
// modernc.org/sqlite (pure Go, no cgo).
//
// One *sql.DB with a single connection does all writes, so writers queue in Go
// instead of spinning on SQLITE_BUSY, and each write transaction starts with
// BEGIN IMMEDIATE. A second pool of read-only connections serves reads
// concurrently thanks to WAL mode. The schema is a set of migrations embedded
// in the binary and applied in order by Migrate (Open calls it).
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/vectorscan"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// BusyTimeout is how long a connection waits for a lock held by another
// process before failing.
const BusyTimeout = 5 * time.Second

// DB is an open embedded database. It is safe for concurrent use.
type DB struct {
	w *sql.DB // the single writer connection
	r *sql.DB // read-only connections

	stmts sync.Map // query text → *sql.Stmt prepared on w

	shipMu sync.Mutex // serialises UsageOutbox.Ship

	group writeGroup // Ledger.Reserve's and Settle's group commit

	vec vectorscan.Cache // the vectors of searched stores (Vectors)
}

var _ store.Pinger = (*DB)(nil)

// Open opens (creating if needed) the database file at path, configures WAL,
// the busy timeout and foreign keys, and applies pending migrations.
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: invalid database path %q", path)
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(BusyTimeout.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "NORMAL")

	wq := url.Values{}
	for k, v := range q {
		wq[k] = v
	}
	wq.Set("_txlock", "immediate")
	// The writer's statement journals in memory: a group commit's
	// transaction holds many requests' statements, and once its journal
	// outgrew SQLite's 64 KiB it went to a file, a write syscall for every
	// page each later statement touched. (The readers, whose sorts may be
	// large, keep temporary files on disk.)
	wq.Add("_pragma", "temp_store(memory)")
	w, err := sql.Open("sqlite", path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open writer: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// Connect the writer first so the file exists and is in WAL mode before
	// the readers open it.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: connect %s: %w", path, err)
	}

	rq := url.Values{}
	for k, v := range q {
		rq[k] = v
	}
	rq.Set("_query_only", "1")
	r, err := sql.Open("sqlite", path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open readers: %w", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)

	db := &DB{w: w, r: r}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close closes all connections.
func (db *DB) Close() error {
	return errors.Join(db.r.Close(), db.w.Close())
}

// Ping checks that the database answers, for /readyz.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}

// Store returns the store interfaces backed by db. The Ledger stores each
// settle's usage record in this database's Usage, in the settle's
// transaction.
func (db *DB) Store() store.Store {
	return store.Store{
		Accounts:      accounts{db},
		Conversations: conversations{db},
		Messages:      messages{db},
		Ledger:        ledger{db: db},
		Usage:         usage{db},
		Attachments:   attachments{db},
		Audit:         audit{db},
		Search:        search{db},
		Shares:        shares{db},
		VectorStores:  vectorStores{db},
		Projects:      projects{db},
		Memories:      memories{db},
		Batches:       batches{db},
		Webhooks:      webhooks{db},
		Organizations: organizations{db},
		Feedback:      feedback{db},
		Prompts:       prompts{db},
	}
}

// StoreWithOutbox returns the store interfaces backed by db for a
// deployment whose Usage store is elsewhere (ClickHouse): the Ledger stores
// each settle's usage record in Outbox, in the settle's transaction, for a
// relay to copy to that store. Usage is nil: the caller sets it.
func (db *DB) StoreWithOutbox() store.Store {
	s := db.Store()
	s.Ledger = ledger{db: db, outbox: true}
	s.Usage = nil
	s.Outbox = outbox{db: db, mu: &db.shipMu}
	return s
}

// Migrate applies the embedded migrations that are not yet recorded in
// schema_migrations, each in its own transaction, in file-name order. It is
// safe to run concurrently from several processes.
func (db *DB) Migrate(ctx context.Context) error {
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil {
			return fmt.Errorf("sqlite: migration %s: name must start with a number and '_'", base)
		}
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			return err
		}
		err = db.write(ctx, func(tx *txn) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.Tx.ExecContext(ctx, string(body)); err != nil { // several statements: not preparable
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				version, base, time.Now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", base, err)
		}
	}
	return nil
}

// write runs fn in a write transaction (BEGIN IMMEDIATE on the single writer
// connection) and commits it if fn returns nil.
func (db *DB) write(ctx context.Context, fn func(tx *txn) error) (err error) {
	sqlTx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	tx := &txn{Tx: sqlTx, db: db}
	defer func() {
		if len(tx.unprepared) > 0 {
			db.prepare(context.WithoutCancel(ctx), tx.unprepared)
		}
	}()
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// exec runs one write statement outside an explicit transaction.
func (db *DB) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := db.w.ExecContext(ctx, query, args...)
	return res, mapErr(err)
}

// mapErr translates constraint violations into store errors.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", store.ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w: referenced record does not exist: %v", store.ErrNotFound, err)
		}
	}
	return err
}

// notFound turns sql.ErrNoRows into store.ErrNotFound.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s", store.ErrNotFound, what)
	}
	return err
}

// ts encodes a time as unix nanoseconds.
// readRows runs a read query and scans each row with scan.
func readRows[T any](ctx context.Context, db *DB, q string, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func ts(t time.Time) int64 { return t.UnixNano() }

// nullTS encodes a time, or NULL for the zero time.
func nullTS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// fromTS decodes unix nanoseconds as a UTC time.
func fromTS(n int64) time.Time { return time.Unix(0, n).UTC() }

// fromNullTS decodes a nullable time; NULL is the zero time.
func fromNullTS(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromTS(n.Int64)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// rowsAffected returns ErrNotFound when a statement touched no row.
func affectedOne(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", store.ErrNotFound, what)
	}
	return nil
}

// txn is a write transaction whose statements are prepared once per query
// text and reused: SQLite's parser was a large share of the hot path's CPU
// (every request holds and settles money).
type txn struct {
	*sql.Tx
	db         *DB
	unprepared []string
}

// stmt returns the transaction's handle on the prepared statement of query,
// or nil the first time a query is seen: it cannot be prepared now, while the
// transaction holds the only writer connection, so it is noted and prepared
// once the transaction is over.
func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	if s, ok := t.db.stmts.Load(query); ok {
		return t.Tx.StmtContext(ctx, s.(*sql.Stmt))
	}
	t.unprepared = append(t.unprepared, query)
	return nil
}

// prepare prepares the queries first seen in a finished transaction.
func (db *DB) prepare(ctx context.Context, queries []string) {
	for _, q := range queries {
		if _, ok := db.stmts.Load(q); ok {
			continue
		}
		if s, err := db.w.PrepareContext(ctx, q); err == nil {
			if _, loaded := db.stmts.LoadOrStore(q, s); loaded {
				_ = s.Close()
			}
		}
	}
}

// ExecContext runs a prepared statement in the transaction.
func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

// QueryRowContext runs a prepared single-row query in the transaction.
func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}
