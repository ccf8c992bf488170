package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

// organizations keeps organisations, members and teams in db, with the
// users and keys, and their budgets in billing, the ledger's database
// (the same as db unless the ledger is apart: DB.WithBilling), because a
// hold takes its budgets in the ledger's transaction.
type organizations struct {
	db      *DB
	billing *shardSet
}

// onLedger runs f on the database holding the organisation's ledger rows
// (its billing account's): on the pool with one, in a transaction that
// fences the account's shard with several (shardSet.fenced).
func (s organizations) onLedger(ctx context.Context, orgID string, f func(q querier) error) error {
	if len(s.billing.dbs) == 1 {
		return f(s.billing.dbs[0].pool)
	}
	var billing string
	if err := s.db.pool.QueryRow(ctx, `SELECT billing_user_id FROM organizations WHERE id = $1`, orgID).Scan(&billing); err != nil {
		return notFound(err, "organization")
	}
	return s.onAccount(ctx, billing, f)
}

// onAccount is onLedger for a billing account.
func (s organizations) onAccount(ctx context.Context, billingUserID string, f func(q querier) error) error {
	if len(s.billing.dbs) == 1 {
		return f(s.billing.dbs[0].pool)
	}
	return s.billing.fenced(ctx, billingUserID, func(_ *DB, tx pgx.Tx) error { return f(tx) })
}

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
	// The account first, in the ledger's database: an organisation whose
	// creation then fails leaves an empty account no one can reach.
	if err := s.onAccount(ctx, billing.ID, func(q querier) error {
		_, err := q.Exec(ctx, `INSERT INTO billing_accounts (user_id, available_nanos, reserved_nanos) VALUES ($1, 0, 0)
			ON CONFLICT (user_id) DO NOTHING`, billing.ID)
		return err
	}); err != nil {
		return mapErr(err)
	}
	return mapErr(pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertUser, userArgs(billing)...); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO organizations (id, name, billing_user_id, time_zone, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			o.ID, o.Name, billing.ID, o.TimeZone, o.CreatedBy, ts(o.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO org_members (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)`,
			o.ID, owner.UserID, string(owner.Role), ts(owner.CreatedAt))
		return err
	}))
}

func (s organizations) GetOrganization(ctx context.Context, id string) (store.Organization, error) {
	o, err := scanOrg(s.db.pool.QueryRow(ctx, `SELECT `+orgCols+` FROM organizations o WHERE o.id = $1`, id))
	return o, notFound(err, "organization")
}

func (s organizations) UpdateOrganization(ctx context.Context, o store.Organization) error {
	tag, err := s.db.exec(ctx, `UPDATE organizations SET name = $1, time_zone = $2, sso_domain = $3 WHERE id = $4`, o.Name, o.TimeZone, o.SSODomain, o.ID)
	if err != nil {
		return err
	}
	if err := affectedOne(tag, "organization"); err != nil {
		return err
	}
	// The budgets' copy of the time zone, which holds read (a retried
	// update brings it in line if this fails).
	return mapErr(s.onLedger(ctx, o.ID, func(q querier) error {
		_, err := q.Exec(ctx, `UPDATE budgets SET time_zone = $1 WHERE org_id = $2 AND time_zone <> $1`, o.TimeZone, o.ID)
		return err
	}))
}

func (s organizations) GetOrganizationBySSODomain(ctx context.Context, domain string) (store.Organization, error) {
	o, err := scanOrg(s.db.pool.QueryRow(ctx, `SELECT `+orgCols+` FROM organizations o WHERE o.sso_domain = $1 AND o.sso_domain <> ''`, domain))
	return o, notFound(err, "organization")
}

func (s organizations) ListMemberships(ctx context.Context, userID string) ([]store.Membership, error) {
	return readRows(ctx, s.db, `SELECT `+orgCols+`, m.role FROM org_members m JOIN organizations o ON o.id = m.org_id
		WHERE m.user_id = $1 ORDER BY o.name, o.id`, []any{userID}, func(r pgx.Rows) (store.Membership, error) {
		var m store.Membership
		var err error
		m.Organization, err = scanOrg(r, (*string)(&m.Role))
		return m, err
	})
}

func (s organizations) GetMember(ctx context.Context, orgID, userID string) (store.OrgMember, error) {
	m := store.OrgMember{OrgID: orgID, UserID: userID}
	var at int64
	err := s.db.pool.QueryRow(ctx, `SELECT u.email, m.role, m.created_at FROM org_members m JOIN users u ON u.id = m.user_id
		WHERE m.org_id = $1 AND m.user_id = $2`, orgID, userID).Scan(&m.Email, (*string)(&m.Role), &at)
	m.CreatedAt = fromTS(at)
	return m, notFound(err, "member")
}

func (s organizations) PutMember(ctx context.Context, m store.OrgMember) error {
	if !m.Role.Valid() {
		return fmt.Errorf("%w: role %q", store.ErrInvalidArgument, m.Role)
	}
	_, err := s.db.exec(ctx, `INSERT INTO org_members (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (org_id, user_id) DO UPDATE SET role = excluded.role`, m.OrgID, m.UserID, string(m.Role), ts(m.CreatedAt))
	return err
}

func (s organizations) RemoveMember(ctx context.Context, orgID, userID string) error {
	return mapErr(pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM org_members WHERE org_id = $1 AND user_id = $2`, orgID, userID)
		if err != nil {
			return err
		}
		if err := affectedOne(tag, "member"); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM team_members WHERE user_id = $1 AND team_id IN (SELECT id FROM teams WHERE org_id = $2)`, userID, orgID)
		return err
	}))
}

func (s organizations) ListMembers(ctx context.Context, orgID string) ([]store.OrgMember, error) {
	return readRows(ctx, s.db, `SELECT m.user_id, u.email, m.role, m.created_at FROM org_members m JOIN users u ON u.id = m.user_id
		WHERE m.org_id = $1 ORDER BY u.email_key`, []any{orgID}, func(r pgx.Rows) (store.OrgMember, error) {
		m := store.OrgMember{OrgID: orgID}
		var at int64
		err := r.Scan(&m.UserID, &m.Email, (*string)(&m.Role), &at)
		m.CreatedAt = fromTS(at)
		return m, err
	})
}

func (s organizations) CreateTeam(ctx context.Context, t store.Team) error {
	_, err := s.db.exec(ctx, `INSERT INTO teams (id, org_id, name, sso_group, created_at) VALUES ($1, $2, $3, $4, $5)`, t.ID, t.OrgID, t.Name, t.SSOGroup, ts(t.CreatedAt))
	return err
}

func (s organizations) GetTeam(ctx context.Context, orgID, teamID string) (store.Team, error) {
	t := store.Team{ID: teamID, OrgID: orgID}
	var at int64
	err := s.db.pool.QueryRow(ctx, `SELECT name, sso_group, created_at FROM teams WHERE id = $1 AND org_id = $2`, teamID, orgID).Scan(&t.Name, &t.SSOGroup, &at)
	t.CreatedAt = fromTS(at)
	return t, notFound(err, "team")
}

func (s organizations) UpdateTeam(ctx context.Context, t store.Team) error {
	tag, err := s.db.exec(ctx, `UPDATE teams SET name = $1, sso_group = $2 WHERE id = $3 AND org_id = $4`, t.Name, t.SSOGroup, t.ID, t.OrgID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "team")
}

func (s organizations) DeleteTeam(ctx context.Context, orgID, teamID string, at time.Time) error {
	err := mapErr(pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM teams WHERE id = $1 AND org_id = $2`, teamID, orgID)
		if err != nil {
			return err
		}
		if err := affectedOne(tag, "team"); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE org_id = $2 AND team_id = $3`, ts(at), orgID, teamID)
		return err
	}))
	if err != nil {
		return err
	}
	// The team's keys are revoked, so nothing holds against its budget any
	// more; a budget left by a failure here binds no one.
	return mapErr(s.onLedger(ctx, orgID, func(q querier) error {
		_, err := q.Exec(ctx, `DELETE FROM budgets WHERE org_id = $1 AND scope = 'team' AND scope_id = $2`, orgID, teamID)
		return err
	}))
}

func (s organizations) ListTeams(ctx context.Context, orgID string) ([]store.Team, error) {
	return readRows(ctx, s.db, `SELECT id, name, sso_group, created_at FROM teams WHERE org_id = $1 ORDER BY name, id`, []any{orgID},
		func(r pgx.Rows) (store.Team, error) {
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
	_, err := s.db.exec(ctx, `INSERT INTO team_members (team_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role`, m.TeamID, m.UserID, string(m.Role), ts(m.CreatedAt))
	return err
}

func (s organizations) RemoveTeamMember(ctx context.Context, teamID, userID string) error {
	tag, err := s.db.exec(ctx, `DELETE FROM team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "team member")
}

