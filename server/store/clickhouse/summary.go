package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// Summarize implements store.Usage: one GROUP BY over the user's range of
// the primary key, FINAL so a record shipped twice counts once.
func (db *DB) Summarize(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]store.UsageDay, error) {
	return db.summarize(ctx, userID, from, to, offset, `''`)
}

// SummarizeKeys implements store.Usage: Summarize per key as well.
func (db *DB) SummarizeKeys(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]store.UsageDay, error) {
	return db.summarize(ctx, userID, from, to, offset, `api_key_id`)
}

// summarize groups by day, model and key (the constant ” for no key).
func (db *DB) summarize(ctx context.Context, userID string, from, to time.Time, offset time.Duration, key string) ([]store.UsageDay, error) {
	rows, err := db.conn.Query(ctx, `SELECT intDiv(created_at + ?, ?) AS day, model, `+key+` AS key, count(),
			sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(cost_nanos)
		FROM usage_records FINAL
		WHERE user_id = ? AND created_at >= ? AND created_at < ?
		GROUP BY day, model, key ORDER BY day, model, key`,
		int64(offset), store.NanosPerDay, userID, from.UnixNano(), to.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("clickhouse: summarize usage: %w", err)
	}
	defer rows.Close()
	var out []store.UsageDay
	for rows.Next() {
		var d store.UsageDay
		var n uint64
		if err := rows.Scan(&d.Day, &d.Model, &d.APIKeyID, &n, &d.PromptTokens, &d.CompletionTokens, &d.CachedTokens, &d.CostNanos); err != nil {
			return nil, fmt.Errorf("clickhouse: summarize usage: %w", err)
		}
		d.Requests = int64(n)
		out = append(out, d)
	}
	return out, rows.Err()
}
