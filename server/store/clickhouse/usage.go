// Package clickhouse is the scale-mode store.Usage: usage records in a
// ClickHouse MergeTree table ordered by (user_id, created_at), partitioned by
// month, written in batches over the native protocol by server/usage's
// Relay, which copies them from the ledger's outbox (each record committed
// there with its charge) and deletes them only once Record returned.
//
// The relay ships at least once, so Record must store a retried record
// once. 18.16 has no async inserts and no insert deduplication outside
// Replicated tables (which need ZooKeeper), and a check for existing
// request IDs before each insert would read the whole table (request_id is
// not a key prefix) or race with a concurrent insert. So the table is a
// ReplacingMergeTree whose sorting key holds the request ID: a record
// shipped twice is the same row (same user, created_at and request ID, as
// the outbox keeps them), folded by merges, and every read uses FINAL, so
// no reader ever counts it twice. In cluster mode (cluster.go) the tables are
// Replicated, with the deduplication and pre-aggregation that allows.
//
// The driver is pinned at clickhouse-go/v2 v2.25.0 on purpose (go.mod): the
// ClickHouse that Debian ships (18.16) is what our machines and CI run, and
// from v2.27 on the driver sends batches as `INSERT … FORMAT Native`, which
// 18.16 refuses; its HTTP mode also fails at ping there. Only types 18.16
// knows are used (String, Int64, UInt8): no DateTime64, Bool, Map,
// LowCardinality or async_insert.
package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/parleyhq/parley/server/store"
)

// schema creates the table. ReplacingMergeTree on a key that includes the
// request ID folds a retried batch's rows together (on merge, and at read
// time through FINAL), so a batch can be retried whole.
const schema = `CREATE TABLE IF NOT EXISTS usage_records (` + recordColumns + `) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(toDateTime(intDiv(created_at, 1000000000)))
ORDER BY (user_id, created_at, request_id)`

// recordColumns are the usage records' columns, for the single server's
// table and the cluster's.
const recordColumns = `
	user_id           String,
	created_at        Int64,
	request_id        String,
	api_key_id        String,
	channel           String,
	model             String,
	prompt_tokens     Int64,
	completion_tokens Int64,
	cached_tokens     Int64,
	estimated         UInt8,
	cost_nanos        Int64,
	finish_reason     String,
	end_user          String DEFAULT '',
	cache_hit         UInt8 DEFAULT 0,
	requested_model   String DEFAULT ''
`

// addColumns bring a table made by an older schema up to date, in order:
// each column is added (last, as schema has it) unless the table has it.
// 18.16 has no ADD COLUMN IF NOT EXISTS, so Migrate looks in system.columns.
// A list of one account's records of one end user reads that account's range
// of the primary key and filters it: no skipping index, which 18.16 only has
// as an experimental setting.
var addColumns = []struct{ name, ddl string }{
	{"end_user", `ALTER TABLE usage_records ADD COLUMN end_user String DEFAULT ''`},
	{"cache_hit", `ALTER TABLE usage_records ADD COLUMN cache_hit UInt8 DEFAULT 0`},
	{"requested_model", `ALTER TABLE usage_records ADD COLUMN requested_model String DEFAULT ''`},
}

// columns are the table's columns in the order Record appends them.
const columns = `user_id, created_at, request_id, api_key_id, channel, model, prompt_tokens, completion_tokens,
	cached_tokens, estimated, cost_nanos, finish_reason, end_user, cache_hit, requested_model`

// DB is an open ClickHouse usage store.
type DB struct {
	conn driver.Conn
	// cluster is the ClickHouse cluster's name in cluster mode (cluster.go),
	// "" for one server; database is the URL's database.
	cluster, database string
}

var (
	_ store.Usage  = (*DB)(nil)
	_ store.Pinger = (*DB)(nil)
)

// Open connects to url (clickhouse://host:9000/database?username=…&password=…),
// checks that the server answers and creates the table if needed.
func Open(ctx context.Context, url string) (*DB, error) { return open(ctx, url, "") }

// OpenCluster is Open for a ClickHouse cluster (cluster.go): cluster names
// it as the servers' remote_servers do, and url names one or more of its
// nodes (clickhouse://host1:9000,host2:9000/database: the driver uses the
// next when one is down). Records go through Distributed tables to the
// shard of their user, and the usage pages read pre-aggregated quarters.
func OpenCluster(ctx context.Context, url, cluster string) (*DB, error) {
	if !validName(cluster) {
		return nil, fmt.Errorf("clickhouse: invalid cluster name %q", cluster)
	}
	return open(ctx, url, cluster)
}

