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

const invCols = `i.id, i.code_hash, i.prefix, i.note, i.created_by, i.created_at, i.expires_at, i.max_uses, i.uses, i.last_used_at, i.revoked_at, i.org_id, i.role, i.team_id, i.team_role, i.email`

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
		&s.inv.MaxUses, &s.inv.Uses, &s.used, &s.revoked, &s.inv.OrgID, (*string)(&s.inv.Role), &s.inv.TeamID, (*string)(&s.inv.TeamRole), &s.inv.Email}
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
	_, err := a.db.exec(ctx, `INSERT INTO invitations (id, code_hash, prefix, note, created_by, created_at, expires_at, max_uses, org_id, role, team_id, team_role, email)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		inv.ID, inv.CodeHash, inv.Prefix, inv.Note, inv.CreatedBy, ts(inv.CreatedAt), ts(inv.ExpiresAt), inv.MaxUses,
		inv.OrgID, string(inv.Role), inv.TeamID, string(inv.TeamRole), inv.Email)
	return err
}

func (a accounts) ListInvitations(ctx context.Context, p store.PageRequest) ([]store.Invitation, string, error) {
	limit := p.Limit()
	q := `SELECT ` + invCols + ` FROM invitations i WHERE i.org_id = ''`
	var args []any
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (i.created_at, i.id) < (?, ?)`
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

func (a accounts) RevokeInvitation(ctx context.Context, orgID, id string, at time.Time) (store.Invitation, error) {
	var is invScan
	err := a.db.w.QueryRowContext(ctx, `UPDATE invitations SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND org_id = ?
		RETURNING `+invReturning, ts(at), id, orgID).Scan(is.dest()...)
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
			WHERE code_hash = ?2 AND org_id = '' AND revoked_at IS NULL AND expires_at > ?1 AND uses < max_uses
			RETURNING `+invReturning, ts(now), codeHash).Scan(is.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			return a.whyUnusable(ctx, tx, codeHash, now, false)
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

func (a accounts) ListOrgInvitations(ctx context.Context, orgID string) ([]store.Invitation, error) {
	rows, err := a.db.r.QueryContext(ctx, `SELECT `+invCols+` FROM invitations i WHERE i.org_id = ? AND i.org_id <> ''
		ORDER BY i.created_at DESC, i.id DESC LIMIT 500`, orgID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.Invitation, error) {
		var is invScan
		err := r.Scan(is.dest()...)
		return is.invitation(), err
	})
}

func (a accounts) AcceptOrgInvitation(ctx context.Context, codeHash []byte, userID string, now time.Time) (store.Invitation, error) {
	var inv store.Invitation
	err := a.db.write(ctx, func(tx *txn) error {
		var is invScan
		err := tx.QueryRowContext(ctx, `UPDATE invitations SET uses = uses + 1, last_used_at = ?1
			WHERE code_hash = ?2 AND org_id <> '' AND revoked_at IS NULL AND expires_at > ?1 AND uses < max_uses
			RETURNING `+invReturning, ts(now), codeHash).Scan(is.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			return a.whyUnusable(ctx, tx, codeHash, now, true)
		}
		if err != nil {
			return err
		}
		inv = is.invitation()
		res, err := tx.ExecContext(ctx, `INSERT INTO org_members (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (org_id, user_id) DO NOTHING`, inv.OrgID, userID, string(inv.Role), ts(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: already a member", store.ErrConflict)
		}
		if inv.TeamID != "" {
			_, err = tx.ExecContext(ctx, `INSERT INTO team_members (team_id, user_id, role, created_at)
				SELECT id, ?, ?, ? FROM teams WHERE id = ? AND org_id = ? ON CONFLICT (team_id, user_id) DO NOTHING`,
				userID, string(inv.TeamRole), ts(now), inv.TeamID, inv.OrgID)
		}
		return err
	})
	if err != nil {
		return store.Invitation{}, mapErr(err)
	}
	return inv, nil
}

// whyUnusable is the error for a code the conditional take did not match:
// of an organisation's invitation when org, else of a sign-up invitation.
func (a accounts) whyUnusable(ctx context.Context, tx *txn, codeHash []byte, now time.Time, org bool) error {
	var is invScan
	err := tx.QueryRowContext(ctx, `SELECT `+invCols+` FROM invitations i WHERE i.code_hash = ? AND (i.org_id <> '') = ?`, codeHash, org).Scan(is.dest()...)
	if err != nil {
		return notFound(err, "invitation")
	}
	if why := is.invitation().Unusable(now); why != "" {
		return &store.InvitationUnusableError{Reason: why}
	}
	return fmt.Errorf("sqlite: invitation neither taken nor unusable")
}
