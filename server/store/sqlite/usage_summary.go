package sqlite

import (
	"context"
	"time"

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
	rows, err := u.db.r.QueryContext(ctx, `SELECT (created_at + ?) / ? AS day, model, `+key+` AS key, count(*),
			sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(cost_nanos)
		FROM usage_records WHERE user_id = ? AND created_at >= ? AND created_at < ?
		GROUP BY day, model, key ORDER BY day, model, key`,
		int64(offset), store.NanosPerDay, userID, ts(from), ts(to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.UsageDay
	for rows.Next() {
		var d store.UsageDay
		if err := rows.Scan(&d.Day, &d.Model, &d.APIKeyID, &d.Requests, &d.PromptTokens, &d.CompletionTokens, &d.CachedTokens, &d.CostNanos); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
