package postgres

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"sync/atomic"
	"time"

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

// WithBillingShards spreads the ledger over several billing clusters: the
// logical shards in contiguous ranges, as evenly as they go (two clusters:
// 0–15 and 16–31). Everything WithBilling says holds for each. A
// user's ledger rows all live on one cluster, so a hold, a settle and an
// organisation's budgets are each one cluster's transaction, as with one.
func (db *DB) WithBillingShards(dbs []*DB) {
	db.billing = newShardSet("ledger", LedgerShards, LedgerShard, dbs, db)
}

// LoadLedgerMap checks the billing clusters and reads where each ledger
// shard lives (ledger_shard_map); call it once at start with several
// (shardSet.load says what it checks).
func (db *DB) LoadLedgerMap(ctx context.Context) error {
	return db.billingSet().load(ctx, "--billing-postgres-url")
}

// shardedLedger is store.Ledger over the billing clusters, each call on the
// cluster of its user.
type shardedLedger struct {
	set    *shardSet
	outbox bool
}

// on runs f with the ledger of the user's shard, every statement fenced
// (fencedConn), where the shard is now.
func on[T any](ctx context.Context, l shardedLedger, userID string, f func(ledger) (T, error)) (T, error) {
	var out T
	shard := LedgerShard(userID)
	err := l.set.retry(ctx, shard, func(db *DB) error {
		var err error
		out, err = f(ledger{db: db, outbox: l.outbox, q: l.set.conn(db, shard)})
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
type shardedUsage struct{ set *shardSet }

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
	set  *shardSet
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
