package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type memories struct{ db *DB }

const memoryCols = `id, user_id, text, created_at, updated_at`

type memoryScan struct {
	m                store.Memory
	created, updated int64
}

func (s *memoryScan) dest() []any {
	return []any{&s.m.ID, &s.m.UserID, &s.m.Text, &s.created, &s.updated}
}

func (s *memoryScan) memory() store.Memory {
	m := s.m
	m.CreatedAt, m.UpdatedAt = fromTS(s.created), fromTS(s.updated)
	return m
}

func (ms memories) Create(ctx context.Context, m store.Memory, max int) error {
	var inserted bool
	err := pgx.BeginFunc(ctx, ms.db.conn(), func(tx pgx.Tx) error {
		// The user's lock serialises the count of one user's memories
		// across every gateway (as for projects).
		if _, err := tx.Exec(ctx, lockUser, m.UserID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO memories (`+memoryCols+`)
			SELECT $1, $2, $3, $4, $5
			WHERE (SELECT count(*) FROM memories WHERE user_id = $2) < $6::bigint`,
			m.ID, m.UserID, m.Text, ts(m.CreatedAt), ts(m.UpdatedAt), int64(max))
		inserted = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return mapErr(err)
	}
	if !inserted {
		return fmt.Errorf("%w: the user has %d memories already", store.ErrQuotaExceeded, max)
	}
	return nil
}

func (ms memories) List(ctx context.Context, userID string, p store.PageRequest) ([]store.Memory, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+memoryCols+` FROM memories WHERE user_id = $1`, []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (updated_at, id) < ($2, $3)`, append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY updated_at DESC, id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, ms.db, q, args, func(r pgx.Rows) (store.Memory, error) {
		var s memoryScan
		err := r.Scan(s.dest()...)
		return s.memory(), err
	})
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, next := store.Page(out, limit, func(v store.Memory) (int64, string) { return ts(v.UpdatedAt), v.ID })
	return out, next, nil
}

func (ms memories) Update(ctx context.Context, userID, id, text string, now time.Time) (store.Memory, error) {
	var s memoryScan
	err := ms.db.conn().QueryRow(ctx, `UPDATE memories SET text = $1, updated_at = greatest(updated_at, $2)
		WHERE id = $3 AND user_id = $4 RETURNING `+memoryCols, text, ts(now), id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Memory{}, notFound(err, "memory")
	}
	return s.memory(), nil
}

func (ms memories) Delete(ctx context.Context, userID, id string) error {
	tag, err := ms.db.exec(ctx, `DELETE FROM memories WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "memory")
}

func (ms memories) Enabled(ctx context.Context, userID string) (bool, error) {
	var off bool
	err := ms.db.conn().QueryRow(ctx, `SELECT memory_off FROM chat_settings WHERE user_id = $1`, userID).Scan(&off)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	return !off, err
}

func (ms memories) SetEnabled(ctx context.Context, userID string, on bool, now time.Time) error {
	// A user without settings gets a row with no instructions.
	_, err := ms.db.exec(ctx, `INSERT INTO chat_settings (user_id, instructions, updated_at, memory_off) VALUES ($1, '', $2, $3)
		ON CONFLICT (user_id) DO UPDATE SET memory_off = excluded.memory_off, updated_at = excluded.updated_at`,
		userID, ts(now), !on)
	return err // an unknown user is the foreign key's ErrNotFound
}
