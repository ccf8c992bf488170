package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/parleyhq/parley/server/store"
)

// LedgerShards is the number of logical shards of the ledger: a user's
// balance, holds, adjustments, usage records and (for an organisation's
// billing account) budgets live on logical shard LedgerShard(user), and the
// logical shards are spread over the billing clusters (WithBillingShards).
// Fixed, as docs/scaling.md's billing cluster has it (hash(user_id) % 32), so
// that adding a cluster moves whole logical shards and never rehashes a user.
const LedgerShards = 32

// LedgerShard returns the logical ledger shard of a user: FNV-1a of the ID
// modulo LedgerShards.
func LedgerShard(userID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(userID))
	return int(h.Sum32() % LedgerShards)
}

// billingSet is where the ledger lives: one database, or several with the
// logical shards spread over them.
type billingSet struct {
	dbs []*DB
	// accounts holds ledger_shard_map, the shards moved from their place
	// in the contiguous spread; nil with one database.
	accounts *DB

	mu     sync.RWMutex
	of     [LedgerShards]int // logical shard → index in dbs
	loaded time.Time         // when of was read from ledger_shard_map
}

// mapEvery is how often a gateway reads the shard map again on its own; a
// write fenced by a move reads it at once.
const mapEvery = 5 * time.Second

// WithBillingShards spreads the ledger over several billing clusters: the
// logical shards in contiguous ranges, as evenly as they go (two clusters:
// 0–15 and 16–31). Everything WithBilling says holds for each. A
// user's ledger rows all live on one cluster, so a hold, a settle and an
// organisation's budgets are each one cluster's transaction, as with one.
func (db *DB) WithBillingShards(dbs []*DB) {
	set := &billingSet{dbs: dbs}
	for s := range LedgerShards {
		set.of[s] = spread(s, len(dbs))
	}
	if len(dbs) > 1 {
		set.accounts = db
	}
	db.billing = set
}

