package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// outbox is store.UsageOutbox over usage_outbox. The database has one
// process (embedded mode), so Ship calls are serialised by a mutex and no
// write transaction is held while ship runs: a batch is stamped (the oldest
// max rows get the batch's id, its first seq) in a transaction that commits
// before they are shipped, then read, shipped, and deleted by id. A stamped
// batch is shipped again, whole and in seq order, until a ship of it
// succeeds, before other rows are stamped: ClickHouse stores a batch
// shipped twice once only when both inserts are the same block. A batch
// deleted after it was shipped twice (a crash between the ship and the
// delete) is folded by the Usage store, whose Record skips request IDs it
// holds.
type outbox struct {
	db *DB
	mu *sync.Mutex
}

func (o outbox) Ship(ctx context.Context, max int, ship func(context.Context, []store.UsageRecord) error) (int, error) {
	if max <= 0 {
		return 0, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var id sql.NullInt64
	if err := o.db.r.QueryRowContext(ctx, `SELECT min(batch) FROM usage_outbox WHERE batch IS NOT NULL`).Scan(&id); err != nil {
		return 0, err
	}
	if !id.Valid {
		err := o.db.write(ctx, func(tx *txn) error {
			if err := tx.QueryRowContext(ctx, `SELECT min(seq) FROM usage_outbox WHERE batch IS NULL`).Scan(&id); err != nil || !id.Valid {
				return err
			}
			_, err := tx.ExecContext(ctx, `UPDATE usage_outbox SET batch = ?
				WHERE seq IN (SELECT seq FROM usage_outbox WHERE batch IS NULL ORDER BY seq LIMIT ?)`, id.Int64, max)
			return err
		})
		if err != nil || !id.Valid {
			return 0, err
		}
	}
	rows, err := o.db.r.QueryContext(ctx, `SELECT request_id, user_id, api_key_id, channel, model, prompt_tokens,
		completion_tokens, cached_tokens, estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model
		FROM usage_outbox WHERE batch = ? ORDER BY seq`, id.Int64)
	if err != nil {
		return 0, err
	}
	var recs []store.UsageRecord
	for rows.Next() {
		var created int64
		var r store.UsageRecord
		if err := rows.Scan(&r.RequestID, &r.UserID, &r.APIKeyID, &r.Channel, &r.Model, &r.PromptTokens,
			&r.CompletionTokens, &r.CachedTokens, &r.Estimated, &r.CostNanos, &r.FinishReason, &created, &r.EndUser, &r.CacheHit, &r.RequestedModel); err != nil {
			rows.Close()
			return 0, err
		}
		r.CreatedAt = fromTS(created)
		recs = append(recs, r)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return 0, nil
	}
	if err := ship(ctx, recs); err != nil {
		return 0, err
	}
	// Shipped: delete them, even if ctx ended meanwhile (else they would be
	// shipped again).
	del := context.WithoutCancel(ctx)
	err = o.db.write(del, func(tx *txn) error {
		_, err := tx.ExecContext(del, `DELETE FROM usage_outbox WHERE batch = ?`, id.Int64)
		return err
	})
	if err != nil {
		return 0, err
	}
	return len(recs), nil
}

func (o outbox) Backlog(ctx context.Context) (int64, time.Time, error) {
	var n int64
	var oldest sql.NullInt64
	err := o.db.r.QueryRowContext(ctx, `SELECT count(*), min(created_at) FROM usage_outbox`).Scan(&n, &oldest)
	if err != nil {
		return 0, time.Time{}, err
	}
	return n, fromNullTS(oldest), nil
}