func open(ctx context.Context, url, cluster string) (*DB, error) {
	opts, err := ch.ParseDSN(url)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: %w", err)
	}
	if opts.Auth.Database == "" {
		opts.Auth.Database = "default"
	}
	if cluster != "" && !validName(opts.Auth.Database) {
		return nil, fmt.Errorf("clickhouse: invalid database name %q", opts.Auth.Database)
	}
	conn, err := ch.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: %w", err)
	}
	db := &DB{conn: conn, cluster: cluster, database: opts.Auth.Database}
	if err := db.Ping(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	if cluster != "" {
		if err := db.checkLoadBalancing(ctx); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if err := db.Migrate(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return db, nil
}

// Migrate creates the table if it does not exist and adds the columns an
// older table lacks. Gateways starting at once run it at once: each step is
// idempotent, a column another process added first is found there, and the
// whole is tried again (store.CreateSchema) on what a server may answer one
// of two concurrent schema changes (a table being created or altered by
// the other, a lock not granted in time).
func (db *DB) Migrate(ctx context.Context) error {
	return store.CreateSchema(ctx, retryable, func() error { return db.migrate(ctx) })
}

// retryable says whether Migrate's error may pass on a second try: not one
// of a refused user or password, nor a database that does not exist.
func retryable(err error) bool {
	var ex *ch.Exception
	if errors.As(err, &ex) {
		switch ex.Code {
		case 81, 192, 193, 194, 516: // UNKNOWN_DATABASE, UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD, AUTHENTICATION_FAILED
			return false
		}
	}
	return true
}

func (db *DB) migrate(ctx context.Context) error {
	if db.cluster != "" {
		// The cluster's tables were made with every column.
		return db.migrateCluster(ctx)
	}
	if err := db.conn.Exec(ctx, schema); err != nil {
		return fmt.Errorf("clickhouse: create usage_records: %w", err)
	}
	for _, c := range addColumns {
		has, err := db.hasColumn(ctx, c.name)
		if err != nil {
			return err
		}
		if has {
			continue
		}
		if err := db.conn.Exec(ctx, c.ddl); err != nil {
			// Another process starting at the same time may have added it.
			if has, herr := db.hasColumn(ctx, c.name); herr != nil || !has {
				return fmt.Errorf("clickhouse: add usage_records.%s: %w", c.name, err)
			}
		}
	}
	return nil
}

// hasColumn reports whether usage_records, in the connection's database,
// has the column.
func (db *DB) hasColumn(ctx context.Context, name string) (bool, error) {
	var n uint64
	err := db.conn.QueryRow(ctx, `SELECT count() FROM system.columns
		WHERE database = currentDatabase() AND table = 'usage_records' AND name = ?`, name).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("clickhouse: usage_records columns: %w", err)
	}
	return n > 0, nil
}

// Ping checks that the server answers, for /readyz.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.conn.Ping(ctx); err != nil {
		return fmt.Errorf("clickhouse: ping: %w", err)
	}
	return nil
}

// Close closes the connections.
func (db *DB) Close() error { return db.conn.Close() }

// Exec runs one statement (tests create and drop databases with it).
func (db *DB) Exec(ctx context.Context, q string) error { return db.conn.Exec(ctx, q) }

