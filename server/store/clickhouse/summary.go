package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/parleyhq/parley/server/store"
)

// Summarize implements store.Usage: one GROUP BY over the user's range of
// the primary key, FINAL so a record shipped twice counts once; in cluster
// mode the whole quarters of the range come from the pre-aggregated sums.
func (db *DB) Summarize(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]store.UsageDay, error) {
	return db.summarize(ctx, userID, from.UnixNano(), to.UnixNano(), int64(offset), `''`)
}

// SummarizeKeys implements store.Usage: Summarize per key as well.
func (db *DB) SummarizeKeys(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]store.UsageDay, error) {
	return db.summarize(ctx, userID, from.UnixNano(), to.UnixNano(), int64(offset), `api_key_id`)
}

// summarize groups [from, to) by day, model and key (the constant ” for no
// key). In cluster mode, with an offset of whole quarters (every time zone
// has one), the range's whole quarters are read from usage_quarters and only
// its ragged ends, under 15 minutes each, from the records.
func (db *DB) summarize(ctx context.Context, userID string, from, to, offset int64, key string) ([]store.UsageDay, error) {
	if db.cluster == "" || offset%quarterNanos != 0 || from < 0 {
		return db.summarizeRecords(ctx, userID, from, to, offset, key)
	}
	qa, qb := (from+quarterNanos-1)/quarterNanos*quarterNanos, to/quarterNanos*quarterNanos
	if qa >= qb {
		return db.summarizeRecords(ctx, userID, from, to, offset, key)
	}
	var all []store.UsageDay
	for _, part := range []struct {
		from, to int64
		read     func(context.Context, string, int64, int64, int64, string) ([]store.UsageDay, error)
	}{{from, qa, db.summarizeRecords}, {qa, qb, db.summarizeQuarters}, {qb, to, db.summarizeRecords}} {
		if part.from >= part.to {
			continue
		}
		days, err := part.read(ctx, userID, part.from, part.to, offset, key)
		if err != nil {
			return nil, err
		}
		all = append(all, days...)
	}
	return mergeDays(all), nil
}

// summarizeRecords is summarize from the records.
func (db *DB) summarizeRecords(ctx context.Context, userID string, from, to, offset int64, key string) ([]store.UsageDay, error) {
	rows, err := db.conn.Query(ctx, `SELECT intDiv(created_at + ?, ?) AS day, model, `+key+` AS key, count(),
			sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(cost_nanos)
		FROM usage_records FINAL
		WHERE user_id = ? AND created_at >= ? AND created_at < ?
		GROUP BY day, model, key ORDER BY day, model, key`,
		offset, store.NanosPerDay, userID, from, to)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: summarize usage: %w", err)
	}
	return scanDays(rows)
}

// mergeDays adds up the rows of the same day, model and key, in summarize's
// order.
func mergeDays(days []store.UsageDay) []store.UsageDay {
	slices.SortStableFunc(days, func(a, b store.UsageDay) int {
		return cmp.Or(cmp.Compare(a.Day, b.Day), cmp.Compare(a.Model, b.Model), cmp.Compare(a.APIKeyID, b.APIKeyID))
	})
	var out []store.UsageDay
	for _, d := range days {
		if n := len(out); n > 0 && out[n-1].Day == d.Day && out[n-1].Model == d.Model && out[n-1].APIKeyID == d.APIKeyID {
			o := &out[n-1]
			o.Requests += d.Requests
			o.PromptTokens += d.PromptTokens
			o.CompletionTokens += d.CompletionTokens
			o.CachedTokens += d.CachedTokens
			o.CostNanos += d.CostNanos
			continue
		}
		out = append(out, d)
	}
	return out
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