func (s organizations) teamMembers(ctx context.Context, where string, args ...any) ([]store.TeamMember, error) {
	return readRows(ctx, s.db, `SELECT m.team_id, m.user_id, u.email, m.role, m.created_at FROM team_members m
		JOIN users u ON u.id = m.user_id JOIN teams t ON t.id = m.team_id WHERE `+where+` ORDER BY u.email_key, t.name`, args,
		func(r pgx.Rows) (store.TeamMember, error) {
			var m store.TeamMember
			var at int64
			err := r.Scan(&m.TeamID, &m.UserID, &m.Email, (*string)(&m.Role), &at)
			m.CreatedAt = fromTS(at)
			return m, err
		})
}

func (s organizations) ListTeamMembers(ctx context.Context, teamID string) ([]store.TeamMember, error) {
	return s.teamMembers(ctx, `m.team_id = $1`, teamID)
}

func (s organizations) TeamsOf(ctx context.Context, orgID, userID string) ([]store.TeamMember, error) {
	return s.teamMembers(ctx, `t.org_id = $1 AND m.user_id = $2`, orgID, userID)
}

func (s organizations) PutBudget(ctx context.Context, b store.Budget, now time.Time) (store.Budget, error) {
	if err := store.CheckBudget(b); err != nil {
		return store.Budget{}, err
	}
	var tz string
	if err := s.db.pool.QueryRow(ctx, `SELECT time_zone FROM organizations WHERE id = $1`, b.OrgID).Scan(&tz); err != nil {
		return store.Budget{}, notFound(err, "organization")
	}
	start, _ := b.Period.Window(now, store.Location(tz))
	var out store.Budget
	err := s.onLedger(ctx, b.OrgID, func(q querier) error {
		return pgx.BeginFunc(ctx, q, func(tx pgx.Tx) error {
			// A new budget or period starts its window now, nothing spent; a new
			// limit keeps the window and what it spent.
			if _, err := tx.Exec(ctx, `INSERT INTO budgets (id, org_id, scope, scope_id, period, limit_nanos, window_start, updated_at, time_zone)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (org_id, scope, scope_id) DO UPDATE SET limit_nanos = excluded.limit_nanos, updated_at = excluded.updated_at,
				time_zone = excluded.time_zone,
				spent_nanos = CASE WHEN budgets.period = excluded.period THEN budgets.spent_nanos ELSE 0 END,
				window_start = CASE WHEN budgets.period = excluded.period THEN budgets.window_start ELSE excluded.window_start END,
				period = excluded.period`,
				b.ID, b.OrgID, string(b.Scope), b.ScopeID, string(b.Period), b.LimitNanos, ts(start), ts(now), tz); err != nil {
				return err
			}
			var err error
			out, err = scanBudget(tx.QueryRow(ctx, `SELECT `+budgetCols+` FROM budgets b
			WHERE b.org_id = $1 AND b.scope = $2 AND b.scope_id = $3`, b.OrgID, string(b.Scope), b.ScopeID), now)
			return err
		})
	})
	if err != nil {
		return out, mapErr(err)
	}
	// An UpdateOrganization between the read of the time zone and the
	// upsert set the other budgets' copy, not this one's: read it again.
	var now2 string
	if err := s.db.pool.QueryRow(ctx, `SELECT time_zone FROM organizations WHERE id = $1`, b.OrgID).Scan(&now2); err == nil && now2 != tz {
		err = s.onLedger(ctx, b.OrgID, func(q querier) error {
			_, err := q.Exec(ctx, `UPDATE budgets SET time_zone = $1 WHERE org_id = $2`, now2, b.OrgID)
			return err
		})
		if err != nil {
			return out, mapErr(err)
		}
		out.Roll(now, store.Location(now2))
	}
	return out, nil
}

