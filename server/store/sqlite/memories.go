package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
	// One statement: the count and the insert cannot be separated by
	// another writer (the foreign key refuses an unknown user).
	res, err := ms.db.exec(ctx, `INSERT INTO memories (`+memoryCols+`)
		SELECT ?1, ?2, ?3, ?4, ?5
		WHERE (SELECT count(*) FROM memories WHERE user_id = ?2) < ?6`,
		m.ID, m.UserID, m.Text, ts(m.CreatedAt), ts(m.UpdatedAt), max)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: the user has %d memories already", store.ErrQuotaExceeded, max)
	}
	return nil
}

func (ms memories) List(ctx context.Context, userID string, p store.PageRequest) ([]store.Memory, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+memoryCols+` FROM memories WHERE user_id = ?`, []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (updated_at, id) < (?, ?)`, append(args, at, id)
	}
	out, err := readRows(ctx, ms.db, q+` ORDER BY updated_at DESC, id DESC LIMIT ?`, append(args, limit+1), func(r *sql.Rows) (store.Memory, error) {
		var s memoryScan
		err := r.Scan(s.dest()...)
		return s.memory(), err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.Memory) (int64, string) { return ts(v.UpdatedAt), v.ID })
	return out, next, nil
}

func (ms memories) Update(ctx context.Context, userID, id, text string, now time.Time) (store.Memory, error) {
	var s memoryScan
	err := ms.db.w.QueryRowContext(ctx, `UPDATE memories SET text = ?, updated_at = max(updated_at, ?)
		WHERE id = ? AND user_id = ? RETURNING `+memoryCols, text, ts(now), id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Memory{}, notFound(err, "memory")
	}
	return s.memory(), nil
}

func (ms memories) Delete(ctx context.Context, userID, id string) error {
	res, err := ms.db.exec(ctx, `DELETE FROM memories WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "memory")
}

func (ms memories) Enabled(ctx context.Context, userID string) (bool, error) {
	var off bool
	err := ms.db.r.QueryRowContext(ctx, `SELECT memory_off FROM chat_settings WHERE user_id = ?`, userID).Scan(&off)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	return !off, err
}

func (ms memories) SetEnabled(ctx context.Context, userID string, on bool, now time.Time) error {
	// A user without settings gets a row with no instructions.
	_, err := ms.db.exec(ctx, `INSERT INTO chat_settings (user_id, instructions, updated_at, memory_off) VALUES (?, '', ?, ?)
		ON CONFLICT (user_id) DO UPDATE SET memory_off = excluded.memory_off, updated_at = excluded.updated_at`,
		userID, ts(now), !on)
	return err // an unknown user is the foreign key's ErrNotFound
}
