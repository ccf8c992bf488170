package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type usage struct{ db *DB }

// Record inserts the batch in one statement (arrays unnested server-side);
// rows whose request ID exists are skipped.
func (u usage) Record(ctx context.Context, records []store.UsageRecord) error {
	if len(records) == 0 {
		return nil
	}
	n := len(records)
	var (
		reqID, userID, keyID, channel, model, finish = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		endUser, requested                           = make([]string, n), make([]string, n)
		cacheHit                                     = make([]bool, n)
		prompt, completion, cached, cost, created    = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		estimated                                    = make([]bool, n)
	)
	for i, r := range records {
		reqID[i], userID[i], keyID[i], channel[i], model[i], finish[i] = r.RequestID, r.UserID, r.APIKeyID, r.Channel, r.Model, r.FinishReason
		prompt[i], completion[i], cached[i], cost[i], created[i] = r.PromptTokens, r.CompletionTokens, r.CachedTokens, r.CostNanos, ts(r.CreatedAt)
		estimated[i], endUser[i], cacheHit[i], requested[i] = r.Estimated, r.EndUser, r.CacheHit, r.RequestedModel
	}
	_, err := u.db.exec(ctx, `INSERT INTO usage_records (request_id, user_id, api_key_id, channel, model,
			prompt_tokens, completion_tokens, cached_tokens, estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
			$6::bigint[], $7::bigint[], $8::bigint[], $9::boolean[], $10::bigint[], $11::text[], $12::bigint[], $13::text[], $14::boolean[], $15::text[])
		ON CONFLICT (request_id) DO NOTHING`,
		reqID, userID, keyID, channel, model, prompt, completion, cached, estimated, cost, finish, created, endUser, cacheHit, requested)
	return err
}

func (u usage) List(ctx context.Context, userID string, f store.UsageFilter, p store.PageRequest) ([]store.UsageRecord, string, error) {
	limit := p.Limit()
	q := `SELECT request_id, user_id, api_key_id, channel, model, prompt_tokens, completion_tokens, cached_tokens,
		estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model FROM usage_records WHERE TRUE`
	var args []any
	if userID != "" {
		args = append(args, userID)
		q += fmt.Sprintf(` AND user_id = $%d`, len(args))
	}
	if f.EndUser != "" {
		args = append(args, f.EndUser)
		q += fmt.Sprintf(` AND end_user = $%d`, len(args))
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		args = append(args, at, id)
		q += fmt.Sprintf(` AND (created_at, request_id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	q += fmt.Sprintf(` ORDER BY created_at DESC, request_id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, u.db, q, args, func(row pgx.Rows) (store.UsageRecord, error) {
		var r store.UsageRecord
		var created int64
		err := row.Scan(&r.RequestID, &r.UserID, &r.APIKeyID, &r.Channel, &r.Model, &r.PromptTokens, &r.CompletionTokens,
			&r.CachedTokens, &r.Estimated, &r.CostNanos, &r.FinishReason, &created, &r.EndUser, &r.CacheHit, &r.RequestedModel)
		r.CreatedAt = fromTS(created)
		return r, err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.UsageRecord) (int64, string) { return ts(v.CreatedAt), v.RequestID })
	return out, next, nil
}
