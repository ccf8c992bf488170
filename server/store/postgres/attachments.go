package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type attachments struct{ db *DB }

const attCols = `id, user_id, filename, mime_type, size_bytes, sha256, status, failure_reason, width, height, created_at, expires_at, purpose, delete_at`

type attScan struct {
	a        store.Attachment
	created  int64
	expires  *int64
	deleteAt *int64
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
	var inserted bool
	err := pgx.BeginFunc(ctx, at.db.conn(), func(tx pgx.Tx) error {
		// The user's lock serialises quota checks of one user across
		// every gateway; READ COMMITTED alone would let two inserts both
		// see the same sum.
		if _, err := tx.Exec(ctx, lockUser, a.UserID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO attachments (`+attCols+`)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14, $15
			WHERE $5 <= $13::bigint AND $5 + (SELECT coalesce(sum(size_bytes), 0) FROM attachments
			                          WHERE user_id = $2 AND status <> 'failed' AND claimed_at IS NULL) <= $13::bigint`,
			a.ID, a.UserID, a.Filename, a.MimeType, a.SizeBytes, a.SHA256, string(a.Status), a.FailureReason,
			a.Width, a.Height, ts(a.CreatedAt), nullTS(a.ExpiresAt), quotaBytes, a.Purpose, nullTS(a.DeleteAt))
		inserted = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return mapErr(err)
	}
	if !inserted {
		return fmt.Errorf("%w: %d more bytes would pass the quota of %d", store.ErrQuotaExceeded, a.SizeBytes, quotaBytes)
	}
	return nil
}

func (at attachments) Get(ctx context.Context, userID, id string) (store.Attachment, error) {
	var s attScan
	err := at.db.conn().QueryRow(ctx, `SELECT `+attCols+` FROM attachments WHERE id = $1 AND user_id = $2 AND claimed_at IS NULL`, id, userID).Scan(s.dest()...)
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
	err := at.db.conn().QueryRow(ctx, `UPDATE attachments
		SET status = $1, failure_reason = $2, width = $3, height = $4, mime_type = CASE WHEN $5 = '' THEN mime_type ELSE $5 END
		WHERE id = $6 AND status = 'uploading' RETURNING `+attCols,
		string(r.Status), r.FailureReason, r.Width, r.Height, r.MimeType, id).Scan(s.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		var status string
		err := at.db.conn().QueryRow(ctx, `SELECT status FROM attachments WHERE id = $1`, id).Scan(&status)
		if err != nil {
			return store.Attachment{}, notFound(err, "attachment")
		}
		return store.Attachment{}, fmt.Errorf("%w: attachment is %s, not uploading", store.ErrConflict, status)
	}
	if err != nil {
		return store.Attachment{}, mapErr(err)
	}
	return s.att(), nil
}

func (at attachments) Delete(ctx context.Context, userID, id string) error {
	tag, err := at.db.exec(ctx, `DELETE FROM attachments WHERE id = $1 AND user_id = $2 AND claimed_at IS NULL`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "attachment")
}

func (at attachments) ExpireUploads(ctx context.Context, now time.Time) ([]store.Attachment, error) {
	rows, err := at.db.conn().Query(ctx, `UPDATE attachments
		SET status = 'failed', failure_reason = $1
		WHERE status = 'uploading' AND expires_at IS NOT NULL AND expires_at <= $2`+at.db.owned("user_id", true)+` RETURNING `+attCols,
		store.UploadExpiredReason, ts(now))
	return scanAttachments(rows, err)
}

func scanAttachments(rows pgx.Rows, err error) ([]store.Attachment, error) {
	if err != nil {
		return nil, mapErr(err)
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
	return out, mapErr(rows.Err())
}

func (at attachments) Reference(ctx context.Context, userID string, ids []string, now time.Time) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return nil
	}
	// All or none: a row a sweeper holds (its claim in flight) is waited
	// for, then seen claimed, and the whole mark is rolled back.
	err := pgx.BeginFunc(ctx, at.db.conn(), func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE attachments SET referenced_at = coalesce(referenced_at, $3)
			WHERE user_id = $1 AND id = ANY($2) AND claimed_at IS NULL`, userID, ids, ts(now))
		if err != nil {
			return err
		}
		if tag.RowsAffected() != int64(len(ids)) {
			return fmt.Errorf("%w: attachment", store.ErrNotFound)
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return err
	}
	return mapErr(err)
}

func (at attachments) ClaimUnreferenced(ctx context.Context, now, createdBefore, reclaimBefore time.Time, limit int) ([]store.Attachment, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: claim limit %d is not positive", store.ErrInvalidArgument, limit)
	}
	// SKIP LOCKED: sweepers on other gateways claim other rows, and a row a
	// message is being referenced by is left alone (FOR UPDATE rechecks
	// one changed meanwhile, so a fresh reference is seen).
	rows, err := at.db.conn().Query(ctx, `UPDATE attachments SET claimed_at = $1
		WHERE id IN (SELECT id FROM attachments
		             WHERE referenced_at IS NULL AND purpose = '' AND created_at <= $2 AND status <> 'uploading'
		               AND (claimed_at IS NULL OR claimed_at <= $3)`+at.db.owned("user_id", true)+`
		             ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED)
		RETURNING `+attCols, ts(now), ts(createdBefore), ts(reclaimBefore), limit)
	return scanAttachments(rows, err)
}

func (at attachments) ListFiles(ctx context.Context, userID string, q store.FileQuery) ([]store.Attachment, error) {
	if q.Limit <= 0 {
		return nil, fmt.Errorf("%w: file list limit %d is not positive", store.ErrInvalidArgument, q.Limit)
	}
	order, after := "DESC", "($3 = '' OR id < $3)"
	if q.Ascending {
		order, after = "ASC", "($3 = '' OR id > $3)"
	}
	rows, err := at.db.conn().Query(ctx, `SELECT `+attCols+` FROM attachments
		WHERE user_id = $1 AND purpose <> '' AND ($2 = '' OR purpose = $2) AND `+after+` AND claimed_at IS NULL
		ORDER BY id `+order+` LIMIT $4`, userID, q.Purpose, q.After, q.Limit)
	return scanAttachments(rows, err)
}

func (at attachments) ClaimExpired(ctx context.Context, now, reclaimBefore time.Time, limit int) ([]store.Attachment, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: claim limit %d is not positive", store.ErrInvalidArgument, limit)
	}
	rows, err := at.db.conn().Query(ctx, `UPDATE attachments SET claimed_at = $1
		WHERE id IN (SELECT id FROM attachments
		             WHERE delete_at IS NOT NULL AND delete_at <= $1
		               AND (claimed_at IS NULL OR claimed_at <= $2)`+at.db.owned("user_id", true)+`
		             ORDER BY delete_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING `+attCols, ts(now), ts(reclaimBefore), limit)
	return scanAttachments(rows, err)
}

func (at attachments) Purge(ctx context.Context, id string) error {
	_, err := at.db.exec(ctx, `DELETE FROM attachments WHERE id = $1 AND claimed_at IS NOT NULL`, id)
	return err
}
