package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/server/store"
)

type attachments struct{ db *DB }

const attCols = `id, user_id, filename, mime_type, size_bytes, sha256, status, failure_reason, width, height, created_at, expires_at`

type attScan struct {
	a       store.Attachment
	created int64
	expires sql.NullInt64
}

func (s *attScan) dest() []any {
	return []any{&s.a.ID, &s.a.UserID, &s.a.Filename, &s.a.MimeType, &s.a.SizeBytes, &s.a.SHA256, (*string)(&s.a.Status),
		&s.a.FailureReason, &s.a.Width, &s.a.Height, &s.created, &s.expires}
}

func (s *attScan) att() store.Attachment {
	a := s.a
	a.CreatedAt, a.ExpiresAt = fromTS(s.created), fromNullTS(s.expires)
	return a
}

func (at attachments) Create(ctx context.Context, a store.Attachment, quotaBytes int64) error {
	if a.SizeBytes < 0 {
		return fmt.Errorf("%w: negative attachment size", store.ErrInvalidArgument)
	}
	if a.Status == "" {
		a.Status = store.AttachmentUploading
	}
	// One statement: the quota check and the insert cannot be separated by
	// another writer.
	res, err := at.db.exec(ctx, `INSERT INTO attachments (`+attCols+`)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12
		WHERE ?5 <= ?13 AND ?5 + (SELECT coalesce(sum(size_bytes), 0) FROM attachments
		                          WHERE user_id = ?2 AND status != 'failed') <= ?13`,
		a.ID, a.UserID, a.Filename, a.MimeType, a.SizeBytes, a.SHA256, string(a.Status), a.FailureReason,
		a.Width, a.Height, ts(a.CreatedAt), nullTS(a.ExpiresAt), quotaBytes)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %d more bytes would pass the quota of %d", store.ErrQuotaExceeded, a.SizeBytes, quotaBytes)
	}
	return nil
}

func (at attachments) Get(ctx context.Context, userID, id string) (store.Attachment, error) {
	var s attScan
	err := at.db.r.QueryRowContext(ctx, `SELECT `+attCols+` FROM attachments WHERE id = ? AND user_id = ?`, id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Attachment{}, notFound(err, "attachment")
	}
	return s.att(), nil
}

func (at attachments) SetStatus(ctx context.Context, id string, r store.AttachmentResult) (store.Attachment, error) {
	if r.Status != store.AttachmentReady && r.Status != store.AttachmentFailed {
		return store.Attachment{}, fmt.Errorf("%w: attachment status %q is not ready or failed", store.ErrInvalidArgument, r.Status)
	}
	var s attScan
	err := at.db.w.QueryRowContext(ctx, `UPDATE attachments
		SET status = ?, failure_reason = ?, width = ?, height = ?, mime_type = CASE WHEN ? = '' THEN mime_type ELSE ? END
		WHERE id = ? AND status = 'uploading' RETURNING `+attCols,
		string(r.Status), r.FailureReason, r.Width, r.Height, r.MimeType, r.MimeType, id).Scan(s.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		var status string
		err := at.db.w.QueryRowContext(ctx, `SELECT status FROM attachments WHERE id = ?`, id).Scan(&status)
		if err != nil {
			return store.Attachment{}, notFound(err, "attachment")
		}
		return store.Attachment{}, fmt.Errorf("%w: attachment is %s, not uploading", store.ErrConflict, status)
	}
	if err != nil {
		return store.Attachment{}, err
	}
	return s.att(), nil
}

func (at attachments) Delete(ctx context.Context, userID, id string) error {
	res, err := at.db.exec(ctx, `DELETE FROM attachments WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "attachment")
}

func (at attachments) ExpireUploads(ctx context.Context, now time.Time) ([]store.Attachment, error) {
	rows, err := at.db.w.QueryContext(ctx, `UPDATE attachments
		SET status = 'failed', failure_reason = ?
		WHERE status = 'uploading' AND expires_at IS NOT NULL AND expires_at <= ? RETURNING `+attCols,
		store.UploadExpiredReason, ts(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Attachment
	for rows.Next() {
		var s attScan
		if err := rows.Scan(s.dest()...); err != nil {
			return nil, err
		}
		out = append(out, s.att())
	}
	return out, rows.Err()
}
