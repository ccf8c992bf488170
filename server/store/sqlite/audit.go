package sqlite

import (
	"context"

	"github.com/parleyhq/parley/server/store"
)

type audit struct{ db *DB }

func (a audit) Append(ctx context.Context, e store.AuditEvent) error {
	_, err := a.db.exec(ctx, `INSERT INTO audit_log (id, user_id, kind, ip, user_agent, detail, at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		e.ID, e.UserID, e.Kind, e.IP, e.UserAgent, e.Detail, ts(e.At))
	return err
}

func (a audit) List(ctx context.Context, userID string, p store.PageRequest) ([]store.AuditEvent, string, error) {
	limit := p.Limit()
	q := `SELECT id, user_id, kind, ip, user_agent, detail, at FROM audit_log WHERE user_id = ?`
	args := []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (at, id) < (?, ?)`
		args = append(args, at, id)
	}
	q += ` ORDER BY at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := a.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.AuditEvent
	for rows.Next() {
		var e store.AuditEvent
		var at int64
		if err := rows.Scan(&e.ID, &e.UserID, &e.Kind, &e.IP, &e.UserAgent, &e.Detail, &at); err != nil {
			return nil, "", err
		}
		e.At = fromTS(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.AuditEvent) (int64, string) { return ts(v.At), v.ID })
	return out, next, nil
}
