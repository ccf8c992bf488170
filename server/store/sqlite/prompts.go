package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/parleyhq/parley/server/store"
)

type prompts struct{ db *DB }

var _ store.Prompts = prompts{}

func (s prompts) ListPrompts(ctx context.Context, userID string) ([]store.SavedPrompt, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT id, user_id, name, text, updated_at FROM saved_prompts WHERE user_id = ? ORDER BY name`, userID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.SavedPrompt, error) {
		var p store.SavedPrompt
		var at int64
		err := r.Scan(&p.ID, &p.UserID, &p.Name, &p.Text, &at)
		p.UpdatedAt = fromTS(at)
		return p, err
	})
}

func (s prompts) CreatePrompt(ctx context.Context, p store.SavedPrompt) error {
	// One statement: the count and the insert cannot be separated by
	// another writer.
	res, err := s.db.exec(ctx, `INSERT INTO saved_prompts (id, user_id, name, text, updated_at)
		SELECT ?1, ?2, ?3, ?4, ?5 WHERE (SELECT count(*) FROM saved_prompts WHERE user_id = ?2) < ?6`,
		p.ID, p.UserID, p.Name, p.Text, ts(p.UpdatedAt), store.MaxSavedPrompts)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %d saved prompts already", store.ErrQuotaExceeded, store.MaxSavedPrompts)
	}
	return nil
}

func (s prompts) UpdatePrompt(ctx context.Context, p store.SavedPrompt) error {
	res, err := s.db.exec(ctx, `UPDATE saved_prompts SET name = ?, text = ?, updated_at = ? WHERE id = ? AND user_id = ?`,
		p.Name, p.Text, ts(p.UpdatedAt), p.ID, p.UserID)
	if err != nil {
		return err
	}
	return affectedOne(res, "saved prompt")
}

func (s prompts) DeletePrompt(ctx context.Context, userID, id string) error {
	res, err := s.db.exec(ctx, `DELETE FROM saved_prompts WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "saved prompt")
}