// LoadLedgerMap checks the billing clusters and reads where each ledger
// shard lives (ledger_shard_map); call it once at start with several. The
// first start writes the contiguous spread into the map, and each
// cluster's place in --billing-postgres-url into the cluster itself
// (ledger_cluster): from then on the map alone places shards (a cluster
// added at the end of the list gets shards only by MoveLedgerShard), and a
// list whose order changed is refused rather than looking for users'
// money in the wrong place. The map is read again every few seconds, and
// at once when a write finds its shard gone.
func (db *DB) LoadLedgerMap(ctx context.Context) error {
	set := db.billingSet()
	if set.accounts == nil {
		return nil
	}
	if err := checkPlaces(ctx, set.dbs, "ledger_cluster", "--billing-postgres-url"); err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO ledger_shard_map (shard, cluster)
		SELECT s, s * $1 / $2 FROM generate_series(0, $2 - 1) s ON CONFLICT DO NOTHING`, len(set.dbs), LedgerShards); err != nil {
		return fmt.Errorf("postgres: the ledger's shard map: %w", err)
	}
	return set.reload(ctx)
}

// spread is a logical shard's cluster before any move: contiguous ranges.
func spread(shard, clusters int) int { return placeOf(shard, LedgerShards, clusters) }

// db is the database holding the user's ledger rows, by the map as last
// read (read again when it is older than mapEvery).
func (b *billingSet) db(userID string) *DB { return b.dbs[b.cluster(LedgerShard(userID))] }

// cluster is the index in dbs of the shard's database.
func (b *billingSet) cluster(shard int) int {
	b.mu.RLock()
	c, stale := b.of[shard], b.accounts != nil && time.Since(b.loaded) > mapEvery
	b.mu.RUnlock()
	if stale && b.mu.TryLock() {
		// One reader refreshes in the background; the others go on with
		// the map they have (a write it misleads is fenced and retried).
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

// reload reads ledger_shard_map.
func (b *billingSet) reload(ctx context.Context) error {
	if b.accounts == nil {
		return nil
	}
	rows, err := b.accounts.pool.Query(ctx, `SELECT shard, cluster FROM ledger_shard_map`)
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
	var of [LedgerShards]int
	for s := range LedgerShards {
		of[s] = spread(s, len(b.dbs))
	}
	for _, m := range moved {
		if m[1] >= len(b.dbs) {
			return fmt.Errorf("postgres: ledger shard %d is on cluster %d, and --billing-postgres-url names %d", m[0], m[1], len(b.dbs))
		}
		of[m[0]] = m[1]
	}
	b.mu.Lock()
	b.of, b.loaded = of, time.Now()
	b.mu.Unlock()
	return nil
}

// errShardMoved is ledger_fence's refusal: the shard is not (or no longer)
// on that database.
func errShardMoved(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "PRLSH"
}

// fencePause is the longest a write waits for its shard's move.
const fencePause = 30 * time.Second

// retry runs f on the database of the shard until f does not fail with
// errShardMoved: the shard left (or is leaving) that database, so the map
// is read again and f runs where the shard is now, waiting (from 10 ms,
// doubling to 500 ms) while the map still names the database the shard is
// leaving: the write pause of a move.
func (b *billingSet) retry(ctx context.Context, shard int, f func(db *DB) error) error {
	wait, start := 10*time.Millisecond, time.Now()
	for {
		err := f(b.dbs[b.cluster(shard)])
		if !errShardMoved(err) {
			return err
		}
		if time.Since(start) > fencePause {
			return fmt.Errorf("postgres: ledger shard %d is moving: %w", shard, err)
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
// the user's shard (ledger_fence), retried where the shard moved.
func (b *billingSet) fenced(ctx context.Context, userID string, f func(db *DB, tx pgx.Tx) error) error {
	shard := LedgerShard(userID)
	return b.retry(ctx, shard, func(db *DB) error {
		return pgx.BeginTxFunc(ctx, db.pool, fencedBegin(shard), func(tx pgx.Tx) error { return f(db, tx) })
	})
}

// fencedBegin begins a transaction and fences the shard in one round trip
// (the simple protocol takes both; the shard is a number of ours). A fence
// that fails fails the begin, and pgx drops that connection.
func fencedBegin(shard int) pgx.TxOptions {
	return pgx.TxOptions{BeginQuery: fmt.Sprintf("BEGIN; SELECT ledger_fence(%d)", shard)}
}

// fencedConn is a ledgerConn whose every statement is fenced: a statement
// goes as a batch behind ledger_fence(shard), in one round trip and one
// implicit transaction (a fence that fails runs nothing, and the fence's
// lock lasts the statement), and a transaction fences in its BEGIN. So a
// sharded hold or settle stays one round trip, as with one cluster.
type fencedConn struct {
	pool  *pgxpool.Pool
	shard int
}

func (c fencedConn) batch(ctx context.Context, sql string, args []any) pgx.BatchResults {
	b := &pgx.Batch{}
	b.Queue(`SELECT ledger_fence($1)`, c.shard)
	b.Queue(sql, args...)
	return c.pool.SendBatch(ctx, b)
}

func (c fencedConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br := c.batch(ctx, sql, args)
	if _, err := br.Exec(); err != nil {
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
	return fencedRow{c.batch(ctx, sql, args)}
}

func (c fencedConn) Begin(ctx context.Context) (pgx.Tx, error) {
	return c.pool.BeginTx(ctx, fencedBegin(c.shard))
}

// fencedRow is the row of a fencedConn's QueryRow: the fence's error, or the
// statement's row.
type fencedRow struct{ br pgx.BatchResults }

func (r fencedRow) Scan(dest ...any) error {
	if _, err := r.br.Exec(); err != nil {
		_ = r.br.Close()
		return err
	}
	err := r.br.QueryRow().Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// shardedLedger is store.Ledger over the billing clusters, each call on the
// cluster of its user.
type shardedLedger struct {
	set    *billingSet
	outbox bool
}

// on runs f with the ledger of the user's shard, every statement fenced
// (fencedConn), where the shard is now.
func on[T any](ctx context.Context, l shardedLedger, userID string, f func(ledger) (T, error)) (T, error) {
	var out T
	shard := LedgerShard(userID)
	err := l.set.retry(ctx, shard, func(db *DB) error {
		var err error
		out, err = f(ledger{db: db, outbox: l.outbox, q: fencedConn{pool: db.pool, shard: shard}})
		return err
	})
	return out, err
}

func (l shardedLedger) Account(ctx context.Context, userID string) (store.Balance, error) {
	return on(ctx, l, userID, func(lg ledger) (store.Balance, error) { return lg.Account(ctx, userID) })
}

func (l shardedLedger) Adjust(ctx context.Context, a store.Adjustment) (int64, error) {
	return on(ctx, l, a.UserID, func(lg ledger) (int64, error) { return lg.Adjust(ctx, a) })
}

func (l shardedLedger) Reserve(ctx context.Context, r store.Reservation) (store.Balance, error) {
	return on(ctx, l, r.UserID, func(lg ledger) (store.Balance, error) { return lg.Reserve(ctx, r) })
}

// Settle goes to the cluster of the record's user, who is the reservation's
// (the caller holds and records for the same account). A release (no
// record) names no user: it runs on every cluster, where the reservation is
// not it changes nothing.
func (l shardedLedger) Settle(ctx context.Context, reservationID string, costNanos int64, now time.Time, record *store.UsageRecord) (store.Settlement, error) {
	if record != nil {
		s, err := on(ctx, l, record.UserID, func(lg ledger) (store.Settlement, error) {
			return lg.Settle(ctx, reservationID, costNanos, now, record)
		})
		if !errors.Is(err, store.ErrNotFound) || reservationID == "" {
			return s, err
		}
		// A record under another user than the hold's: find the hold.
		for _, db := range l.set.dbs {
			if db == l.set.db(record.UserID) {
				continue
			}
			if s, err := (ledger{db: db, outbox: l.outbox}).Settle(ctx, reservationID, costNanos, now, record); !errors.Is(err, store.ErrNotFound) {
				return s, err
			}
		}
		return s, err
	}
	var out store.Settlement
	var errs []error
	for _, db := range l.set.dbs {
		s, err := (ledger{db: db, outbox: l.outbox}).Settle(ctx, reservationID, costNanos, now, nil)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
		}
		if s != (store.Settlement{}) {
			// The cluster that held it: the others' errors (one down) do
			// not matter.
			return s, nil
		}
		out = s
	}
	return out, errors.Join(errs...)
}

// ReleaseExpired sweeps every cluster.
func (l shardedLedger) ReleaseExpired(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	var errs []error
	for _, db := range l.set.dbs {
		n, err := (ledger{db: db, outbox: l.outbox}).ReleaseExpired(ctx, now)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// shardedUsage is store.Usage over the billing clusters' usage_records: a
// user's on their cluster, every user's merged from all of them.
type shardedUsage struct{ set *billingSet }

func (u shardedUsage) Record(ctx context.Context, records []store.UsageRecord) error {
	by := map[*DB][]store.UsageRecord{}
	for _, r := range records {
		db := u.set.db(r.UserID)
		by[db] = append(by[db], r)
	}
	for db, recs := range by {
		if err := (usage{db}).Record(ctx, recs); err != nil {
			return err
		}
	}
	return nil
}

// List reads one cluster for a user. For every user (an admin's page) it
// reads a page from each cluster after the same cursor and keeps the first
// page of their merge: the cursor is a position in the one order all share
// (newest first, then request ID), so pages never skip or repeat a record.
func (u shardedUsage) List(ctx context.Context, userID string, f store.UsageFilter, p store.PageRequest) ([]store.UsageRecord, string, error) {
	if userID != "" {
		return usage{u.set.db(userID)}.List(ctx, userID, f, p)
	}
	limit := p.Limit()
	var all []store.UsageRecord
	more := false
	for i, db := range u.set.dbs {
		recs, next, err := usage{db}.List(ctx, "", f, p)
		if err != nil {
			return nil, "", err
		}
		for _, r := range recs {
			// A shard being moved is on both clusters for a moment: each
			// record is read from where the map puts its user.
			if u.set.cluster(LedgerShard(r.UserID)) == i {
				all = append(all, r)
			}
		}
		more = more || next != ""
	}
	slices.SortFunc(all, func(a, b store.UsageRecord) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.RequestID, a.RequestID))
	})
	if len(all) <= limit && !more {
		return all, "", nil
	}
	all = all[:min(limit, len(all))]
	last := all[len(all)-1]
	return all, store.EncodeCursor(ts(last.CreatedAt), last.RequestID), nil
}

func (u shardedUsage) Summarize(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]store.UsageDay, error) {
	return usage{u.set.db(userID)}.Summarize(ctx, userID, from, to, offset)
}

func (u shardedUsage) SummarizeKeys(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]store.UsageDay, error) {
	return usage{u.set.db(userID)}.SummarizeKeys(ctx, userID, from, to, offset)
}

// shardedOutbox ships every cluster's outbox, a different cluster first at
// each call so that none waits behind another's backlog.
type shardedOutbox struct {
	set  *billingSet
	next *atomic.Uint32
}

// Ship ships a batch from each cluster that has one; a cluster that fails
// does not hold the others back: its error is returned only when nothing
// shipped (the relay then backs off), else the relay calls again at once.
func (o shardedOutbox) Ship(ctx context.Context, max int, ship func(context.Context, []store.UsageRecord) error) (int, error) {
	start := int(o.next.Add(1))
	total := 0
	var errs []error
	for i := range o.set.dbs {
		n, err := (outbox{o.set.dbs[(start+i)%len(o.set.dbs)]}).Ship(ctx, max, ship)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	if total > 0 {
		return total, nil
	}
	return 0, errors.Join(errs...)
}

// Backlog adds up the clusters that answer; it fails only when none does.
func (o shardedOutbox) Backlog(ctx context.Context) (int64, time.Time, error) {
	var total int64
	var oldest time.Time
	var errs []error
	for _, db := range o.set.dbs {
		n, at, err := (outbox{db}).Backlog(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		total += n
		if !at.IsZero() && (oldest.IsZero() || at.Before(oldest)) {
			oldest = at
		}
	}
	if len(errs) == len(o.set.dbs) {
		return 0, time.Time{}, errors.Join(errs...)
	}
	return total, oldest, nil
}
