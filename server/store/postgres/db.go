// Package postgres is the scale-mode backend of the relational store
// interfaces (Accounts, Conversations, Ledger, Usage, Attachments, Audit, and
// Messages for a PostgreSQL-only deployment) over pgx/v5 and pgxpool.
//
// Every operation that must be atomic is one statement: Reserve and Settle are
// single conditional UPDATE … RETURNING statements (with data-modifying CTEs
// for the second table), evaluated by PostgreSQL on the row it locks, so
// several gateways sharing the database can never overshoot a balance. The
// schema is a set of embedded migrations applied by Migrate (`parley
// migrate`, and at `parley serve` start), serialised across processes by an
// advisory lock.
//
// The stores work through PgBouncer in transaction mode (Options.PgBouncer)
// and send listings that tolerate lag to read replicas (Options.ReadURLs,
// see replicas.go).
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/vectorscan"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the advisory lock key that serialises Migrate across
// processes ("parley" in ASCII).
const migrationLock = 0x7061726c6579

// DB is an open PostgreSQL store. It is safe for concurrent use.
type DB struct {
	pool     *pgxpool.Pool
	replicas *replicaSet      // nil without Options.ReadURLs
	vec      vectorscan.Cache // the vectors of searched stores (Vectors)
	billing  *shardSet        // the ledger's databases when apart (WithBilling, WithBillingShards), else nil
	data     *dataSet         // the users' data's clusters when spread (WithDataShards), else nil
	// sharded says db is one of several data clusters: its sweeps keep to
	// the shards it holds (owned).
	sharded bool
	// q, when set, is what the users' data's statements run on instead of
	// pool: a data shard's fencedConn (onShard).
	q querier
}

// owned is the condition that keeps a sweep over every user of a data
// cluster to the logical shards the cluster holds (col: the user column),
// empty with one cluster. With lock, the cluster's data_shards rows are
// held FOR SHARE to the statement's end, so a move's fence waits for the
// sweep and its copy sees what the sweep claimed (not on a replica).
func (db *DB) owned(col string, lock bool) string {
	if !db.sharded {
		return ""
	}
	held := ""
	if lock {
		held = " FOR SHARE"
	}
	return ` AND data_shard(` + col + `) IN (SELECT shard FROM data_shards` + held + `)`
}

// conn is what the users' data's statements run on: the pool, or a data
// shard's fencedConn.
func (db *DB) conn() querier {
	if db.q != nil {
		return db.q
	}
	return db.pool
}

var _ store.Pinger = (*DB)(nil)

// Options tune Open.
type Options struct {
	// Schema, if set, is created if missing and used as the search_path of
	// every connection (tests use one schema each).
	Schema string
	// MaxConns caps the pool; zero keeps pgxpool's default (max(4, CPUs)) or
	// the URL's pool_max_conns.
	MaxConns int32
	// PgBouncer says the URLs name a pooler in transaction mode (PgBouncer
	// before 1.21, or any pooler that may hand each transaction another
	// server connection): no named prepared statements, which live on one
	// server connection. Statements then run in pgx's cache_describe mode:
	// each is parsed unnamed in the round trip that runs it, after one
	// describe per connection and statement. A default_query_exec_mode in
	// the URL wins. (Migrate's lock is a transaction's, so it is safe either
	// way.) PgBouncer 1.21 and later with max_prepared_statements set keep
	// prepared statements across server connections: leave this off there.
	PgBouncer bool
	// ReadURLs are read replicas (hot standbys): listings read with a
	// context marked store.AllowStale go to them round-robin.
	ReadURLs []string
	// MaxReplicaLag is how far behind the primary a replica may be and
	// still serve (DefaultMaxReplicaLag when zero); ReplicaCheckEvery is how
	// often each is checked (DefaultReplicaCheckEvery when zero).
	MaxReplicaLag, ReplicaCheckEvery time.Duration
	// ReplicaMetricsOf, when it has read replicas, is the store whose
	// replica metric families this one's count in too (several data
	// clusters with replicas, one registry: Collectors of the first only).
	ReplicaMetricsOf *DB
}

