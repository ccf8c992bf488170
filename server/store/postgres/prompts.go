package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type prompts struct{ db *DB }

var _ store.Prompts = prompts{}

func (s prompts) ListPrompts(ctx context.Context, userID string) ([]store.SavedPrompt, error) {
	// The primary: a person sees the prompt it just saved.
	rows, err := s.db.conn().Query(ctx, `SELECT id, user_id, name, text, updated_at FROM saved_prompts WHERE user_id = $1 ORDER BY name`, userID)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectRows(rows, func(r pgx.Rows) (store.SavedPrompt, error) {
		var p store.SavedPrompt
		var at int64
		err := r.Scan(&p.ID, &p.UserID, &p.Name, &p.Text, &at)
		p.UpdatedAt = fromTS(at)
		return p, err
	})
}

func (s prompts) CreatePrompt(ctx context.Context, p store.SavedPrompt) error {
	var inserted bool
	err := pgx.BeginFunc(ctx, s.db.conn(), func(tx pgx.Tx) error {
		// The user's lock serialises the count of one user's prompts
		// across every gateway (as for memories).
		if _, err := tx.Exec(ctx, lockUser, p.UserID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO saved_prompts (id, user_id, name, text, updated_at)
			SELECT $1, $2, $3, $4, $5 WHERE (SELECT count(*) FROM saved_prompts WHERE user_id = $2) < $6::bigint`,
			p.ID, p.UserID, p.Name, p.Text, ts(p.UpdatedAt), int64(store.MaxSavedPrompts))
		inserted = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return mapErr(err)
	}
	if !inserted {
		return fmt.Errorf("%w: %d saved prompts already", store.ErrQuotaExceeded, store.MaxSavedPrompts)
	}
	return nil
}

func (s prompts) UpdatePrompt(ctx context.Context, p store.SavedPrompt) error {
	tag, err := s.db.exec(ctx, `UPDATE saved_prompts SET name = $1, text = $2, updated_at = $3 WHERE id = $4 AND user_id = $5`,
		p.Name, p.Text, ts(p.UpdatedAt), p.ID, p.UserID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "saved prompt")
}

func (s prompts) DeletePrompt(ctx context.Context, userID, id string) error {
	tag, err := s.db.exec(ctx, `DELETE FROM saved_prompts WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "saved prompt")
}