func (s organizations) DeleteBudget(ctx context.Context, orgID, budgetID string) error {
	return mapErr(s.onLedger(ctx, orgID, func(q querier) error {
		tag, err := q.Exec(ctx, `DELETE FROM budgets WHERE id = $1 AND org_id = $2`, budgetID, orgID)
		if err != nil {
			return err
		}
		return affectedOne(tag, "budget")
	}))
}

func (s organizations) ListBudgets(ctx context.Context, orgID string, now time.Time) ([]store.Budget, error) {
	var out []store.Budget
	err := s.onLedger(ctx, orgID, func(q querier) error {
		rows, err := q.Query(ctx, `SELECT `+budgetCols+` FROM budgets b
			WHERE b.org_id = $1 ORDER BY b.scope, b.scope_id`, orgID)
		if err != nil {
			return err
		}
		out, err = collectRows(rows, func(r pgx.Rows) (store.Budget, error) { return scanBudget(r, now) })
		return err
	})
	return out, mapErr(err)
}

func (s organizations) ListOrgAPIKeys(ctx context.Context, orgID string, f store.OrgKeyFilter, p store.PageRequest) ([]store.APIKey, string, error) {
	limit := p.Limit()
	q := `SELECT ` + keyCols + ` FROM api_keys k WHERE k.org_id = $1`
	args := []any{orgID}
	if f.TeamID != "" {
		args = append(args, f.TeamID)
		q += fmt.Sprintf(` AND k.team_id = $%d`, len(args))
	}
	if f.CreatedBy != "" {
		args = append(args, f.CreatedBy)
		q += fmt.Sprintf(` AND k.created_by = $%d`, len(args))
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		args = append(args, at, id)
		q += fmt.Sprintf(` AND (k.created_at, k.id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	q += fmt.Sprintf(` ORDER BY k.created_at DESC, k.id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, s.db, q, args, func(r pgx.Rows) (store.APIKey, error) {
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

// budgetCols are a budget's columns, its organisation's time zone among
// them (a copy kept by UpdateOrganization).
const budgetCols = `b.id, b.org_id, b.scope, b.scope_id, b.period, b.limit_nanos, b.window_start, b.spent_nanos, b.reserved_nanos, b.updated_at, b.time_zone`

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
