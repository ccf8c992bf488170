package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/parleyhq/parley/server/store"
)

type attachments struct{ db *DB }

const attCols = `id, user_id, filename, mime_type, size_bytes, sha256, status, failure_reason, width, height, created_at, expires_at, purpose, delete_at`

type attScan struct {
	a        store.Attachment
	created  int64
	expires  sql.NullInt64
	deleteAt sql.NullInt64
}

func (s *attScan) dest() []any {
	return []any{&s.a.ID, &s.a.UserID, &s.a.Filename, &s.a.MimeType, &s.a.SizeBytes, &s.a.SHA256, (*string)(&s.a.Status),
		&s.a.FailureReason, &s.a.Width, &s.a.Height, &s.created, &s.expires, &s.a.Purpose, &s.deleteAt}
}

func (s *attScan) att() store.Attachment {
	a := s.a
	a.CreatedAt, a.ExpiresAt, a.DeleteAt = fromTS(s.created), fromNullTS(s.expires), fromNullTS(s.deleteAt)
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
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?14, ?15
		WHERE ?5 <= ?13 AND ?5 + (SELECT coalesce(sum(size_bytes), 0) FROM attachments
		                          WHERE user_id = ?2 AND status != 'failed' AND claimed_at IS NULL) <= ?13`,
		a.ID, a.UserID, a.Filename, a.MimeType, a.SizeBytes, a.SHA256, string(a.Status), a.FailureReason,
		a.Width, a.Height, ts(a.CreatedAt), nullTS(a.ExpiresAt), quotaBytes, a.Purpose, nullTS(a.DeleteAt))
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
	err := at.db.r.QueryRowContext(ctx, `SELECT `+attCols+` FROM attachments WHERE id = ? AND user_id = ? AND claimed_at IS NULL`, id, userID).Scan(s.dest()...)
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
	res, err := at.db.exec(ctx, `DELETE FROM attachments WHERE id = ? AND user_id = ? AND claimed_at IS NULL`, id, userID)
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
	return scanAttachments(rows, err)
}

func scanAttachments(rows *sql.Rows, err error) ([]store.Attachment, error) {
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

func (at attachments) Reference(ctx context.Context, userID string, ids []string, now time.Time) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	// One statement: all of them are marked, or (one is missing or claimed)
	// none; a sweeper's claim cannot come between the check and the mark.
	res, err := at.db.exec(ctx, `UPDATE attachments SET referenced_at = coalesce(referenced_at, ?3)
		WHERE user_id = ?1 AND claimed_at IS NULL AND id IN (SELECT value FROM json_each(?2))
		  AND (SELECT count(*) FROM attachments WHERE user_id = ?1 AND claimed_at IS NULL
		       AND id IN (SELECT value FROM json_each(?2))) = ?4`,
		userID, string(list), ts(now), len(ids))
	if err != nil {
		return err
	}
	return affectedOne(res, "attachment")
}

func (at attachments) ClaimUnreferenced(ctx context.Context, now, createdBefore, reclaimBefore time.Time, limit int) ([]store.Attachment, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: claim limit %d is not positive", store.ErrInvalidArgument, limit)
	}
	// SQLite has one writer: the select and the update are one step.
	rows, err := at.db.w.QueryContext(ctx, `UPDATE attachments SET claimed_at = ?1
		WHERE id IN (SELECT id FROM attachments
		             WHERE referenced_at IS NULL AND purpose = '' AND created_at <= ?2 AND status != 'uploading'
		               AND (claimed_at IS NULL OR claimed_at <= ?3)
		             ORDER BY created_at LIMIT ?4)
		RETURNING `+attCols, ts(now), ts(createdBefore), ts(reclaimBefore), limit)
	return scanAttachments(rows, err)
}

func (at attachments) ListFiles(ctx context.Context, userID string, q store.FileQuery) ([]store.Attachment, error) {
	if q.Limit <= 0 {
		return nil, fmt.Errorf("%w: file list limit %d is not positive", store.ErrInvalidArgument, q.Limit)
	}
	order, after := "DESC", "(?3 = '' OR id < ?3)"
	if q.Ascending {
		order, after = "ASC", "(?3 = '' OR id > ?3)"
	}
	rows, err := at.db.r.QueryContext(ctx, `SELECT `+attCols+` FROM attachments
		WHERE user_id = ?1 AND purpose != '' AND (?2 = '' OR purpose = ?2) AND `+after+` AND claimed_at IS NULL
		ORDER BY id `+order+` LIMIT ?4`, userID, q.Purpose, q.After, q.Limit)
	return scanAttachments(rows, err)
}

func (at attachments) ClaimExpired(ctx context.Context, now, reclaimBefore time.Time, limit int) ([]store.Attachment, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: claim limit %d is not positive", store.ErrInvalidArgument, limit)
	}
	rows, err := at.db.w.QueryContext(ctx, `UPDATE attachments SET claimed_at = ?1
		WHERE id IN (SELECT id FROM attachments
		             WHERE delete_at IS NOT NULL AND delete_at <= ?1
		               AND (claimed_at IS NULL OR claimed_at <= ?2)
		             ORDER BY delete_at LIMIT ?3)
		RETURNING `+attCols, ts(now), ts(reclaimBefore), limit)
	return scanAttachments(rows, err)
}

func (at attachments) Purge(ctx context.Context, id string) error {
	_, err := at.db.exec(ctx, `DELETE FROM attachments WHERE id = ? AND claimed_at IS NOT NULL`, id)
	return err
}
