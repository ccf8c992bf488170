package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type batches struct{ db *DB }

const batchCols = `id, user_id, api_key_id, endpoint, input_file_id, completion_window, status, output_file_id, error_file_id,
	metadata, errors, total, completed, failed, cost_nanos, created_at, expires_at, in_progress_at, finalizing_at, completed_at,
	failed_at, expired_at, cancelling_at, cancelled_at`

type batchScan struct {
	b                                         store.Batch
	metadata, errs                            string
	created, expires                          int64
	inProgress, finalizing, completed, failed *int64
	expired, cancelling, cancelled            *int64
}

func (s *batchScan) dest() []any {
	b := &s.b
	return []any{&b.ID, &b.UserID, &b.APIKeyID, &b.Endpoint, &b.InputFileID, &b.CompletionWindow, &b.Status, &b.OutputFileID,
		&b.ErrorFileID, &s.metadata, &s.errs, &b.Total, &b.Completed, &b.Failed, &b.CostNanos, &s.created, &s.expires,
		&s.inProgress, &s.finalizing, &s.completed, &s.failed, &s.expired, &s.cancelling, &s.cancelled}
}

func (s *batchScan) batch() (store.Batch, error) {
	b := s.b
	if err := json.Unmarshal([]byte(s.metadata), &b.Metadata); err != nil {
		return b, fmt.Errorf("postgres: batch %s metadata: %w", b.ID, err)
	}
	if err := json.Unmarshal([]byte(s.errs), &b.Errors); err != nil {
		return b, fmt.Errorf("postgres: batch %s errors: %w", b.ID, err)
	}
	b.CreatedAt, b.ExpiresAt = fromTS(s.created), fromTS(s.expires)
	b.InProgressAt, b.FinalizingAt, b.CompletedAt, b.FailedAt = fromNullTS(s.inProgress), fromNullTS(s.finalizing), fromNullTS(s.completed), fromNullTS(s.failed)
	b.ExpiredAt, b.CancellingAt, b.CancelledAt = fromNullTS(s.expired), fromNullTS(s.cancelling), fromNullTS(s.cancelled)
	return b, nil
}

func scanBatch(row pgx.Row) (store.Batch, error) {
	var s batchScan
	if err := row.Scan(s.dest()...); err != nil {
		return store.Batch{}, err
	}
	return s.batch()
}

func (s batches) CreateBatch(ctx context.Context, b store.Batch) error {
	meta := b.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	data, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	_, err = s.db.exec(ctx, `INSERT INTO batches (id, user_id, api_key_id, endpoint, input_file_id, completion_window, status,
		metadata, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		b.ID, b.UserID, b.APIKeyID, b.Endpoint, b.InputFileID, b.CompletionWindow, b.Status, string(data), ts(b.CreatedAt), ts(b.ExpiresAt))
	return err
}

func (s batches) GetBatch(ctx context.Context, userID, id string) (store.Batch, error) {
	q, args := `SELECT `+batchCols+` FROM batches WHERE id = $1`, []any{id}
	if userID != "" {
		q, args = q+` AND user_id = $2`, append(args, userID)
	}
	b, err := scanBatch(s.db.pool.QueryRow(ctx, q, args...))
	if err != nil {
		return store.Batch{}, notFound(err, "batch")
	}
	return b, nil
}

func (s batches) ListBatches(ctx context.Context, userID string, p store.PageRequest) ([]store.Batch, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+batchCols+` FROM batches WHERE user_id = $1`, []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (created_at, id) < ($2, $3)`, append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, s.db, q, args, func(r pgx.Rows) (store.Batch, error) { return scanBatch(r) })
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, next := store.Page(out, limit, func(b store.Batch) (int64, string) { return ts(b.CreatedAt), b.ID })
	return out, next, nil
}

func (s batches) ListOpenBatches(ctx context.Context, limit int) ([]store.Batch, error) {
	out, err := readRows(ctx, s.db, `SELECT `+batchCols+` FROM batches
		WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling') ORDER BY created_at, id LIMIT $1`, []any{limit},
		func(r pgx.Rows) (store.Batch, error) { return scanBatch(r) })
	return out, mapErr(err)
}

func (s batches) CancelBatch(ctx context.Context, userID, id string, now time.Time) (store.Batch, error) {
	var out store.Batch
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		// The row's lock orders the cancel against the runner's updates.
		b, err := scanBatch(tx.QueryRow(ctx, `SELECT `+batchCols+` FROM batches WHERE id = $1 AND user_id = $2 FOR UPDATE`, id, userID))
		if err != nil {
			return notFound(err, "batch")
		}
		switch b.Status {
		case store.BatchValidating, store.BatchInProgress:
			// The claim stays: its holder sees the status and finishes the
			// cancel, or the next gateway to claim the batch does.
			if _, err := tx.Exec(ctx, `UPDATE batches SET status = $2, cancelling_at = $3 WHERE id = $1`,
				id, store.BatchCancelling, ts(now)); err != nil {
				return err
			}
			b.Status, b.CancellingAt = store.BatchCancelling, fromTS(ts(now))
		case store.BatchCancelling:
		default:
			return fmt.Errorf("%w: the batch is %s", store.ErrConflict, b.Status)
		}
		out = b
		return nil
	})
	if err != nil {
		return store.Batch{}, mapErr(err)
	}
	return out, nil
}