// Record implements store.Usage: one INSERT of the batch.
func (db *DB) Record(ctx context.Context, records []store.UsageRecord) error {
	if len(records) == 0 {
		return nil
	}
	// Repeats within the batch are dropped here; a row stored by an earlier
	// (retried) batch is folded by ReplacingMergeTree, and List reads with
	// FINAL, so no reader ever sees it twice. No lookup on the write path.
	have := make(map[string]bool, len(records))
	if db.cluster != "" {
		// The pre-aggregated quarters cannot fold a record stored twice, so
		// the records already held are left out (a key range lookup: the
		// users' rows in the batch's time span). A retried batch whose first
		// insert landed is dropped whole by the Replicated tables' block
		// deduplication; this covers a record sent again in another batch.
		held, err := db.held(ctx, records)
		if err != nil {
			return err
		}
		have = held
	}

	if db.cluster != "" {
		// Return only once every shard's replica holds its rows (the
		// Distributed table's default is to queue them on this node).
		ctx = ch.Context(ctx, ch.WithSettings(ch.Settings{"insert_distributed_sync": 1}))
	}
	batch, err := db.conn.PrepareBatch(ctx, `INSERT INTO usage_records (`+columns+`)`)
	if err != nil {
		return fmt.Errorf("clickhouse: usage insert: %w", err)
	}
	n := 0
	for _, r := range records {
		if have[r.RequestID] {
			continue
		}
		have[r.RequestID] = true
		var est uint8
		if r.Estimated {
			est = 1
		}
		if err := batch.Append(r.UserID, r.CreatedAt.UnixNano(), r.RequestID, r.APIKeyID, r.Channel, r.Model,
			r.PromptTokens, r.CompletionTokens, r.CachedTokens, est, r.CostNanos, r.FinishReason, r.EndUser, boolUInt8(r.CacheHit), r.RequestedModel); err != nil {
			_ = batch.Abort()
			return fmt.Errorf("clickhouse: usage append: %w", err)
		}
		n++
	}
	if n == 0 {
		return batch.Abort()
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("clickhouse: usage send: %w", err)
	}
	return nil
}

// List implements store.Usage: a user's records, newest first. Every user's
// (userID empty) reads the table out of its (user_id, …) order, so it scans the
// newest months' parts; for an admin's page that is acceptable.
func (db *DB) List(ctx context.Context, userID string, f store.UsageFilter, p store.PageRequest) ([]store.UsageRecord, string, error) {
	limit := p.Limit()
	var q strings.Builder
	q.WriteString(`SELECT request_id, user_id, api_key_id, channel, model, prompt_tokens, completion_tokens, cached_tokens,
		estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model FROM usage_records FINAL WHERE 1 = 1`)
	var args []any
	if userID != "" {
		q.WriteString(` AND user_id = ?`)
		args = append(args, userID)
	}
	if f.EndUser != "" {
		q.WriteString(` AND end_user = ?`)
		args = append(args, f.EndUser)
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q.WriteString(` AND (created_at < ? OR (created_at = ? AND request_id < ?))`)
		args = append(args, at, at, id)
	}
	fmt.Fprintf(&q, ` ORDER BY created_at DESC, request_id DESC LIMIT %d`, limit+1)
	rows, err := db.conn.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, "", fmt.Errorf("clickhouse: usage list: %w", err)
	}
	defer rows.Close()
	var out []store.UsageRecord
	for rows.Next() {
		var r store.UsageRecord
		var created int64
		var est, hit uint8
		if err := rows.Scan(&r.RequestID, &r.UserID, &r.APIKeyID, &r.Channel, &r.Model, &r.PromptTokens, &r.CompletionTokens,
			&r.CachedTokens, &est, &r.CostNanos, &r.FinishReason, &created, &r.EndUser, &hit, &r.RequestedModel); err != nil {
			return nil, "", err
		}
		r.Estimated, r.CacheHit = est != 0, hit != 0
		r.CreatedAt = fromTS(created)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.UsageRecord) (int64, string) { return v.CreatedAt.UnixNano(), v.RequestID })
	return out, next, nil
}

// held returns which of the records' request IDs usage_records holds.
func (db *DB) held(ctx context.Context, records []store.UsageRecord) (map[string]bool, error) {
	users, ids := make([]any, 0, len(records)), make([]any, 0, len(records))
	from, to := records[0].CreatedAt.UnixNano(), records[0].CreatedAt.UnixNano()
	for _, r := range records {
		users, ids = append(users, r.UserID), append(ids, r.RequestID)
		from, to = min(from, r.CreatedAt.UnixNano()), max(to, r.CreatedAt.UnixNano())
	}
	rows, err := db.conn.Query(ctx, `SELECT request_id FROM usage_records
		WHERE user_id IN ? AND created_at >= ? AND created_at <= ? AND request_id IN ?`,
		ch.GroupSet{Value: users}, from, to, ch.GroupSet{Value: ids})
	if err != nil {
		return nil, fmt.Errorf("clickhouse: usage records held: %w", err)
	}
	defer rows.Close()
	have := make(map[string]bool, len(records))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("clickhouse: usage records held: %w", err)
		}
		have[id] = true
	}
	return have, rows.Err()
}

func boolUInt8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
