package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type accounts struct{ db *DB }

// emailKey is the case-insensitive form of an email used for uniqueness.
func emailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

const userCols = `u.id, u.email, u.display_name, u.password_hash, u.tier, u.admin, u.created_at`

func userDest(u *store.User, created *int64) []any {
	return []any{&u.ID, &u.Email, &u.DisplayName, &u.PasswordHash, (*string)(&u.Tier), &u.Admin, created}
}

func (a accounts) CreateUser(ctx context.Context, u store.User) error {
	if u.Tier == "" {
		u.Tier = store.TierFree
	}
	if !u.Tier.Valid() {
		return fmt.Errorf("%w: unknown tier %q", store.ErrInvalidArgument, u.Tier)
	}
	_, err := a.db.exec(ctx, insertUser, userArgs(u)...)
	return err
}

const insertUser = `INSERT INTO users (id, email, email_key, display_name, password_hash, tier, admin, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

func userArgs(u store.User) []any {
	return []any{u.ID, u.Email, emailKey(u.Email), u.DisplayName, u.PasswordHash, string(u.Tier), u.Admin, ts(u.CreatedAt)}
}

func (a accounts) getUser(ctx context.Context, where string, args ...any) (store.User, error) {
	var u store.User
	var created int64
	err := a.db.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE `+where, args...).Scan(userDest(&u, &created)...)
	if err != nil {
		return store.User{}, notFound(err, "user")
	}
	u.CreatedAt = fromTS(created)
	return u, nil
}

func (a accounts) GetUser(ctx context.Context, id string) (store.User, error) {
	return a.getUser(ctx, `u.id = $1`, id)
}

func (a accounts) GetUserByEmail(ctx context.Context, email string) (store.User, error) {
	return a.getUser(ctx, `u.email_key = $1`, emailKey(email))
}

func (a accounts) GetUserByIdentity(ctx context.Context, issuer, subject string) (store.User, error) {
	return a.getUser(ctx, `u.id = (SELECT user_id FROM identities WHERE issuer = $1 AND subject = $2)`, issuer, subject)
}

func (a accounts) LinkIdentity(ctx context.Context, id store.Identity) error {
	_, err := a.db.exec(ctx, `INSERT INTO identities (issuer, subject, user_id, created_at) VALUES ($1, $2, $3, $4)`,
		id.Issuer, id.Subject, id.UserID, ts(id.CreatedAt))
	return err
}

func (a accounts) SetUserTier(ctx context.Context, id string, tier store.Tier) (store.User, error) {
	if !tier.Valid() {
		return store.User{}, fmt.Errorf("%w: unknown tier %q", store.ErrInvalidArgument, tier)
	}
	var u store.User
	var created int64
	err := a.db.pool.QueryRow(ctx, `UPDATE users u SET tier = $1 WHERE id = $2 RETURNING `+userCols,
		string(tier), id).Scan(userDest(&u, &created)...)
	if err != nil {
		return store.User{}, notFound(err, "user")
	}
	u.CreatedAt = fromTS(created)
	return u, nil
}

func (a accounts) CreateSession(ctx context.Context, s store.Session) error {
	if len(s.TokenHash) == 0 {
		return fmt.Errorf("%w: empty session token hash", store.ErrInvalidArgument)
	}
	_, err := a.db.exec(ctx, `INSERT INTO sessions (token_hash, user_id, ip, user_agent, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		s.TokenHash, s.UserID, s.IP, s.UserAgent, ts(s.CreatedAt), ts(s.ExpiresAt))
	return err
}

func (a accounts) GetSession(ctx context.Context, tokenHash []byte) (store.Session, store.User, error) {
	var s store.Session
	var u store.User
	var sc, se, uc int64
	dest := append([]any{&s.TokenHash, &s.UserID, &s.IP, &s.UserAgent, &sc, &se}, userDest(&u, &uc)...)
	err := a.db.pool.QueryRow(ctx, `SELECT s.token_hash, s.user_id, s.ip, s.user_agent, s.created_at, s.expires_at, `+userCols+`
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1`, tokenHash).Scan(dest...)
	if err != nil {
		return store.Session{}, store.User{}, notFound(err, "session")
	}
	s.CreatedAt, s.ExpiresAt, u.CreatedAt = fromTS(sc), fromTS(se), fromTS(uc)
	return s, u, nil
}

func (a accounts) DeleteSession(ctx context.Context, tokenHash []byte) error {
	_, err := a.db.exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, tokenHash)
	return err
}

func (a accounts) DeleteExpiredSessions(ctx context.Context, now time.Time) (int64, error) {
	tag, err := a.db.exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, ts(now))
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (a accounts) CreateAPIKey(ctx context.Context, k store.APIKey) error {
	if len(k.SecretHash) == 0 {
		return fmt.Errorf("%w: empty API key secret hash", store.ErrInvalidArgument)
	}
	if !k.ResponseCache.Valid() {
		return fmt.Errorf("%w: API key response cache mode %q", store.ErrInvalidArgument, k.ResponseCache)
	}
	_, err := a.db.exec(ctx, `INSERT INTO api_keys (id, user_id, name, prefix, secret_hash, created_at, expires_at, response_cache,
			org_id, team_id, created_by, models, allowed_ips, rpm, tpm)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		k.ID, k.UserID, k.Name, k.Prefix, k.SecretHash, ts(k.CreatedAt), ts(k.ExpiresAt), string(k.ResponseCache),
		k.OrgID, k.TeamID, k.CreatedBy, jsonList(k.Models), jsonList(k.AllowedIPs), k.RPM, k.TPM)
	return err
}

