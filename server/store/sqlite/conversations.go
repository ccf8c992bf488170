package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
	_, err := c.db.exec(ctx, `INSERT INTO conversations (`+convCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ID, v.UserID, v.Title, v.Model, boolInt(v.Archived), ts(v.CreatedAt), ts(v.UpdatedAt), v.SystemPrompt, v.LeafID, v.ProjectID, boolInt(v.TitleGenerated),
		boolInt(v.Pinned), v.Folder)
	return err
}

func (c conversations) Get(ctx context.Context, userID, id string) (store.Conversation, error) {
	var s convScan
	err := c.db.r.QueryRowContext(ctx, `SELECT `+convCols+` FROM conversations WHERE id = ? AND user_id = ?`, id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Conversation{}, notFound(err, "conversation")
	}
	return s.conv(), nil
}

func (c conversations) List(ctx context.Context, userID string, f store.ConversationFilter, p store.PageRequest) ([]store.Conversation, string, error) {
	limit := p.Limit()
	q := `SELECT ` + convCols + ` FROM conversations WHERE user_id = ?`
	args := []any{userID}
	switch f.Archived {
	case store.ArchiveActive:
		q += ` AND archived = 0`
	case store.ArchiveArchived:
		q += ` AND archived = 1`
	case store.ArchiveAll:
	default:
		return nil, "", fmt.Errorf("%w: unknown archive filter %d", store.ErrInvalidArgument, f.Archived)
	}
	if f.ProjectID != "" {
		q += ` AND project_id = ?`
		args = append(args, f.ProjectID)
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (updated_at, id) < (?, ?)`
		args = append(args, at, id)
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := c.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.Conversation
	for rows.Next() {
		var s convScan
		if err := rows.Scan(s.dest()...); err != nil {
			return nil, "", err
		}
		out = append(out, s.conv())
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.Conversation) (int64, string) { return ts(v.UpdatedAt), v.ID })
	return out, next, nil
}

func (c conversations) Update(ctx context.Context, userID, id string, patch store.ConversationPatch, now time.Time) (store.Conversation, error) {
	var title, archived, prompt, leaf, pinned, folder any
	if patch.Pinned != nil {
		pinned = boolInt(*patch.Pinned)
	}
	if patch.Folder != nil {
		folder = *patch.Folder
	}
	if patch.Title != nil {
		title = *patch.Title
	}
	if patch.SystemPrompt != nil {
		prompt = *patch.SystemPrompt
	}
	if patch.LeafID != nil {
		leaf = *patch.LeafID
	}
	if patch.Archived != nil {
		archived = boolInt(*patch.Archived)
	}
	var s convScan
	err := c.db.w.QueryRowContext(ctx, `UPDATE conversations
		SET title = coalesce(?1, title), title_generated = CASE WHEN ?1 IS NULL THEN title_generated ELSE 0 END,
			archived = coalesce(?2, archived), system_prompt = coalesce(?3, system_prompt),
			leaf_id = coalesce(?4, leaf_id), updated_at = max(updated_at, ?5),
			pinned = coalesce(?8, pinned), folder = coalesce(?9, folder)
		WHERE id = ?6 AND user_id = ?7 RETURNING `+convCols,
		title, archived, prompt, leaf, ts(now), id, userID, pinned, folder).Scan(s.dest()...)
	if err != nil {
		return store.Conversation{}, notFound(err, "conversation")
	}
	return s.conv(), nil
}

func (c conversations) Touch(ctx context.Context, userID, id string, now time.Time, titleIfEmpty string) error {
	res, err := c.db.exec(ctx, `UPDATE conversations
		SET updated_at = max(updated_at, ?), title = CASE WHEN title = '' THEN ? ELSE title END
		WHERE id = ? AND user_id = ?`, ts(now), titleIfEmpty, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "conversation")
}

func (c conversations) SetLeaf(ctx context.Context, userID, id, leafID string) error {
	res, err := c.db.exec(ctx, `UPDATE conversations SET leaf_id = ? WHERE id = ? AND user_id = ?`, leafID, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "conversation")
}

func (c conversations) Instructions(ctx context.Context, userID string) (string, error) {
	var text string
	err := c.db.r.QueryRowContext(ctx, `SELECT instructions FROM chat_settings WHERE user_id = ?`, userID).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return text, err
}

func (c conversations) SetInstructions(ctx context.Context, userID, instructions string, now time.Time) error {
	_, err := c.db.exec(ctx, `INSERT INTO chat_settings (user_id, instructions, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (user_id) DO UPDATE SET instructions = excluded.instructions, updated_at = excluded.updated_at`,
		userID, instructions, ts(now))
	return err // an unknown user is the foreign key's ErrNotFound
}

func (c conversations) Delete(ctx context.Context, userID, id string) error {
	res, err := c.db.exec(ctx, `DELETE FROM conversations WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "conversation")
}

func (c conversations) SetGeneratedTitle(ctx context.Context, userID, id, replaces, title string) (bool, error) {
	res, err := c.db.exec(ctx, `UPDATE conversations SET title = ?, title_generated = 1 WHERE id = ? AND user_id = ? AND title = ?`,
		title, id, userID, replaces)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
