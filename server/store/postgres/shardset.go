package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// shardSet places a fixed number of logical shards on one or more
// clusters: in contiguous ranges at the first start, then wherever a move
// puts them. The ledger (kind "ledger", LedgerShards) and the users' data
// (kind "data", DataShards) each have one; kind names the tables and the
// fence function of each (<kind>_shard_map in the accounts database,
// <kind>_shards, <kind>_cluster and <kind>_fence() in every cluster).
type shardSet struct {
	kind    string
	shards  int
	shardOf func(userID string) int
	dbs     []*DB
	// accounts holds the shard map, the shards moved from their place in
	// the contiguous spread; nil with one database.
	accounts *DB

	mu     sync.RWMutex
	of     []int     // logical shard → index in dbs
	loaded time.Time // when of was read from the map
}

// mapEvery is how often a gateway reads a shard map again on its own; a
// statement fenced by a move reads it at once.
const mapEvery = 5 * time.Second

// newShardSet spreads shards over dbs in contiguous ranges (two clusters
// and 32 shards: 0–15 and 16–31); accounts holds the map when there are
// several.
func newShardSet(kind string, shards int, shardOf func(string) int, dbs []*DB, accounts *DB) *shardSet {
	set := &shardSet{kind: kind, shards: shards, shardOf: shardOf, dbs: dbs, of: make([]int, shards)}
	for s := range shards {
		set.of[s] = placeOf(s, shards, len(dbs))
	}
	if len(dbs) > 1 {
		set.accounts = accounts
	}
	return set
}

// placeOf is a logical shard's cluster before any move: contiguous ranges.
func placeOf(shard, shards, clusters int) int { return shard * clusters / shards }

// load checks the clusters and reads where each shard lives; call it once
// at start. The first start writes the contiguous spread into the map,
// and each cluster's place in the list flag into the cluster itself
// (<kind>_cluster): from then on the map alone places shards (a cluster
// added at the end of the list gets shards only by a move), and a list
// whose order changed is refused rather than looking for users' rows in
// the wrong place. The map is read again every few seconds, and at once
// when a fenced statement finds its shard gone.
func (b *shardSet) load(ctx context.Context, flag string) error {
	if b.accounts == nil {
		return nil
	}
	if err := checkPlaces(ctx, b.dbs, b.kind+"_cluster", flag); err != nil {
		return err
	}
	tag, err := b.accounts.pool.Exec(ctx, `INSERT INTO `+b.kind+`_shard_map (shard, cluster)
		SELECT s, s * $1 / $2 FROM generate_series(0, $2 - 1) s ON CONFLICT DO NOTHING`, len(b.dbs), b.shards)
	if err != nil {
		return fmt.Errorf("postgres: the %s shard map: %w", b.kind, err)
	}
	if tag.RowsAffected() > 0 {
		// The first start: each cluster gives up the shards placed
		// elsewhere, so that a shard's <kind>_shards row appears on a
		// cluster only in the commit that brings its rows (a move's), and
		// a replica that has the row has the rows.
		for i, db := range b.dbs {
			if _, err := db.pool.Exec(ctx, `DELETE FROM `+b.kind+`_shards WHERE shard * $1 / $2 <> $3`, len(b.dbs), b.shards, i); err != nil {
				return fmt.Errorf("postgres: cluster %d's %s shards: %w", i, b.kind, err)
			}
		}
	}
	return b.reload(ctx)
}

// checkPlaces writes each cluster's place in the list flag into table at
// its first start and refuses a list in another order. Gateways starting
// at once may race to write it: the one whose insert waited on another's
// finds nothing in its statement's snapshot and asks again.
func checkPlaces(ctx context.Context, dbs []*DB, table, flag string) error {
	for i, b := range dbs {
		var at int
		err := pgx.ErrNoRows
		for try := 0; try < 3 && errors.Is(err, pgx.ErrNoRows); try++ {
			err = b.pool.QueryRow(ctx, `WITH ins AS (INSERT INTO `+table+` (place) VALUES ($1) ON CONFLICT DO NOTHING RETURNING place)
				SELECT place FROM ins UNION ALL SELECT place FROM `+table+` LIMIT 1`, i).Scan(&at)
		}
		if err != nil {
			return fmt.Errorf("postgres: cluster %d of %s: %w", i, flag, err)
		}
		if at != i {
			return fmt.Errorf("postgres: the cluster at place %d of %s was at place %d: keep the list's order (add clusters at its end)", i, flag, at)
		}
	}
	return nil
}

// db is the database holding the user's rows, by the map as last read.
func (b *shardSet) db(userID string) *DB { return b.dbs[b.cluster(b.shardOf(userID))] }

// cluster is the index in dbs of the shard's database, by the map as last
// read (read again when it is older than mapEvery).
func (b *shardSet) cluster(shard int) int {
	b.mu.RLock()
	c, stale := b.of[shard], b.accounts != nil && time.Since(b.loaded) > mapEvery
	b.mu.RUnlock()
	if stale && b.mu.TryLock() {
		// One reader refreshes in the background; the others go on with
		// the map they have (a statement it misleads is fenced and retried).
		b.loaded = time.Now()
		b.mu.Unlock()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = b.reload(ctx)
		}()
	}
	return c
}

