package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

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

// summarize groups by day, model and key (the constant ” for no key): in
// cluster mode from the pre-aggregated quarters where the range and the
// offset are whole quarters, else from the records.
func (db *DB) summarize(ctx context.Context, userID string, from, to time.Time, offset time.Duration, key string) ([]store.UsageDay, error) {
	if db.cluster != "" {
		if out, ok, err := db.summarizeQuarters(ctx, userID, from, to, offset, key); ok {
			return out, err
		}
	}
	rows, err := db.conn.Query(ctx, `SELECT intDiv(created_at + ?, ?) AS day, model, `+key+` AS key, count(),
			sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(cost_nanos)
		FROM usage_records FINAL
		WHERE user_id = ? AND created_at >= ? AND created_at < ?
		GROUP BY day, model, key ORDER BY day, model, key`,
		int64(offset), store.NanosPerDay, userID, from.UnixNano(), to.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("clickhouse: summarize usage: %w", err)
	}
	return scanDays(rows)
}

// scanDays reads summarize's rows and closes them.
func scanDays(rows driver.Rows) ([]store.UsageDay, error) {
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
