package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

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
	inProgress, finalizing, completed, failed sql.NullInt64
	expired, cancelling, cancelled            sql.NullInt64
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
		return b, fmt.Errorf("sqlite: batch %s metadata: %w", b.ID, err)
	}
	if err := json.Unmarshal([]byte(s.errs), &b.Errors); err != nil {
		return b, fmt.Errorf("sqlite: batch %s errors: %w", b.ID, err)
	}
	b.CreatedAt, b.ExpiresAt = fromTS(s.created), fromTS(s.expires)
	b.InProgressAt, b.FinalizingAt, b.CompletedAt, b.FailedAt = fromNullTS(s.inProgress), fromNullTS(s.finalizing), fromNullTS(s.completed), fromNullTS(s.failed)
	b.ExpiredAt, b.CancellingAt, b.CancelledAt = fromNullTS(s.expired), fromNullTS(s.cancelling), fromNullTS(s.cancelled)
	return b, nil
}

func scanBatch(row interface{ Scan(...any) error }) (store.Batch, error) {
	var s batchScan
	if err := row.Scan(s.dest()...); err != nil {
		return store.Batch{}, err
	}
	return s.batch()
}

func (s batches) CreateBatch(ctx context.Context, b store.Batch) error {
	meta, err := json.Marshal(orEmpty(b.Metadata))
	if err != nil {
		return err
	}
	_, err = s.db.exec(ctx, `INSERT INTO batches (id, user_id, api_key_id, endpoint, input_file_id, completion_window, status,
		metadata, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.ID, b.UserID, b.APIKeyID, b.Endpoint, b.InputFileID, b.CompletionWindow, b.Status, string(meta), ts(b.CreatedAt), ts(b.ExpiresAt))
	return err
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func (s batches) GetBatch(ctx context.Context, userID, id string) (store.Batch, error) {
	q, args := `SELECT `+batchCols+` FROM batches WHERE id = ?`, []any{id}
	if userID != "" {
		q, args = q+` AND user_id = ?`, append(args, userID)
	}
	b, err := scanBatch(s.db.r.QueryRowContext(ctx, q, args...))
	return b, notFound(err, "batch")
}

func (s batches) ListBatches(ctx context.Context, userID string, p store.PageRequest) ([]store.Batch, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+batchCols+` FROM batches WHERE user_id = ?`, []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (created_at, id) < (?, ?)`, append(args, at, id)
	}
	out, err := readRows(ctx, s.db, q+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit+1), func(r *sql.Rows) (store.Batch, error) {
		return scanBatch(r)
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(b store.Batch) (int64, string) { return ts(b.CreatedAt), b.ID })
	return out, next, nil
}

func (s batches) ListOpenBatches(ctx context.Context, limit int) ([]store.Batch, error) {
	return readRows(ctx, s.db, `SELECT `+batchCols+` FROM batches
		WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling') ORDER BY created_at, id LIMIT ?`, []any{limit},
		func(r *sql.Rows) (store.Batch, error) { return scanBatch(r) })
}

