package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/store"
)

const invCols = `i.id, i.code_hash, i.prefix, i.note, i.created_by, i.created_at, i.expires_at, i.max_uses, i.uses, i.last_used_at, i.revoked_at`

// invReturning is invCols for RETURNING, which in SQLite cannot name the
// table's alias.
var invReturning = strings.ReplaceAll(invCols, "i.", "")

type invScan struct {
	inv              store.Invitation
	created, expires int64
	used, revoked    sql.NullInt64
}

func (s *invScan) dest() []any {
	return []any{&s.inv.ID, &s.inv.CodeHash, &s.inv.Prefix, &s.inv.Note, &s.inv.CreatedBy, &s.created, &s.expires,
		&s.inv.MaxUses, &s.inv.Uses, &s.used, &s.revoked}
}

func (s *invScan) invitation() store.Invitation {
	inv := s.inv
	inv.CreatedAt, inv.ExpiresAt = fromTS(s.created), fromTS(s.expires)
	inv.LastUsedAt, inv.RevokedAt = fromNullTS(s.used), fromNullTS(s.revoked)
	return inv
}

func (a accounts) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	if len(inv.CodeHash) == 0 {
		return fmt.Errorf("%w: empty invitation code hash", store.ErrInvalidArgument)
	}
	if inv.MaxUses < 1 {
		return fmt.Errorf("%w: invitation max uses %d", store.ErrInvalidArgument, inv.MaxUses)
	}
	_, err := a.db.exec(ctx, `INSERT INTO invitations (id, code_hash, prefix, note, created_by, created_at, expires_at, max_uses)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		inv.ID, inv.CodeHash, inv.Prefix, inv.Note, inv.CreatedBy, ts(inv.CreatedAt), ts(inv.ExpiresAt), inv.MaxUses)
	return err
}

func (a accounts) ListInvitations(ctx context.Context, p store.PageRequest) ([]store.Invitation, string, error) {
	limit := p.Limit()
	q := `SELECT ` + invCols + ` FROM invitations i`
	var args []any
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` WHERE (i.created_at, i.id) < (?, ?)`
		args = append(args, at, id)
	}
	q += ` ORDER BY i.created_at DESC, i.id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := a.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.Invitation
	for rows.Next() {
		var is invScan
		if err := rows.Scan(is.dest()...); err != nil {
			return nil, "", err
		}
		out = append(out, is.invitation())
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.Invitation) (int64, string) { return ts(v.CreatedAt), v.ID })
	return out, next, nil
}

func (a accounts) GetInvitationByCode(ctx context.Context, codeHash []byte) (store.Invitation, error) {
	var is invScan
	err := a.db.r.QueryRowContext(ctx, `SELECT `+invCols+` FROM invitations i WHERE i.code_hash = ?`, codeHash).Scan(is.dest()...)
	if err != nil {
		return store.Invitation{}, notFound(err, "invitation")
	}
	return is.invitation(), nil
}

func (a accounts) RevokeInvitation(ctx context.Context, id string, at time.Time) (store.Invitation, error) {
	var is invScan
	err := a.db.w.QueryRowContext(ctx, `UPDATE invitations SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?
		RETURNING `+invReturning, ts(at), id).Scan(is.dest()...)
	if err != nil {
		return store.Invitation{}, notFound(err, "invitation")
	}
	return is.invitation(), nil
}

func (a accounts) CreateUserWithInvitation(ctx context.Context, u store.User, codeHash []byte, now time.Time) (store.Invitation, error) {
	if u.Tier == "" {
		u.Tier = store.TierFree
	}
	if !u.Tier.Valid() {
		return store.Invitation{}, fmt.Errorf("%w: unknown tier %q", store.ErrInvalidArgument, u.Tier)
	}
	var inv store.Invitation
	// One writer connection and BEGIN IMMEDIATE: the check and the take
	// below cannot interleave with another sign-up's.
	err := a.db.write(ctx, func(tx *txn) error {
		var is invScan
		err := tx.QueryRowContext(ctx, `UPDATE invitations SET uses = uses + 1, last_used_at = ?1
			WHERE code_hash = ?2 AND revoked_at IS NULL AND expires_at > ?1 AND uses < max_uses
			RETURNING `+invReturning, ts(now), codeHash).Scan(is.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			return a.whyUnusable(ctx, tx, codeHash, now)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertUser, userArgs(u)...); err != nil {
			return err
		}
		inv = is.invitation()
		return nil
	})
	if err != nil {
		return store.Invitation{}, mapErr(err)
	}
	return inv, nil
}

// whyUnusable is the error for a code the conditional take did not match.
func (a accounts) whyUnusable(ctx context.Context, tx *txn, codeHash []byte, now time.Time) error {
	var is invScan
	err := tx.QueryRowContext(ctx, `SELECT `+invCols+` FROM invitations i WHERE i.code_hash = ?`, codeHash).Scan(is.dest()...)
	if err != nil {
		return notFound(err, "invitation")
	}
	if why := is.invitation().Unusable(now); why != "" {
		return &store.InvitationUnusableError{Reason: why}
	}
	return fmt.Errorf("sqlite: invitation neither taken nor unusable")
}