// reload reads the shard map.
func (b *shardSet) reload(ctx context.Context) error {
	if b.accounts == nil {
		return nil
	}
	rows, err := b.accounts.pool.Query(ctx, `SELECT shard, cluster FROM `+b.kind+`_shard_map`)
	if err != nil {
		return err
	}
	moved, err := collectRows(rows, func(r pgx.Rows) ([2]int, error) {
		var m [2]int
		return m, r.Scan(&m[0], &m[1])
	})
	if err != nil {
		return err
	}
	of := make([]int, b.shards)
	for s := range b.shards {
		of[s] = placeOf(s, b.shards, len(b.dbs))
	}
	for _, m := range moved {
		if m[1] >= len(b.dbs) {
			return fmt.Errorf("postgres: %s shard %d is on cluster %d, and the list names %d", b.kind, m[0], m[1], len(b.dbs))
		}
		of[m[0]] = m[1]
	}
	b.mu.Lock()
	b.of, b.loaded = of, time.Now()
	b.mu.Unlock()
	return nil
}

// errShardMoved is a fence's refusal (SQLSTATE PRLSH): the shard is not
// (or no longer) on that database.
func errShardMoved(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "PRLSH"
}

// fencePause is the longest a statement waits for its shard's move.
const fencePause = 30 * time.Second

// retry runs f on the database of the shard until f does not fail with
// errShardMoved: the shard left (or is leaving) that database, so the map
// is read again and f runs where the shard is now, waiting (from 10 ms,
// doubling to 500 ms) while the map still names the database the shard is
// leaving: the write pause of a move.
func (b *shardSet) retry(ctx context.Context, shard int, f func(db *DB) error) error {
	wait, start := 10*time.Millisecond, time.Now()
	for {
		err := f(b.dbs[b.cluster(shard)])
		if !errShardMoved(err) {
			return err
		}
		if time.Since(start) > fencePause {
			return fmt.Errorf("postgres: %s shard %d is moving: %w", b.kind, shard, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
		if err := b.reload(ctx); err != nil {
			return err
		}
	}
}

// fenced runs f in a transaction on the user's database whose BEGIN fences
// the user's shard, retried where the shard moved.
func (b *shardSet) fenced(ctx context.Context, userID string, f func(db *DB, tx pgx.Tx) error) error {
	shard := b.shardOf(userID)
	return b.retry(ctx, shard, func(db *DB) error {
		return pgx.BeginTxFunc(ctx, db.pool, b.conn(db, shard).begin(), func(tx pgx.Tx) error { return f(db, tx) })
	})
}

// conn is db's connection for the shard's statements: each one fenced.
func (b *shardSet) conn(db *DB, shard int) fencedConn {
	return fencedConn{pool: db.pool, kind: b.kind, shard: shard}
}

// fencedConn runs every statement behind its shard's fence (<kind>_fence):
// a statement goes as a batch behind the fence, in one round trip and one
// implicit transaction (a fence that fails runs nothing, and the fence's
// lock lasts the statement), and a transaction fences in its BEGIN. So a
// sharded statement stays one round trip, as with one cluster.
type fencedConn struct {
	pool  *pgxpool.Pool
	kind  string
	shard int
	// read fences without the row lock, on a read replica
	// (<kind>_fence_read): a standby takes no locks.
	read bool
}

// onReplica is c for a read replica's pool.
func (c fencedConn) onReplica(pool *pgxpool.Pool) fencedConn {
	c.pool, c.read = pool, true
	return c
}

func (c fencedConn) batch(ctx context.Context, sql string, args []any) pgx.BatchResults {
	b := &pgx.Batch{}
	if c.read {
		// On a replica the fence takes no lock: the fence and the
		// statement share one snapshot instead, so replay between them
		// (a move's fence, then its deletion of the rows) cannot show the
		// statement an emptied shard that the fence let through.
		b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
		b.Queue(`SELECT `+c.kind+`_fence_read($1)`, c.shard)
		b.Queue(sql, args...)
		b.Queue(`COMMIT`)
		return c.pool.SendBatch(ctx, b)
	}
	b.Queue(`SELECT `+c.kind+`_fence($1)`, c.shard)
	b.Queue(sql, args...)
	return c.pool.SendBatch(ctx, b)
}

// fenced reads the results before the statement's: the fence's (and, on
// a replica, the transaction's BEGIN).
func (c fencedConn) fenced(br pgx.BatchResults) error {
	if c.read {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	_, err := br.Exec()
	return err
}

func (c fencedConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br := c.batch(ctx, sql, args)
	if err := c.fenced(br); err != nil {
		_ = br.Close()
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (c fencedConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return fencedRow{c, c.batch(ctx, sql, args)}
}

func (c fencedConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br := c.batch(ctx, sql, args)
	if err := c.fenced(br); err != nil {
		_ = br.Close()
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return fencedRows{Rows: rows, br: br}, nil
}

func (c fencedConn) Begin(ctx context.Context) (pgx.Tx, error) {
	return c.pool.BeginTx(ctx, c.begin())
}

// begin begins a transaction and fences the shard in one round trip (the
// simple protocol takes both; the shard is a number of ours). A fence that
// fails fails the begin, and pgx drops that connection.
func (c fencedConn) begin() pgx.TxOptions {
	return pgx.TxOptions{BeginQuery: fmt.Sprintf("BEGIN; SELECT %s_fence(%d)", c.kind, c.shard)}
}

// fencedRow is the row of a fencedConn's QueryRow: the fence's error, or the
// statement's row.
type fencedRow struct {
	c  fencedConn
	br pgx.BatchResults
}

func (r fencedRow) Scan(dest ...any) error {
	if err := r.c.fenced(r.br); err != nil {
		_ = r.br.Close()
		return err
	}
	err := r.br.QueryRow().Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// fencedRows are a fencedConn's Query rows: closing them closes the batch.
type fencedRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r fencedRows) Close() {
	r.Rows.Close()
	_ = r.br.Close()
}