const keyCols = `k.id, k.user_id, k.name, k.prefix, k.secret_hash, k.created_at, k.expires_at, k.last_used_at, k.revoked_at, k.response_cache,
	k.org_id, k.team_id, k.created_by, k.models, k.allowed_ips, k.rpm, k.tpm`

type keyScan struct {
	k                store.APIKey
	created, expires int64
	used, revoked    *int64
	models, ips      string
}

func (s *keyScan) dest() []any {
	return []any{&s.k.ID, &s.k.UserID, &s.k.Name, &s.k.Prefix, &s.k.SecretHash, &s.created, &s.expires, &s.used, &s.revoked, &s.k.ResponseCache,
		&s.k.OrgID, &s.k.TeamID, &s.k.CreatedBy, &s.models, &s.ips, &s.k.RPM, &s.k.TPM}
}

func (s *keyScan) key() store.APIKey {
	k := s.k
	k.CreatedAt, k.ExpiresAt = fromTS(s.created), fromTS(s.expires)
	k.LastUsedAt, k.RevokedAt = fromNullTS(s.used), fromNullTS(s.revoked)
	k.Models, k.AllowedIPs = listOf(s.models), listOf(s.ips)
	return k
}

// jsonList and listOf store a list of strings as a JSON array.
func jsonList(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func listOf(s string) []string {
	var v []string
	_ = json.Unmarshal([]byte(s), &v)
	return v
}

func (a accounts) GetAPIKeyByHash(ctx context.Context, secretHash []byte) (store.APIKey, store.User, error) {
	var ks keyScan
	var u store.User
	var uc int64
	err := a.db.pool.QueryRow(ctx, `SELECT `+keyCols+`, `+userCols+`
		FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.secret_hash = $1 AND k.revoked_at IS NULL`, secretHash).Scan(append(ks.dest(), userDest(&u, &uc)...)...)
	if err != nil {
		return store.APIKey{}, store.User{}, notFound(err, "API key")
	}
	u.CreatedAt = fromTS(uc)
	return ks.key(), u, nil
}

func (a accounts) GetAPIKey(ctx context.Context, id string) (store.APIKey, error) {
	var ks keyScan
	err := a.db.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys k WHERE k.id = $1`, id).Scan(ks.dest()...)
	if err != nil {
		return store.APIKey{}, notFound(err, "API key")
	}
	return ks.key(), nil
}

func (a accounts) ListAPIKeys(ctx context.Context, userID string, p store.PageRequest) ([]store.APIKey, string, error) {
	limit := p.Limit()
	q := `SELECT ` + keyCols + ` FROM api_keys k WHERE k.user_id = $1`
	args := []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (k.created_at, k.id) < ($2, $3)`
		args = append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY k.created_at DESC, k.id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, a.db, q, args, func(r pgx.Rows) (store.APIKey, error) {
		var ks keyScan
		err := r.Scan(ks.dest()...)
		return ks.key(), err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(k store.APIKey) (int64, string) { return ts(k.CreatedAt), k.ID })
	return out, next, nil
}

func (a accounts) RevokeAPIKey(ctx context.Context, userID, keyID string, at time.Time) error {
	tag, err := a.db.exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2 AND user_id = $3`,
		ts(at), keyID, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "API key")
}

func (a accounts) TouchAPIKeys(ctx context.Context, lastUsed map[string]time.Time) error {
	if len(lastUsed) == 0 {
		return nil
	}
	ids := make([]string, 0, len(lastUsed))
	times := make([]int64, 0, len(lastUsed))
	for id, t := range lastUsed {
		ids = append(ids, id)
		times = append(times, ts(t))
	}
	// One statement for the whole batch.
	_, err := a.db.exec(ctx, `UPDATE api_keys k SET last_used_at = greatest(coalesce(k.last_used_at, v.t), v.t)
		FROM unnest($1::text[], $2::bigint[]) AS v(id, t) WHERE k.id = v.id`, ids, times)
	return err
}

// collectRows scans every row with fn and closes rows.
func collectRows[T any](rows pgx.Rows, fn func(pgx.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := fn(rows)
		if err != nil {
			return nil, mapErr(err)
		}
		out = append(out, v)
	}
	return out, mapErr(rows.Err())
}
