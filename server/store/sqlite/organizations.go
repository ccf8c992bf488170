package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/parleyhq/parley/server/store"
)

type organizations struct{ db *DB }

var _ store.Organizations = organizations{}

const orgCols = `o.id, o.name, o.billing_user_id, o.time_zone, o.sso_domain, o.created_by, o.created_at`

func scanOrg(sc interface{ Scan(...any) error }, extra ...any) (store.Organization, error) {
	var o store.Organization
	var at int64
	err := sc.Scan(append([]any{&o.ID, &o.Name, &o.BillingUserID, &o.TimeZone, &o.SSODomain, &o.CreatedBy, &at}, extra...)...)
	o.CreatedAt = fromTS(at)
	return o, err
}

func (s organizations) CreateOrganization(ctx context.Context, o store.Organization, billing store.User, owner store.OrgMember) error {
	if billing.Tier == "" {
		billing.Tier = store.TierMax
	}
	return mapErr(s.db.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, insertUser, userArgs(billing)...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO billing_accounts (user_id, available_nanos, reserved_nanos) VALUES (?, 0, 0)`, billing.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO organizations (id, name, billing_user_id, time_zone, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			o.ID, o.Name, billing.ID, o.TimeZone, o.CreatedBy, ts(o.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO org_members (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)`,
			o.ID, owner.UserID, string(owner.Role), ts(owner.CreatedAt))
		return err
	}))
}

func (s organizations) GetOrganization(ctx context.Context, id string) (store.Organization, error) {
	o, err := scanOrg(s.db.r.QueryRowContext(ctx, `SELECT `+orgCols+` FROM organizations o WHERE o.id = ?`, id))
	return o, notFound(err, "organization")
}

func (s organizations) UpdateOrganization(ctx context.Context, o store.Organization) error {
	res, err := s.db.exec(ctx, `UPDATE organizations SET name = ?, time_zone = ?, sso_domain = ? WHERE id = ?`, o.Name, o.TimeZone, o.SSODomain, o.ID)
	if err != nil {
		return err
	}
	return affectedOne(res, "organization")
}

func (s organizations) GetOrganizationBySSODomain(ctx context.Context, domain string) (store.Organization, error) {
	o, err := scanOrg(s.db.r.QueryRowContext(ctx, `SELECT `+orgCols+` FROM organizations o WHERE o.sso_domain = ? AND o.sso_domain <> ''`, domain))
	return o, notFound(err, "organization")
}

func (s organizations) ListMemberships(ctx context.Context, userID string) ([]store.Membership, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+orgCols+`, m.role FROM org_members m JOIN organizations o ON o.id = m.org_id
		WHERE m.user_id = ? ORDER BY o.name, o.id`, userID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.Membership, error) {
		var m store.Membership
		var err error
		m.Organization, err = scanOrg(r, (*string)(&m.Role))
		return m, err
	})
}

func (s organizations) GetMember(ctx context.Context, orgID, userID string) (store.OrgMember, error) {
	m := store.OrgMember{OrgID: orgID, UserID: userID}
	var at int64
	err := s.db.r.QueryRowContext(ctx, `SELECT u.email, m.role, m.created_at FROM org_members m JOIN users u ON u.id = m.user_id
		WHERE m.org_id = ? AND m.user_id = ?`, orgID, userID).Scan(&m.Email, (*string)(&m.Role), &at)
	m.CreatedAt = fromTS(at)
	return m, notFound(err, "member")
}

func (s organizations) PutMember(ctx context.Context, m store.OrgMember) error {
	if !m.Role.Valid() {
		return fmt.Errorf("%w: role %q", store.ErrInvalidArgument, m.Role)
	}
	_, err := s.db.exec(ctx, `INSERT INTO org_members (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (org_id, user_id) DO UPDATE SET role = excluded.role`, m.OrgID, m.UserID, string(m.Role), ts(m.CreatedAt))
	return err
}

func (s organizations) RemoveMember(ctx context.Context, orgID, userID string) error {
	return mapErr(s.db.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM org_members WHERE org_id = ? AND user_id = ?`, orgID, userID)
		if err != nil {
			return err
		}
		if err := affectedOne(res, "member"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM team_members WHERE user_id = ? AND team_id IN (SELECT id FROM teams WHERE org_id = ?)`, userID, orgID)
		return err
	}))
}