func (s batches) CancelBatch(ctx context.Context, userID, id string, now time.Time) (store.Batch, error) {
	var out store.Batch
	err := s.db.write(ctx, func(tx *txn) error {
		b, err := scanBatch(tx.QueryRowContext(ctx, `SELECT `+batchCols+` FROM batches WHERE id = ? AND user_id = ?`, id, userID))
		if err != nil {
			return notFound(err, "batch")
		}
		switch b.Status {
		case store.BatchValidating, store.BatchInProgress:
			// The claim stays: its holder sees the status and ends the batch.
			if _, err := tx.ExecContext(ctx, `UPDATE batches SET status = ?, cancelling_at = ? WHERE id = ?`,
				store.BatchCancelling, ts(now), id); err != nil {
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
	return out, err
}

func (s batches) ClaimBatch(ctx context.Context, now time.Time, lease time.Duration) (store.BatchClaim, bool, error) {
	c := store.BatchClaim{Token: uuid.NewString(), Until: now.Add(lease)}
	err := s.db.w.QueryRowContext(ctx, `UPDATE batches SET claim_token = ?, claim_until = ?
		WHERE id = (SELECT id FROM batches WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling') AND claim_until <= ?
			ORDER BY claim_until, created_at LIMIT 1)
		RETURNING id`, c.Token, ts(c.Until), ts(now)).Scan(&c.BatchID)
	if errors.Is(err, sql.ErrNoRows) {
		return store.BatchClaim{}, false, nil
	}
	if err != nil {
		return store.BatchClaim{}, false, err
	}
	return c, true, nil
}

func (s batches) RenewBatch(ctx context.Context, c store.BatchClaim, now time.Time, lease time.Duration) (store.BatchClaim, error) {
	var got int64
	err := s.db.w.QueryRowContext(ctx, `UPDATE batches SET claim_until = max(claim_until, ?) WHERE id = ? AND claim_token = ?
		RETURNING claim_until`, ts(now.Add(lease)), c.BatchID, c.Token).Scan(&got)
	if err != nil {
		return c, notFound(err, "batch claim")
	}
	c.Until = fromTS(got)
	return c, nil
}

func (s batches) ReleaseBatch(ctx context.Context, c store.BatchClaim) error {
	_, err := s.db.exec(ctx, `UPDATE batches SET claim_token = '', claim_until = 0 WHERE id = ? AND claim_token = ?`, c.BatchID, c.Token)
	return err
}

func (s batches) StartBatch(ctx context.Context, c store.BatchClaim, lines []store.BatchLine, now time.Time) error {
	return s.db.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE batches SET status = 'in_progress', in_progress_at = ?, total = ?
			WHERE id = ? AND claim_token = ? AND status = 'validating'`, ts(now), len(lines), c.BatchID, c.Token)
		if err != nil {
			return err
		}
		if err := affectedOne(res, "batch claim"); err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO batch_lines (batch_id, idx, custom_id, body) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, l := range lines {
			if _, err := st.ExecContext(ctx, c.BatchID, l.Index, l.CustomID, l.Body); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
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
	errs, err := json.Marshal(u.Errors)
	if err != nil {
		return err
	}
	if u.Errors == nil {
		errs = []byte("[]")
	}
	res, err := s.db.exec(ctx, `UPDATE batches SET status = ?, `+col+` = coalesce(`+col+`, ?),
		output_file_id = CASE WHEN ? = '' THEN output_file_id ELSE ? END,
		error_file_id = CASE WHEN ? = '' THEN error_file_id ELSE ? END,
		errors = CASE WHEN ? = '[]' THEN errors ELSE ? END
		WHERE id = ? AND claim_token = ? AND (status <> 'cancelling' OR ? = 'cancelled')`,
		u.Status, ts(u.At), u.OutputFileID, u.OutputFileID, u.ErrorFileID, u.ErrorFileID, string(errs), string(errs), c.BatchID, c.Token, u.Status)
	if err != nil {
		return err
	}
	return affectedOne(res, "batch claim")
}

func scanLine(r *sql.Rows) (store.BatchLine, error) {
	var l store.BatchLine
	err := r.Scan(&l.BatchID, &l.Index, &l.CustomID, &l.Body, &l.Done, &l.Failed, &l.Result)
	return l, err
}

func (s batches) PendingBatchLines(ctx context.Context, batchID string, after, limit int) ([]store.BatchLine, error) {
	return readRows(ctx, s.db, `SELECT batch_id, idx, custom_id, body, done, failed, result FROM batch_lines
		WHERE batch_id = ? AND idx > ? AND done = 0 ORDER BY idx LIMIT ?`, []any{batchID, after, limit}, scanLine)
}

func (s batches) BatchLines(ctx context.Context, batchID string, after, limit int) ([]store.BatchLine, error) {
	return readRows(ctx, s.db, `SELECT batch_id, idx, custom_id, body, done, failed, result FROM batch_lines
		WHERE batch_id = ? AND idx > ? ORDER BY idx LIMIT ?`, []any{batchID, after, limit}, scanLine)
}

func (s batches) FinishBatchLine(ctx context.Context, batchID string, index int, failed bool, result string, costNanos int64) (bool, error) {
	done := false
	err := s.db.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE batch_lines SET done = 1, failed = ?, result = ? WHERE batch_id = ? AND idx = ? AND done = 0`,
			failed, result, batchID, index)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		done = true
		count := "completed"
		if failed {
			count = "failed"
		}
		_, err = tx.ExecContext(ctx, `UPDATE batches SET `+count+` = `+count+` + 1, cost_nanos = cost_nanos + ? WHERE id = ?`, costNanos, batchID)
		return err
	})
	return done, err
}
