package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

const invCols = `i.id, i.code_hash, i.prefix, i.note, i.created_by, i.created_at, i.expires_at, i.max_uses, i.uses, i.last_used_at, i.revoked_at, i.org_id, i.role, i.team_id, i.team_role, i.email`

type invScan struct {
	inv              store.Invitation
	created, expires int64
	used, revoked    *int64
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
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
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
		q += ` AND (i.created_at, i.id) < ($1, $2)`
		args = append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY i.created_at DESC, i.id DESC LIMIT %d`, limit+1)
	// The primary, not a replica: an operator lists right after issuing.
	rows, err := a.db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, err := collectRows(rows, func(r pgx.Rows) (store.Invitation, error) {
		var is invScan
		err := r.Scan(is.dest()...)
		return is.invitation(), err
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.Invitation) (int64, string) { return ts(v.CreatedAt), v.ID })
	return out, next, nil
}

func (a accounts) GetInvitationByCode(ctx context.Context, codeHash []byte) (store.Invitation, error) {
	var is invScan
	err := a.db.pool.QueryRow(ctx, `SELECT `+invCols+` FROM invitations i WHERE i.code_hash = $1`, codeHash).Scan(is.dest()...)
	if err != nil {
		return store.Invitation{}, notFound(err, "invitation")
	}
	return is.invitation(), nil
}

func (a accounts) RevokeInvitation(ctx context.Context, orgID, id string, at time.Time) (store.Invitation, error) {
	var is invScan
	err := a.db.pool.QueryRow(ctx, `UPDATE invitations i SET revoked_at = coalesce(i.revoked_at, $1) WHERE i.id = $2 AND i.org_id = $3
		RETURNING `+invCols, ts(at), id, orgID).Scan(is.dest()...)
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
	err := pgx.BeginFunc(ctx, a.db.pool, func(tx pgx.Tx) error {
		// A concurrent take of the same row waits for this transaction and
		// then evaluates the WHERE again on the row as committed (READ
		// COMMITTED), so the last use goes to one sign-up only.
		var is invScan
		err := tx.QueryRow(ctx, `UPDATE invitations i SET uses = i.uses + 1, last_used_at = $1
			WHERE i.code_hash = $2 AND i.org_id = '' AND i.revoked_at IS NULL AND i.expires_at > $1 AND i.uses < i.max_uses
			RETURNING `+invCols, ts(now), codeHash).Scan(is.dest()...)
		if errors.Is(err, pgx.ErrNoRows) {
			return whyUnusable(ctx, tx, codeHash, now, false)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insertUser, userArgs(u)...); err != nil {
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
	// The primary: an admin lists right after issuing.
	rows, err := a.db.pool.Query(ctx, `SELECT `+invCols+` FROM invitations i WHERE i.org_id = $1 AND i.org_id <> ''
		ORDER BY i.created_at DESC, i.id DESC LIMIT 500`, orgID)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectRows(rows, func(r pgx.Rows) (store.Invitation, error) {
		var is invScan
		err := r.Scan(is.dest()...)
		return is.invitation(), err
	})
}

func (a accounts) AcceptOrgInvitation(ctx context.Context, codeHash []byte, userID string, now time.Time) (store.Invitation, error) {
	var inv store.Invitation
	err := pgx.BeginFunc(ctx, a.db.pool, func(tx pgx.Tx) error {
		// As CreateUserWithInvitation: a concurrent take waits for this
		// transaction and evaluates the WHERE again.
		var is invScan
		err := tx.QueryRow(ctx, `UPDATE invitations i SET uses = i.uses + 1, last_used_at = $1
			WHERE i.code_hash = $2 AND i.org_id <> '' AND i.revoked_at IS NULL AND i.expires_at > $1 AND i.uses < i.max_uses
			RETURNING `+invCols, ts(now), codeHash).Scan(is.dest()...)
		if errors.Is(err, pgx.ErrNoRows) {
			return whyUnusable(ctx, tx, codeHash, now, true)
		}
		if err != nil {
			return err
		}
		inv = is.invitation()
		tag, err := tx.Exec(ctx, `INSERT INTO org_members (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (org_id, user_id) DO NOTHING`, inv.OrgID, userID, string(inv.Role), ts(now))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: already a member", store.ErrConflict)
		}
		if inv.TeamID != "" {
			_, err = tx.Exec(ctx, `INSERT INTO team_members (team_id, user_id, role, created_at)
				SELECT id, $1, $2, $3 FROM teams WHERE id = $4 AND org_id = $5 ON CONFLICT (team_id, user_id) DO NOTHING`,
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
func whyUnusable(ctx context.Context, tx pgx.Tx, codeHash []byte, now time.Time, org bool) error {
	var is invScan
	err := tx.QueryRow(ctx, `SELECT `+invCols+` FROM invitations i WHERE i.code_hash = $1 AND (i.org_id <> '') = $2`, codeHash, org).Scan(is.dest()...)
	if err != nil {
		return notFound(err, "invitation")
	}
	if why := is.invitation().Unusable(now); why != "" {
		return &store.InvitationUnusableError{Reason: why}
	}
	return errors.New("postgres: invitation neither taken nor unusable")
}
