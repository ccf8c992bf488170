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

// billingSet is where the ledger lives: one database, or several with the
// logical shards spread over them.
type billingSet struct {
	dbs []*DB
	of  [LedgerShards]int // logical shard → index in dbs
}

// WithBillingShards spreads the ledger over several billing clusters: the
// logical shards in contiguous ranges, as evenly as they go (two clusters:
// 0–15 and 16–31). Everything WithBilling says holds for each. A
// user's ledger rows all live on one cluster, so a hold, a settle and an
// organisation's budgets are each one cluster's transaction, as with one.
func (db *DB) WithBillingShards(dbs []*DB) {
	set := &billingSet{dbs: dbs}
	for s := range LedgerShards {
		set.of[s] = s * len(dbs) / LedgerShards
	}
	db.billing = set
}

// db is the database holding the user's ledger rows.
func (b *billingSet) db(userID string) *DB { return b.dbs[b.of[LedgerShard(userID)]] }

// shardedLedger is store.Ledger over the billing clusters, each call on the
// cluster of its user.
type shardedLedger struct {
	set    *billingSet
	outbox bool
}

func (l shardedLedger) on(userID string) ledger { return ledger{db: l.set.db(userID), outbox: l.outbox} }

func (l shardedLedger) Account(ctx context.Context, userID string) (store.Balance, error) {
	return l.on(userID).Account(ctx, userID)
}

func (l shardedLedger) Adjust(ctx context.Context, a store.Adjustment) (int64, error) {
	return l.on(a.UserID).Adjust(ctx, a)
}

func (l shardedLedger) Reserve(ctx context.Context, r store.Reservation) (store.Balance, error) {
	return l.on(r.UserID).Reserve(ctx, r)
}

// Settle goes to the cluster of the record's user, who is the reservation's
// (the caller holds and records for the same account). A release (no
// record) names no user: it runs on every cluster, where the reservation is
// not it changes nothing.
func (l shardedLedger) Settle(ctx context.Context, reservationID string, costNanos int64, now time.Time, record *store.UsageRecord) (store.Settlement, error) {
	if record != nil {
		s, err := l.on(record.UserID).Settle(ctx, reservationID, costNanos, now, record)
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
		out.ChargedNanos, out.RefundedNanos, out.Late = out.ChargedNanos+s.ChargedNanos, out.RefundedNanos+s.RefundedNanos, out.Late || s.Late
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
	for _, db := range u.set.dbs {
		recs, next, err := usage{db}.List(ctx, "", f, p)
		if err != nil {
			return nil, "", err
		}
		all, more = append(all, recs...), more || next != ""
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

func (o shardedOutbox) Ship(ctx context.Context, max int, ship func(context.Context, []store.UsageRecord) error) (int, error) {
	start := int(o.next.Add(1))
	for i := range o.set.dbs {
		n, err := (outbox{o.set.dbs[(start+i)%len(o.set.dbs)]}).Ship(ctx, max, ship)
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, nil
}

func (o shardedOutbox) Backlog(ctx context.Context) (int64, time.Time, error) {
	var total int64
	var oldest time.Time
	for _, db := range o.set.dbs {
		n, at, err := (outbox{db}).Backlog(ctx)
		if err != nil {
			return 0, time.Time{}, err
		}
		total += n
		if !at.IsZero() && (oldest.IsZero() || at.Before(oldest)) {
			oldest = at
		}
	}
	return total, oldest, nil
}