// poolConfig parses url with the options that apply to every pool (the
// primary's and the replicas').
func poolConfig(url string, opts Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.PgBouncer && !strings.Contains(url, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	if opts.Schema != "" {
		if !validIdent(opts.Schema) {
			return nil, fmt.Errorf("invalid schema name %q", opts.Schema)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	return cfg, nil
}

// Open connects to the database at url (postgres://…), checks that it answers
// and returns the store. It does not migrate: call Migrate.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := poolConfig(url, opts)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if opts.Schema != "" {
		// Create the schema on a plain connection first.
		conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
		if err != nil {
			return nil, fmt.Errorf("postgres: connect: %w", err)
		}
		_, err = conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+opts.Schema)
		conn.Close(ctx)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P06") {
			err = nil // made by another process at the same instant
		}
		if err != nil {
			return nil, fmt.Errorf("postgres: create schema: %w", err)
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db := &DB{pool: pool}
	if err := db.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if len(opts.ReadURLs) > 0 {
		db.replicas = newReplicaSet(pool, opts.MaxReplicaLag, opts.ReplicaCheckEvery)
		if m := opts.ReplicaMetricsOf; m != nil && m.replicas != nil {
			r, f := db.replicas, m.replicas
			r.reads, r.skipped, r.upGauge, r.lagGauge = f.reads, f.skipped, f.upGauge, f.lagGauge
		}
		for _, u := range opts.ReadURLs {
			r, err := openReplica(u, opts)
			if err != nil {
				db.Close()
				return nil, err
			}
			db.replicas.list = append(db.replicas.list, r)
		}
		db.replicas.start(ctx)
	}
	return db, nil
}

// Collectors are the store's metric families (the read replicas'), for the
// process's registry; none without replicas.
func (db *DB) Collectors() []prometheus.Collector {
	if db.replicas == nil {
		return nil
	}
	return db.replicas.collectors()
}

func validIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// DropSchema drops a schema made with Options.Schema and everything in it
// (tests).
func (db *DB) DropSchema(ctx context.Context, schema string) error {
	if !validIdent(schema) {
		return fmt.Errorf("postgres: invalid schema name %q", schema)
	}
	_, err := db.pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
	return err
}

// Close closes the pools.
func (db *DB) Close() error {
	if db.replicas != nil {
		db.replicas.close()
	}
	db.pool.Close()
	return nil
}

// Ping checks that the database answers, for /readyz.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.pool.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}

// Store returns the store interfaces backed by db. Limiter-free: rate limits
// live in Redis. The Ledger stores each settle's usage record in this
// database's Usage, in the settle's statement.
func (db *DB) Store() store.Store {
	set := db.billingSet()
	var (
		lg store.Ledger = ledger{db: set.dbs[0]}
		us store.Usage  = usage{set.dbs[0]}
	)
	if len(set.dbs) > 1 {
		lg, us = shardedLedger{set: set}, shardedUsage{set: set}
	}
	s := store.Store{
		Accounts:      accounts{db},
		Conversations: conversations{db},
		Messages:      messages{db},
		Ledger:        lg,
		Usage:         us,
		Attachments:   attachments{db},
		Audit:         audit{db},
		Search:        search{db},
		Shares:        shares{db},
		VectorStores:  vectorStores{db},
		Projects:      projects{db},
		Memories:      memories{db},
		Batches:       batches{db},
		Webhooks:      webhooks{db},
		Organizations: organizations{db: db, billing: set},
		Feedback:      feedback{db},
		Prompts:       prompts{db},
	}
	if d := db.data; d != nil && len(d.dbs) > 1 {
		s.Conversations, s.Messages, s.Attachments, s.Audit = shardedConversations{d}, shardedMessages{d}, shardedAttachments{d}, shardedAudit{d}
		s.Search, s.Shares, s.Projects, s.Memories = shardedSearch{d}, shardedShares{d}, shardedProjects{d}, shardedMemories{d}
		s.Feedback, s.Prompts, s.VectorStores = shardedFeedback{d}, shardedPrompts{d}, shardedVectorStores{d}
	}
	return s
}

// StoreWithOutbox returns the store interfaces backed by db for a
// deployment whose Usage store is elsewhere (ClickHouse): the Ledger stores
// each settle's usage record in Outbox, in the settle's statement, for a
// relay to copy to that store. Usage is nil: the caller sets it.
func (db *DB) StoreWithOutbox() store.Store {
	s := db.Store()
	set := db.billingSet()
	s.Ledger, s.Outbox = ledger{db: set.dbs[0], outbox: true}, outbox{set.dbs[0]}
	if len(set.dbs) > 1 {
		s.Ledger, s.Outbox = shardedLedger{set: set, outbox: true}, shardedOutbox{set: set, next: new(atomic.Uint32)}
	}
	s.Usage = nil
	return s
}

// WithBilling puts the ledger apart, on billing (another cluster: the billing
// cluster of docs/scaling.md): Store's Ledger, Outbox, Usage (the usage records a settle
// writes) and the organisations' budgets use it, the rest db. A charge is
// then one round trip to billing for the hold and one for the settle, as
// before, and the ledger's tables there keep no key into users or
// organizations, which stay in db. db and billing are migrated alike.
func (db *DB) WithBilling(billing *DB) { db.WithBillingShards([]*DB{billing}) }

// billingSet is where the ledger lives: the billing clusters, or db alone.
func (db *DB) billingSet() *shardSet {
	if db.billing != nil {
		return db.billing
	}
	return newShardSet("ledger", LedgerShards, LedgerShard, []*DB{db}, nil)
}

// locked runs f in a transaction that first takes the transaction-scoped
// advisory lock migrationLock, so what f creates is created by one process
// at a time however many start at once: the next sees it made. A
// transaction's lock (not a session's) is safe through PgBouncer in
// transaction mode too, where a session lock would stay behind on a pooled
// server connection.
func (db *DB) locked(ctx context.Context, f func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return f(tx)
	})
}

