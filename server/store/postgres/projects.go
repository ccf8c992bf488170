package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type projects struct{ db *DB }

const projectCols = `id, user_id, name, instructions, vector_store_id, created_at, updated_at`

type projectScan struct {
	p                store.Project
	created, updated int64
}

func (s *projectScan) dest() []any {
	return []any{&s.p.ID, &s.p.UserID, &s.p.Name, &s.p.Instructions, &s.p.VectorStoreID, &s.created, &s.updated}
}

func (s *projectScan) project() store.Project {
	p := s.p
	p.CreatedAt, p.UpdatedAt = fromTS(s.created), fromTS(s.updated)
	return p
}

func (ps projects) Create(ctx context.Context, p store.Project, max int) error {
	var inserted bool
	err := pgx.BeginFunc(ctx, ps.db.conn(), func(tx pgx.Tx) error {
		// The user's lock serialises the count of one user's projects
		// across every gateway; READ COMMITTED alone would let two inserts
		// both see the same count.
		if _, err := tx.Exec(ctx, lockUser, p.UserID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO projects (`+projectCols+`)
			SELECT $1, $2, $3, $4, $5, $6, $7
			WHERE (SELECT count(*) FROM projects WHERE user_id = $2) < $8::bigint`,
			p.ID, p.UserID, p.Name, p.Instructions, p.VectorStoreID, ts(p.CreatedAt), ts(p.UpdatedAt), int64(max))
		inserted = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return mapErr(err)
	}
	if !inserted {
		return fmt.Errorf("%w: the user has %d projects already", store.ErrQuotaExceeded, max)
	}
	return nil
}

func (ps projects) Get(ctx context.Context, userID, id string) (store.Project, error) {
	var s projectScan
	err := ps.db.conn().QueryRow(ctx, `SELECT `+projectCols+` FROM projects WHERE id = $1 AND user_id = $2`, id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Project{}, notFound(err, "project")
	}
	return s.project(), nil
}

func (ps projects) List(ctx context.Context, userID string, p store.PageRequest) ([]store.Project, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+projectCols+` FROM projects WHERE user_id = $1`, []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (updated_at, id) < ($2, $3)`, append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY updated_at DESC, id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, ps.db, q, args, func(r pgx.Rows) (store.Project, error) {
		var s projectScan
		err := r.Scan(s.dest()...)
		return s.project(), err
	})
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, next := store.Page(out, limit, func(v store.Project) (int64, string) { return ts(v.UpdatedAt), v.ID })
	return out, next, nil
}

func (ps projects) Update(ctx context.Context, userID, id string, patch store.ProjectPatch, now time.Time) (store.Project, error) {
	var s projectScan
	err := ps.db.conn().QueryRow(ctx, `UPDATE projects
		SET name = coalesce($1, name), instructions = coalesce($2, instructions), updated_at = greatest(updated_at, $3)
		WHERE id = $4 AND user_id = $5 RETURNING `+projectCols,
		patch.Name, patch.Instructions, ts(now), id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Project{}, notFound(err, "project")
	}
	return s.project(), nil
}

func (ps projects) Delete(ctx context.Context, userID, id string) error {
	tag, err := ps.db.exec(ctx, `DELETE FROM projects WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "project")
}