func (s batches) ClaimBatch(ctx context.Context, now time.Time, lease time.Duration) (store.BatchClaim, bool, error) {
	c := store.BatchClaim{Until: now.Add(lease)}
	err := s.db.pool.QueryRow(ctx, `WITH c AS (
			SELECT id FROM batches WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling') AND claim_until <= $1
			ORDER BY claim_until, created_at LIMIT 1 FOR UPDATE SKIP LOCKED
		)
		UPDATE batches b SET claim_token = gen_random_uuid()::text, claim_until = $2
		FROM c WHERE b.id = c.id
		RETURNING b.id, b.claim_token`, ts(now), ts(c.Until)).Scan(&c.BatchID, &c.Token)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.BatchClaim{}, false, nil
	}
	if err != nil {
		return store.BatchClaim{}, false, mapErr(err)
	}
	return c, true, nil
}

func (s batches) RenewBatch(ctx context.Context, c store.BatchClaim, now time.Time, lease time.Duration) (store.BatchClaim, error) {
	var got int64
	err := s.db.pool.QueryRow(ctx, `UPDATE batches SET claim_until = greatest(claim_until, $3) WHERE id = $1 AND claim_token = $2
		RETURNING claim_until`, c.BatchID, c.Token, ts(now.Add(lease))).Scan(&got)
	if err != nil {
		return c, notFound(err, "batch claim")
	}
	c.Until = fromTS(got)
	return c, nil
}

func (s batches) ReleaseBatch(ctx context.Context, c store.BatchClaim) error {
	_, err := s.db.exec(ctx, `UPDATE batches SET claim_token = '', claim_until = 0 WHERE id = $1 AND claim_token = $2`, c.BatchID, c.Token)
	return err
}

func (s batches) StartBatch(ctx context.Context, c store.BatchClaim, lines []store.BatchLine, now time.Time) error {
	idx, customIDs, bodies := make([]int32, len(lines)), make([]string, len(lines)), make([]string, len(lines))
	for i, l := range lines {
		idx[i], customIDs[i], bodies[i] = int32(l.Index), l.CustomID, l.Body
	}
	return mapErr(pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE batches SET status = 'in_progress', in_progress_at = $3, total = $4
			WHERE id = $1 AND claim_token = $2 AND status = 'validating'`, c.BatchID, c.Token, ts(now), len(lines))
		if err != nil {
			return err
		}
		if err := affectedOne(tag, "batch claim"); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO batch_lines (batch_id, idx, custom_id, body)
			SELECT $1, u.idx, u.custom_id, u.body FROM unnest($2::int[], $3::text[], $4::text[]) AS u(idx, custom_id, body)`,
			c.BatchID, idx, customIDs, bodies)
		return err
	}))
}

// statusColumn is the timestamp column a status is stamped on.
var statusColumn = map[string]string{
	store.BatchInProgress: "in_progress_at", store.BatchFinalizing: "finalizing_at", store.BatchCompleted: "completed_at",
	store.BatchFailed: "failed_at", store.BatchExpired: "expired_at", store.BatchCancelling: "cancelling_at", store.BatchCancelled: "cancelled_at",
}

func (s batches) UpdateBatch(ctx context.Context, c store.BatchClaim, u store.BatchUpdate) error {
	col, ok := statusColumn[u.Status]
	if !ok {
		return fmt.Errorf("%w: status %q", store.ErrInvalidArgument, u.Status)
	}
	errs := []byte("[]")
	if u.Errors != nil {
		var err error
		if errs, err = json.Marshal(u.Errors); err != nil {
			return err
		}
	}
	tag, err := s.db.exec(ctx, `UPDATE batches SET status = $3, `+col+` = coalesce(`+col+`, $4),
		output_file_id = CASE WHEN $5 = '' THEN output_file_id ELSE $5 END,
		error_file_id = CASE WHEN $6 = '' THEN error_file_id ELSE $6 END,
		errors = CASE WHEN $7 = '[]' THEN errors ELSE $7 END
		WHERE id = $1 AND claim_token = $2 AND (status <> 'cancelling' OR $3 = 'cancelled')`,
		c.BatchID, c.Token, u.Status, ts(u.At), u.OutputFileID, u.ErrorFileID, string(errs))
	if err != nil {
		return err
	}
	return affectedOne(tag, "batch claim")
}

const lineCols = `batch_id, idx, custom_id, body, done, failed, result`

func scanLine(r pgx.Rows) (store.BatchLine, error) {
	var l store.BatchLine
	err := r.Scan(&l.BatchID, &l.Index, &l.CustomID, &l.Body, &l.Done, &l.Failed, &l.Result)
	return l, err
}

// PendingBatchLines and BatchLines read the primary: they are the runner's
// working state, never a listing that may lag.
func (s batches) PendingBatchLines(ctx context.Context, batchID string, after, limit int) ([]store.BatchLine, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT `+lineCols+` FROM batch_lines
		WHERE batch_id = $1 AND idx > $2 AND NOT done ORDER BY idx LIMIT $3`, batchID, after, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectRows(rows, scanLine)
}

func (s batches) BatchLines(ctx context.Context, batchID string, after, limit int) ([]store.BatchLine, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT `+lineCols+` FROM batch_lines
		WHERE batch_id = $1 AND idx > $2 ORDER BY idx LIMIT $3`, batchID, after, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectRows(rows, scanLine)
}

func (s batches) FinishBatchLine(ctx context.Context, batchID string, index int, failed bool, result string, costNanos int64) (bool, error) {
	done := false
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		// A racing finish waits on the line's lock, then finds it done.
		tag, err := tx.Exec(ctx, `UPDATE batch_lines SET done = true, failed = $3, result = $4 WHERE batch_id = $1 AND idx = $2 AND NOT done`,
			batchID, index, failed, result)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		done = true
		count := "completed"
		if failed {
			count = "failed"
		}
		_, err = tx.Exec(ctx, `UPDATE batches SET `+count+` = `+count+` + 1, cost_nanos = cost_nanos + $2 WHERE id = $1`, batchID, costNanos)
		return err
	})
	if err != nil {
		return false, mapErr(err)
	}
	return done, nil
}
