package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type audit struct{ db *DB }

func (a audit) Append(ctx context.Context, e store.AuditEvent) error {
	_, err := a.db.exec(ctx, `INSERT INTO audit_log (id, user_id, kind, ip, user_agent, detail, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id, at) DO NOTHING`,
		e.ID, e.UserID, e.Kind, e.IP, e.UserAgent, e.Detail, ts(e.At))
	return err
}

func (a audit) List(ctx context.Context, userID string, p store.PageRequest) ([]store.AuditEvent, string, error) {
	limit := p.Limit()
	q := `SELECT id, user_id, kind, ip, user_agent, detail, at FROM audit_log WHERE user_id = $1`
	args := []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (at, id) < ($2, $3)`
		args = append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY at DESC, id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, a.db, q, args, func(r pgx.Rows) (store.AuditEvent, error) {
		var e store.AuditEvent
		var at int64
		err := r.Scan(&e.ID, &e.UserID, &e.Kind, &e.IP, &e.UserAgent, &e.Detail, &at)
		e.At = fromTS(at)
		return e, err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.AuditEvent) (int64, string) { return ts(v.At), v.ID })
	return out, next, nil
}
