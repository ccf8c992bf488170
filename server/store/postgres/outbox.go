package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

// outbox is store.UsageOutbox over usage_outbox. Ship takes the oldest rows
// FOR UPDATE SKIP LOCKED in a transaction that stays open while they are
// shipped and deletes them before it commits: gateways sharing the database
// ship disjoint rows, and a gateway that dies mid-ship (its connection
// closes, the transaction aborts) leaves its rows for the next one, at once.
// A record shipped but not deleted (a crash between the Usage store's
// acknowledgement and the commit) is shipped again; the Usage store's Record
// skips request IDs it holds.
type outbox struct{ db *DB }

func (o outbox) Ship(ctx context.Context, max int, ship func(context.Context, []store.UsageRecord) error) (int, error) {
	if max <= 0 {
		return 0, nil
	}
	n := 0
	err := pgx.BeginFunc(ctx, o.db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT seq, request_id, user_id, api_key_id, channel, model, prompt_tokens,
			completion_tokens, cached_tokens, estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model
			FROM usage_outbox ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, max)
		if err != nil {
			return err
		}
		var seqs []int64
		recs, err := collectRows(rows, func(row pgx.Rows) (store.UsageRecord, error) {
			var r store.UsageRecord
			var seq, created int64
			err := row.Scan(&seq, &r.RequestID, &r.UserID, &r.APIKeyID, &r.Channel, &r.Model, &r.PromptTokens,
				&r.CompletionTokens, &r.CachedTokens, &r.Estimated, &r.CostNanos, &r.FinishReason, &created, &r.EndUser, &r.CacheHit, &r.RequestedModel)
			r.CreatedAt = fromTS(created)
			seqs = append(seqs, seq)
			return r, err
		})
		if err != nil || len(recs) == 0 {
			return err
		}
		if err := ship(ctx, recs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM usage_outbox WHERE seq = ANY($1)`, seqs); err != nil {
			return err
		}
		n = len(recs)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
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