// Migrate applies the embedded migrations not yet recorded in
// schema_migrations, in file-name order, each in its own transaction under
// the migration lock (locked), then makes the audit log's partitions
// (EnsurePartitions, under the same lock): any number of gateways may start
// at once on a fresh or an old database.
func (db *DB) Migrate(ctx context.Context) error {
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
			return fmt.Errorf("postgres: migration %s: name must start with a number and '_'", base)
		}
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			return err
		}
		err = db.locked(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    INTEGER PRIMARY KEY,
				name       TEXT    NOT NULL,
				applied_at BIGINT  NOT NULL
			)`); err != nil {
				return fmt.Errorf("create schema_migrations: %w", err)
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			// Simple protocol: a migration holds several statements.
			if _, err := tx.Exec(ctx, string(body), pgx.QueryExecModeSimpleProtocol); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				version, base, time.Now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", base, err)
		}
	}
	return db.EnsurePartitions(ctx, time.Now())
}

// EnsurePartitions makes the audit log's partitions of now's month and the
// next two (UTC), if missing. Migrate calls it; a deployment that runs for
// months without restarting a gateway or running `parley migrate` keeps
// working (rows go to the default partition) but should run it monthly.
// It holds the migration lock (locked): two processes creating the same
// partition at once would otherwise fail, one with "already exists" or a
// deadlock between their CREATE TABLE … PARTITION OF statements.
func (db *DB) EnsurePartitions(ctx context.Context, now time.Time) error {
	m := time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	return db.locked(ctx, func(tx pgx.Tx) error {
		for i := range 3 {
			if _, err := tx.Exec(ctx, `SELECT parley_audit_partition($1)`, m.AddDate(0, i, 0)); err != nil {
				return fmt.Errorf("postgres: audit partition %s: %w", m.AddDate(0, i, 0).Format("2006-01"), err)
			}
		}
		return nil
	})
}

// mapErr translates constraint violations into store errors.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %v", store.ErrConflict, err)
		case "23503": // foreign_key_violation
			return fmt.Errorf("%w: referenced record does not exist: %v", store.ErrNotFound, err)
		case "22003": // numeric_value_out_of_range
			return fmt.Errorf("%w: %v", store.ErrInvalidArgument, err)
		}
	}
	if unreachable(err) {
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return err
}

// unreachable tells a database that did not answer (refused or lost
// connections, a server shutting down or starting, a standby not yet
// promoted) from one that answered with an error.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "25006": // admin or crash shutdown, cannot connect now, read-only (a standby)
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection exception
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err)
}

// notFound turns pgx.ErrNoRows into store.ErrNotFound.
func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", store.ErrNotFound, what)
	}
	return mapErr(err)
}

func affectedOne(tag pgconn.CommandTag, what string) error {
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", store.ErrNotFound, what)
	}
	return nil
}

// exec runs one statement and maps its error.
// lockUser takes a transaction-scoped advisory lock on the user's ID ($1):
// a user's count or sum checked and written in one transaction (storage
// quota, projects, memories, prompts) is serialised across every gateway,
// on whichever cluster holds the user's rows (a data cluster has no users
// row to lock). The first key keeps these locks apart from the one-key
// advisory locks the ledger's outbox takes.
const lockUser = `SELECT pg_advisory_xact_lock(1970, hashtext($1::text))`

func (db *DB) exec(ctx context.Context, q string, args ...any) (pgconn.CommandTag, error) {
	tag, err := db.conn().Exec(ctx, q, args...)
	return tag, mapErr(err)
}

func ts(t time.Time) int64 { return t.UnixNano() }

func nullTS(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func fromTS(n int64) time.Time { return time.Unix(0, n).UTC() }

func fromNullTS(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return fromTS(*n)
}
