package sqlite

import (
	"context"

	"github.com/parleyhq/parley/server/store"
)

type usage struct{ db *DB }

func (u usage) Record(ctx context.Context, records []store.UsageRecord) error {
	if len(records) == 0 {
		return nil
	}
	return mapErr(u.db.write(ctx, func(tx *txn) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO usage_records (request_id, user_id, api_key_id, channel, model,
			prompt_tokens, completion_tokens, cached_tokens, estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, r := range records {
			if _, err := st.ExecContext(ctx, r.RequestID, r.UserID, r.APIKeyID, r.Channel, r.Model,
				r.PromptTokens, r.CompletionTokens, r.CachedTokens, boolInt(r.Estimated), r.CostNanos, r.FinishReason, ts(r.CreatedAt), r.EndUser, boolInt(r.CacheHit), r.RequestedModel); err != nil {
				return err
			}
		}
		return nil
	}))
}

func (u usage) List(ctx context.Context, userID string, f store.UsageFilter, p store.PageRequest) ([]store.UsageRecord, string, error) {
	limit := p.Limit()
	q := `SELECT request_id, user_id, api_key_id, channel, model, prompt_tokens, completion_tokens, cached_tokens,
		estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model FROM usage_records WHERE 1 = 1`
	var args []any
	if userID != "" {
		q += ` AND user_id = ?`
		args = append(args, userID)
	}
	if f.EndUser != "" {
		q += ` AND end_user = ?`
		args = append(args, f.EndUser)
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (created_at, request_id) < (?, ?)`
		args = append(args, at, id)
	}
	q += ` ORDER BY created_at DESC, request_id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := u.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.UsageRecord
	for rows.Next() {
		var r store.UsageRecord
		var created int64
		if err := rows.Scan(&r.RequestID, &r.UserID, &r.APIKeyID, &r.Channel, &r.Model, &r.PromptTokens, &r.CompletionTokens,
			&r.CachedTokens, &r.Estimated, &r.CostNanos, &r.FinishReason, &created, &r.EndUser, &r.CacheHit, &r.RequestedModel); err != nil {
			return nil, "", err
		}
		r.CreatedAt = fromTS(created)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.UsageRecord) (int64, string) { return ts(v.CreatedAt), v.RequestID })
	return out, next, nil
}
