package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

func (a accounts) SetUserAdmin(ctx context.Context, id string, admin bool) (store.User, error) {
	var u store.User
	var created int64
	err := a.db.pool.QueryRow(ctx, `UPDATE users SET admin = $1 WHERE id = $2
		RETURNING id, email, display_name, password_hash, tier, admin, created_at`,
		admin, id).Scan(userDest(&u, &created)...)
	if err != nil {
		return store.User{}, notFound(err, "user")
	}
	u.CreatedAt = fromTS(created)
	return u, nil
}

// likeEscaper makes a string match itself in LIKE … ESCAPE '\'.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

func (a accounts) SearchUsers(ctx context.Context, prefix string, p store.PageRequest) ([]store.User, string, error) {
	limit := p.Limit()
	// COLLATE "C": byte order, the same in every database and the same as
	// the cursor's comparison.
	q := `SELECT ` + userCols + ` FROM users u WHERE u.email_key LIKE $1 ESCAPE '\'`
	args := []any{likeEscaper.Replace(emailKey(prefix)) + "%"}
	if p.Cursor != "" {
		_, last, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND u.email_key COLLATE "C" > $2`
		args = append(args, last)
	}
	q += fmt.Sprintf(` ORDER BY u.email_key COLLATE "C" LIMIT %d`, limit+1)
	rows, err := a.db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	out, err := collectRows(rows, func(r pgx.Rows) (store.User, error) {
		var u store.User
		var created int64
		err := r.Scan(userDest(&u, &created)...)
		u.CreatedAt = fromTS(created)
		return u, err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.User) (int64, string) { return 0, emailKey(v.Email) })
	return out, next, nil
}
