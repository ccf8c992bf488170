package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type conversations struct{ db *DB }

const convCols = `id, user_id, title, model, archived, created_at, updated_at, system_prompt, leaf_id, project_id, title_generated, pinned, folder`

type convScan struct {
	c                store.Conversation
	created, updated int64
}

func (s *convScan) dest() []any {
	return []any{&s.c.ID, &s.c.UserID, &s.c.Title, &s.c.Model, &s.c.Archived, &s.created, &s.updated, &s.c.SystemPrompt, &s.c.LeafID, &s.c.ProjectID, &s.c.TitleGenerated, &s.c.Pinned, &s.c.Folder}
}

func (s *convScan) conv() store.Conversation {
	c := s.c
	c.CreatedAt, c.UpdatedAt = fromTS(s.created), fromTS(s.updated)
	return c
}

func (c conversations) Create(ctx context.Context, v store.Conversation) error {
	_, err := c.db.exec(ctx, `INSERT INTO conversations (`+convCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		v.ID, v.UserID, v.Title, v.Model, v.Archived, ts(v.CreatedAt), ts(v.UpdatedAt), v.SystemPrompt, v.LeafID, v.ProjectID, v.TitleGenerated, v.Pinned, v.Folder)
	return err
}

func (c conversations) Get(ctx context.Context, userID, id string) (store.Conversation, error) {
	var s convScan
	err := c.db.conn().QueryRow(ctx, `SELECT `+convCols+` FROM conversations WHERE id = $1 AND user_id = $2`, id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Conversation{}, notFound(err, "conversation")
	}
	return s.conv(), nil
}

func (c conversations) List(ctx context.Context, userID string, f store.ConversationFilter, p store.PageRequest) ([]store.Conversation, string, error) {
	limit := p.Limit()
	q := `SELECT ` + convCols + ` FROM conversations WHERE user_id = $1`
	args := []any{userID}
	switch f.Archived {
	case store.ArchiveActive:
		q += ` AND NOT archived`
	case store.ArchiveArchived:
		q += ` AND archived`
	case store.ArchiveAll:
	default:
		return nil, "", fmt.Errorf("%w: unknown archive filter %d", store.ErrInvalidArgument, f.Archived)
	}
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if f.ProjectID != "" {
		q += ` AND project_id = ` + arg(f.ProjectID)
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (updated_at, id) < (` + arg(at) + `, ` + arg(id) + `)`
	}
	q += fmt.Sprintf(` ORDER BY updated_at DESC, id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, c.db, q, args, func(r pgx.Rows) (store.Conversation, error) {
		var s convScan
		err := r.Scan(s.dest()...)
		return s.conv(), err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.Conversation) (int64, string) { return ts(v.UpdatedAt), v.ID })
	return out, next, nil
}

func (c conversations) Update(ctx context.Context, userID, id string, patch store.ConversationPatch, now time.Time) (store.Conversation, error) {
	var s convScan
	err := c.db.conn().QueryRow(ctx, `UPDATE conversations
		SET title = coalesce($1, title), title_generated = CASE WHEN $1::text IS NULL THEN title_generated ELSE false END,
			archived = coalesce($2, archived), system_prompt = coalesce($6, system_prompt),
			leaf_id = coalesce($7, leaf_id), updated_at = greatest(updated_at, $3),
			pinned = coalesce($8, pinned), folder = coalesce($9, folder)
		WHERE id = $4 AND user_id = $5 RETURNING `+convCols,
		patch.Title, patch.Archived, ts(now), id, userID, patch.SystemPrompt, patch.LeafID, patch.Pinned, patch.Folder).Scan(s.dest()...)
	if err != nil {
		return store.Conversation{}, notFound(err, "conversation")
	}
	return s.conv(), nil
}

func (c conversations) Touch(ctx context.Context, userID, id string, now time.Time, titleIfEmpty string) error {
	tag, err := c.db.exec(ctx, `UPDATE conversations
		SET updated_at = greatest(updated_at, $1), title = CASE WHEN title = '' THEN $2 ELSE title END
		WHERE id = $3 AND user_id = $4`, ts(now), titleIfEmpty, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "conversation")
}

func (c conversations) SetLeaf(ctx context.Context, userID, id, leafID string) error {
	tag, err := c.db.exec(ctx, `UPDATE conversations SET leaf_id = $1 WHERE id = $2 AND user_id = $3`, leafID, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "conversation")
}

func (c conversations) Instructions(ctx context.Context, userID string) (string, error) {
	var text string
	err := c.db.conn().QueryRow(ctx, `SELECT instructions FROM chat_settings WHERE user_id = $1`, userID).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return text, err
}

func (c conversations) SetInstructions(ctx context.Context, userID, instructions string, now time.Time) error {
	_, err := c.db.exec(ctx, `INSERT INTO chat_settings (user_id, instructions, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (user_id) DO UPDATE SET instructions = excluded.instructions, updated_at = excluded.updated_at`,
		userID, instructions, ts(now))
	return err // an unknown user is the foreign key's ErrNotFound
}

func (c conversations) Delete(ctx context.Context, userID, id string) error {
	tag, err := c.db.exec(ctx, `DELETE FROM conversations WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "conversation")
}

func (c conversations) SetGeneratedTitle(ctx context.Context, userID, id, replaces, title string) (bool, error) {
	tag, err := c.db.exec(ctx, `UPDATE conversations SET title = $1, title_generated = true WHERE id = $2 AND user_id = $3 AND title = $4`,
		title, id, userID, replaces)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}
