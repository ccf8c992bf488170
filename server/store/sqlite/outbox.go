package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// outbox is store.UsageOutbox over usage_outbox. The database has one
// process (embedded mode), so Ship calls are serialised by a mutex and no
// write transaction is held while ship runs: the records are read, shipped,
// then deleted by seq. A record deleted after it was shipped twice (a crash
// between the ship and the delete) is folded by the Usage store, whose
// Record skips request IDs it holds.
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
	rows, err := o.db.r.QueryContext(ctx, `SELECT seq, request_id, user_id, api_key_id, channel, model, prompt_tokens,
		completion_tokens, cached_tokens, estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model
		FROM usage_outbox ORDER BY seq LIMIT ?`, max)
	if err != nil {
		return 0, err
	}
	var seqs []any
	var recs []store.UsageRecord
	for rows.Next() {
		var seq, created int64
		var r store.UsageRecord
		if err := rows.Scan(&seq, &r.RequestID, &r.UserID, &r.APIKeyID, &r.Channel, &r.Model, &r.PromptTokens,
			&r.CompletionTokens, &r.CachedTokens, &r.Estimated, &r.CostNanos, &r.FinishReason, &created, &r.EndUser, &r.CacheHit, &r.RequestedModel); err != nil {
			rows.Close()
			return 0, err
		}
		r.CreatedAt = fromTS(created)
		seqs, recs = append(seqs, seq), append(recs, r)
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
		_, err := tx.Tx.ExecContext(del, `DELETE FROM usage_outbox WHERE seq IN (?`+strings.Repeat(`, ?`, len(seqs)-1)+`)`, seqs...)
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
