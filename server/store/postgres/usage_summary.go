package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

func (u usage) Summarize(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]store.UsageDay, error) {
	return u.summarize(ctx, userID, from, to, offset, `''`)
}

func (u usage) SummarizeKeys(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]store.UsageDay, error) {
	return u.summarize(ctx, userID, from, to, offset, `api_key_id`)
}

// summarize groups by day, model and key (the constant ” for no key).
func (u usage) summarize(ctx context.Context, userID string, from, to time.Time, offset time.Duration, key string) ([]store.UsageDay, error) {
	// Times are positive nanoseconds and offsets at most a day, so integer
	// division is the floor.
	rows, err := u.db.pool.Query(ctx, `SELECT (created_at + $1) / $2 AS day, model, `+key+` AS key, count(*),
			sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint, sum(cached_tokens)::bigint, sum(cost_nanos)::bigint
		FROM usage_records WHERE user_id = $3 AND created_at >= $4 AND created_at < $5
		GROUP BY day, model, key ORDER BY day, model, key`,
		int64(offset), store.NanosPerDay, userID, ts(from), ts(to))
	if err != nil {
		return nil, err
	}
	return collectRows(rows, func(r pgx.Rows) (store.UsageDay, error) {
		var d store.UsageDay
		err := r.Scan(&d.Day, &d.Model, &d.APIKeyID, &d.Requests, &d.PromptTokens, &d.CompletionTokens, &d.CachedTokens, &d.CostNanos)
		return d, err
	})
}
