package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

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
	// One statement: the count and the insert cannot be separated by
	// another writer. (An unknown user has no projects; the foreign key
	// refuses the insert.)
	res, err := ps.db.exec(ctx, `INSERT INTO projects (`+projectCols+`)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
		WHERE (SELECT count(*) FROM projects WHERE user_id = ?2) < ?8`,
		p.ID, p.UserID, p.Name, p.Instructions, p.VectorStoreID, ts(p.CreatedAt), ts(p.UpdatedAt), max)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: the user has %d projects already", store.ErrQuotaExceeded, max)
	}
	return nil
}

func (ps projects) Get(ctx context.Context, userID, id string) (store.Project, error) {
	var s projectScan
	err := ps.db.r.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects WHERE id = ? AND user_id = ?`, id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Project{}, notFound(err, "project")
	}
	return s.project(), nil
}

func (ps projects) List(ctx context.Context, userID string, p store.PageRequest) ([]store.Project, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+projectCols+` FROM projects WHERE user_id = ?`, []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (updated_at, id) < (?, ?)`, append(args, at, id)
	}
	out, err := readRows(ctx, ps.db, q+` ORDER BY updated_at DESC, id DESC LIMIT ?`, append(args, limit+1), func(r *sql.Rows) (store.Project, error) {
		var s projectScan
		err := r.Scan(s.dest()...)
		return s.project(), err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.Project) (int64, string) { return ts(v.UpdatedAt), v.ID })
	return out, next, nil
}

func (ps projects) Update(ctx context.Context, userID, id string, patch store.ProjectPatch, now time.Time) (store.Project, error) {
	var name, instructions any
	if patch.Name != nil {
		name = *patch.Name
	}
	if patch.Instructions != nil {
		instructions = *patch.Instructions
	}
	var s projectScan
	err := ps.db.w.QueryRowContext(ctx, `UPDATE projects
		SET name = coalesce(?, name), instructions = coalesce(?, instructions), updated_at = max(updated_at, ?)
		WHERE id = ? AND user_id = ? RETURNING `+projectCols,
		name, instructions, ts(now), id, userID).Scan(s.dest()...)
	if err != nil {
		return store.Project{}, notFound(err, "project")
	}
	return s.project(), nil
}

func (ps projects) Delete(ctx context.Context, userID, id string) error {
	res, err := ps.db.exec(ctx, `DELETE FROM projects WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "project")
}