func (s organizations) ListMembers(ctx context.Context, orgID string) ([]store.OrgMember, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT m.user_id, u.email, m.role, m.created_at FROM org_members m JOIN users u ON u.id = m.user_id
		WHERE m.org_id = ? ORDER BY u.email_key`, orgID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.OrgMember, error) {
		m := store.OrgMember{OrgID: orgID}
		var at int64
		err := r.Scan(&m.UserID, &m.Email, (*string)(&m.Role), &at)
		m.CreatedAt = fromTS(at)
		return m, err
	})
}

func (s organizations) CreateTeam(ctx context.Context, t store.Team) error {
	_, err := s.db.exec(ctx, `INSERT INTO teams (id, org_id, name, sso_group, created_at) VALUES (?, ?, ?, ?, ?)`, t.ID, t.OrgID, t.Name, t.SSOGroup, ts(t.CreatedAt))
	return err
}

func (s organizations) GetTeam(ctx context.Context, orgID, teamID string) (store.Team, error) {
	t := store.Team{ID: teamID, OrgID: orgID}
	var at int64
	err := s.db.r.QueryRowContext(ctx, `SELECT name, sso_group, created_at FROM teams WHERE id = ? AND org_id = ?`, teamID, orgID).Scan(&t.Name, &t.SSOGroup, &at)
	t.CreatedAt = fromTS(at)
	return t, notFound(err, "team")
}

func (s organizations) UpdateTeam(ctx context.Context, t store.Team) error {
	res, err := s.db.exec(ctx, `UPDATE teams SET name = ?, sso_group = ? WHERE id = ? AND org_id = ?`, t.Name, t.SSOGroup, t.ID, t.OrgID)
	if err != nil {
		return err
	}
	return affectedOne(res, "team")
}

func (s organizations) DeleteTeam(ctx context.Context, orgID, teamID string, at time.Time) error {
	return mapErr(s.db.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM teams WHERE id = ? AND org_id = ?`, teamID, orgID)
		if err != nil {
			return err
		}
		if err := affectedOne(res, "team"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM budgets WHERE org_id = ? AND scope = 'team' AND scope_id = ?`, orgID, teamID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE org_id = ? AND team_id = ?`, ts(at), orgID, teamID)
		return err
	}))
}

func (s organizations) ListTeams(ctx context.Context, orgID string) ([]store.Team, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT id, name, sso_group, created_at FROM teams WHERE org_id = ? ORDER BY name, id`, orgID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.Team, error) {
		t := store.Team{OrgID: orgID}
		var at int64
		err := r.Scan(&t.ID, &t.Name, &t.SSOGroup, &at)
		t.CreatedAt = fromTS(at)
		return t, err
	})
}

func (s organizations) PutTeamMember(ctx context.Context, m store.TeamMember) error {
	if !m.Role.Valid() {
		return fmt.Errorf("%w: team role %q", store.ErrInvalidArgument, m.Role)
	}
	_, err := s.db.exec(ctx, `INSERT INTO team_members (team_id, user_id, role, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role`, m.TeamID, m.UserID, string(m.Role), ts(m.CreatedAt))
	return err
}

func (s organizations) RemoveTeamMember(ctx context.Context, teamID, userID string) error {
	res, err := s.db.exec(ctx, `DELETE FROM team_members WHERE team_id = ? AND user_id = ?`, teamID, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "team member")
}

func (s organizations) teamMembers(ctx context.Context, where string, args ...any) ([]store.TeamMember, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT m.team_id, m.user_id, u.email, m.role, m.created_at FROM team_members m
		JOIN users u ON u.id = m.user_id JOIN teams t ON t.id = m.team_id WHERE `+where+` ORDER BY u.email_key, t.name`, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.TeamMember, error) {
		var m store.TeamMember
		var at int64
		err := r.Scan(&m.TeamID, &m.UserID, &m.Email, (*string)(&m.Role), &at)
		m.CreatedAt = fromTS(at)
		return m, err
	})
}

func (s organizations) ListTeamMembers(ctx context.Context, teamID string) ([]store.TeamMember, error) {
	return s.teamMembers(ctx, `m.team_id = ?`, teamID)
}

func (s organizations) TeamsOf(ctx context.Context, orgID, userID string) ([]store.TeamMember, error) {
	return s.teamMembers(ctx, `t.org_id = ? AND m.user_id = ?`, orgID, userID)
}

