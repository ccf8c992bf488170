package sqlite

import (
	"context"

	"github.com/parleyhq/parley/server/store"
)

func (a accounts) SetUserAdmin(ctx context.Context, id string, admin bool) (store.User, error) {
	var u store.User
	var created int64
	err := a.db.w.QueryRowContext(ctx, `UPDATE users SET admin = ? WHERE id = ?
		RETURNING id, email, display_name, password_hash, tier, admin, created_at`,
		boolInt(admin), id).Scan(userDest(&u, &created)...)
	if err != nil {
		return store.User{}, notFound(err, "user")
	}
	u.CreatedAt = fromTS(created)
	return u, nil
}

func (a accounts) SearchUsers(ctx context.Context, prefix string, p store.PageRequest) ([]store.User, string, error) {
	limit := p.Limit()
	// A byte-wise range over the unique index: 0xff never occurs in UTF-8,
	// so every key that starts with the prefix sorts below prefix+0xff.
	lo, hi := emailKey(prefix), emailKey(prefix)+"\xff"
	if p.Cursor != "" {
		_, last, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		lo = last + "\x00"
	}
	rows, err := a.db.r.QueryContext(ctx, `SELECT `+userCols+` FROM users u
		WHERE u.email_key >= ? AND u.email_key < ? ORDER BY u.email_key LIMIT ?`, lo, hi, limit+1)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.User
	for rows.Next() {
		var u store.User
		var created int64
		if err := rows.Scan(userDest(&u, &created)...); err != nil {
			return nil, "", err
		}
		u.CreatedAt = fromTS(created)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.User) (int64, string) { return 0, emailKey(v.Email) })
	return out, next, nil
}
