package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

// A shipper holds an advisory lock on a batch while it ships it: two keys,
// the first hashtext(current_schema() || ':usage_outbox') (advisory locks
// are the whole database's, and every schema's batch ids start at 1), the
// second the batch's id. Two-key locks are apart from one-key ones such as
// migrationLock.

// outbox is store.UsageOutbox over usage_outbox. Rows are shipped in
// batches: the oldest unstamped rows, taken FOR UPDATE SKIP LOCKED (gateways
// stamping at once take disjoint rows), are stamped with one id from
// usage_outbox_batches by one statement that commits before they are
// shipped, and from then on the batch is shipped whole, in seq order, until
// a ship of it succeeds; a stamped batch no one is shipping goes before new
// rows are stamped. ClickHouse stores a batch shipped twice once only when
// both inserts are the same block, so a batch must never be rebuilt.
//
// A batch is shipped in a transaction that holds the advisory lock
// (the schema's, id) and its rows' locks while ship runs, and deletes them
// before it commits: gateways sharing the database ship disjoint batches (a
// shipper passes over a batch whose lock another holds), and a gateway that
// dies mid-ship (its connection closes, the transaction aborts) leaves its
// batch, stamped, to the next one, at once. Transaction locks, not session
// ones, work through PgBouncer in transaction mode. A batch shipped but not
// deleted (a crash between the Usage store's acknowledgement and the commit)
// is shipped again, the same; the Usage store's Record skips request IDs it
// holds.
type outbox struct{ db *DB }

func (o outbox) Ship(ctx context.Context, max int, ship func(context.Context, []store.UsageRecord) error) (int, error) {
	if max <= 0 {
		return 0, nil
	}
	rows, err := o.db.pool.Query(ctx, `SELECT batch FROM usage_outbox WHERE batch IS NOT NULL
		GROUP BY batch ORDER BY min(seq)`)
	if err != nil {
		return 0, err
	}
	stamped, err := collectRows(rows, func(row pgx.Rows) (int64, error) {
		var id int64
		return id, row.Scan(&id)
	})
	if err != nil {
		return 0, err
	}
	if n, ok, err := o.shipBatch(ctx, stamped, ship); ok || err != nil {
		return n, err
	}
	// No stamped batch is free: stamp the oldest rows as a new one, with
	// one id for all (fresh is evaluated once; nextval in SET would be
	// evaluated per row).
	var id *int64
	err = o.db.pool.QueryRow(ctx, `WITH picked AS (
			SELECT seq FROM usage_outbox WHERE batch IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED
		), fresh AS MATERIALIZED (
			SELECT nextval('usage_outbox_batches') AS id
		), stamped AS (
			UPDATE usage_outbox o SET batch = fresh.id FROM picked, fresh WHERE o.seq = picked.seq RETURNING o.batch
		)
		SELECT max(batch) FROM stamped`, max).Scan(&id)
	if err != nil || id == nil {
		return 0, err
	}
	// Another shipper may have taken it meanwhile (a stamped batch is free
	// to all): then it is theirs to ship.
	n, _, err := o.shipBatch(ctx, []int64{*id}, ship)
	return n, err
}

// shipBatch ships the first batch of ids that no other shipper holds and
// that still waits, and deletes it once ship returns nil, all in one
// transaction; ok says whether there was one. The batch's records are handed
// out in seq order, the same every time.
func (o outbox) shipBatch(ctx context.Context, ids []int64, ship func(context.Context, []store.UsageRecord) error) (n int, ok bool, err error) {
	if len(ids) == 0 {
		return 0, false, nil
	}
	err = pgx.BeginFunc(ctx, o.db.pool, func(tx pgx.Tx) error {
		for _, id := range ids {
			// The lock's second key is the id's low 32 bits: two batches
			// 2^32 apart would at worst wait for each other.
			var free bool
			if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || ':usage_outbox'), $1::int)`, int32(id)).Scan(&free); err != nil {
				return err
			}
			if !free {
				continue
			}
			rows, err := tx.Query(ctx, `SELECT request_id, user_id, api_key_id, channel, model, prompt_tokens,
				completion_tokens, cached_tokens, estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model
				FROM usage_outbox WHERE batch = $1 ORDER BY seq FOR UPDATE`, id)
			if err != nil {
				return err
			}
			recs, err := collectRows(rows, func(row pgx.Rows) (store.UsageRecord, error) {
				var r store.UsageRecord
				var created int64
				err := row.Scan(&r.RequestID, &r.UserID, &r.APIKeyID, &r.Channel, &r.Model, &r.PromptTokens,
					&r.CompletionTokens, &r.CachedTokens, &r.Estimated, &r.CostNanos, &r.FinishReason, &created, &r.EndUser, &r.CacheHit, &r.RequestedModel)
				r.CreatedAt = fromTS(created)
				return r, err
			})
			if err != nil {
				return err
			}
			if len(recs) == 0 { // shipped by another since it was listed
				continue
			}
			ok = true
			if err := ship(ctx, recs); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM usage_outbox WHERE batch = $1`, id); err != nil {
				return err
			}
			n = len(recs)
			return nil
		}
		return nil
	})
	if err != nil {
		return 0, ok, err
	}
	return n, ok, nil
}

func (o outbox) Backlog(ctx context.Context) (int64, time.Time, error) {
	var n int64
	var oldest *int64
	err := o.db.pool.QueryRow(ctx, `SELECT count(*), min(created_at) FROM usage_outbox`).Scan(&n, &oldest)
	if err != nil {
		return 0, time.Time{}, err
	}
	return n, fromNullTS(oldest), nil
}