func (s organizations) PutBudget(ctx context.Context, b store.Budget, now time.Time) (store.Budget, error) {
	if err := store.CheckBudget(b); err != nil {
		return store.Budget{}, err
	}
	var out store.Budget
	err := s.db.write(ctx, func(tx *txn) error {
		loc, err := orgLocation(ctx, tx.QueryRowContext(ctx, `SELECT time_zone FROM organizations WHERE id = ?`, b.OrgID))
		if err != nil {
			return err
		}
		start, _ := b.Period.Window(now, loc)
		// A new budget or period starts its window now, nothing spent; a new
		// limit keeps the window and what it spent.
		if _, err := tx.ExecContext(ctx, `INSERT INTO budgets (id, org_id, scope, scope_id, period, limit_nanos, window_start, updated_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
			ON CONFLICT (org_id, scope, scope_id) DO UPDATE SET limit_nanos = excluded.limit_nanos, updated_at = excluded.updated_at,
				spent_nanos = CASE WHEN budgets.period = excluded.period THEN budgets.spent_nanos ELSE 0 END,
				window_start = CASE WHEN budgets.period = excluded.period THEN budgets.window_start ELSE excluded.window_start END,
				period = excluded.period`,
			b.ID, b.OrgID, string(b.Scope), b.ScopeID, string(b.Period), b.LimitNanos, ts(start), ts(now)); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+budgetCols+` FROM budgets b JOIN organizations o ON o.id = b.org_id
			WHERE b.org_id = ? AND b.scope = ? AND b.scope_id = ?`, b.OrgID, string(b.Scope), b.ScopeID)
		if err != nil {
			return err
		}
		got, err := collect(rows, func(r *sql.Rows) (store.Budget, error) { return scanBudget(r, now) })
		if err != nil {
			return err
		}
		out = got[0]
		return nil
	})
	return out, mapErr(err)
}

func (s organizations) DeleteBudget(ctx context.Context, orgID, budgetID string) error {
	res, err := s.db.exec(ctx, `DELETE FROM budgets WHERE id = ? AND org_id = ?`, budgetID, orgID)
	if err != nil {
		return err
	}
	return affectedOne(res, "budget")
}

func (s organizations) ListBudgets(ctx context.Context, orgID string, now time.Time) ([]store.Budget, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+budgetCols+` FROM budgets b JOIN organizations o ON o.id = b.org_id
		WHERE b.org_id = ? ORDER BY b.scope, b.scope_id`, orgID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.Budget, error) { return scanBudget(r, now) })
}

func (s organizations) ListOrgAPIKeys(ctx context.Context, orgID string, f store.OrgKeyFilter, p store.PageRequest) ([]store.APIKey, string, error) {
	limit := p.Limit()
	q := `SELECT ` + keyCols + ` FROM api_keys k WHERE k.org_id = ?`
	args := []any{orgID}
	if f.TeamID != "" {
		q += ` AND k.team_id = ?`
		args = append(args, f.TeamID)
	}
	if f.CreatedBy != "" {
		q += ` AND k.created_by = ?`
		args = append(args, f.CreatedBy)
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (k.created_at, k.id) < (?, ?)`
		args = append(args, at, id)
	}
	rows, err := s.db.r.QueryContext(ctx, q+` ORDER BY k.created_at DESC, k.id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	out, err := collect(rows, func(r *sql.Rows) (store.APIKey, error) {
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

// budgetCols are a budget's columns and its organisation's time zone.
const budgetCols = `b.id, b.org_id, b.scope, b.scope_id, b.period, b.limit_nanos, b.window_start, b.spent_nanos, b.reserved_nanos, b.updated_at, o.time_zone`

// scanBudget reads budgetCols as the budget stands at now: a window that
// has ended reads as the next, nothing spent in it yet.
func scanBudget(r interface{ Scan(...any) error }, now time.Time) (store.Budget, error) {
	var b store.Budget
	var start, updated int64
	var tz string
	if err := r.Scan(&b.ID, &b.OrgID, (*string)(&b.Scope), &b.ScopeID, (*string)(&b.Period), &b.LimitNanos, &start, &b.SpentNanos, &b.ReservedNanos, &updated, &tz); err != nil {
		return b, err
	}
	b.WindowStart, b.UpdatedAt = fromTS(start), fromTS(updated)
	b.Roll(now, store.Location(tz))
	return b, nil
}

func orgLocation(ctx context.Context, row *sql.Row) (*time.Location, error) {
	var tz string
	if err := row.Scan(&tz); err != nil {
		return nil, notFound(err, "organization")
	}
	return store.Location(tz), nil
}

// collect scans every row with scan.
func collect[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
