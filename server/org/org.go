// Package org runs organisations: who may do what to an organisation's
// members, teams, keys and budgets, and the audit of every change. The
// money itself is the ledger's (store.Ledger): an organisation's balance is
// its billing user's account, and its budgets are held against in the same
// transaction as that balance.
package org

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// Service is the organisation rules over the stores.
type Service struct {
	Orgs     store.Organizations
	Accounts store.Accounts
	Ledger   store.Ledger
	Audit    store.Audit
	// Records are the usage records, for Usage.
	Records store.Usage
	Auth    *auth.Authenticator
	Catalog *models.Catalog
	Logger  *slog.Logger
	Now     func() time.Time
}

// Caller is who acts on an organisation, as its membership says.
type Caller struct {
	auth.Principal
	Org  store.Organization
	Role store.OrgRole
	// Client is where the call came from, for the audit log.
	Client auth.Client
}

// The actions roles are checked for.
const (
	manage   = "manage"    // members, teams, budgets, the organisation itself
	readBill = "read_bill" // balance, budgets, usage, every key
)

// can reports whether role may do action.
func can(role store.OrgRole, action string) bool {
	switch action {
	case manage:
		return role == store.RoleOwner || role == store.RoleAdmin
	case readBill:
		return role == store.RoleOwner || role == store.RoleAdmin || role == store.RoleBillingReader
	}
	return false
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func (s *Service) internal(what string, err error) error {
	s.Logger.Error("org: "+what, "err", err)
	return apierr.Internal()
}

// Name checks a name of 1–100 characters.
func Name(field, name string) error {
	switch n := utf8.RuneCountInString(name); {
	case !utf8.ValidString(name):
		return apierr.InvalidArgument(field, "is not valid UTF-8")
	case strings.TrimSpace(name) == "":
		return apierr.InvalidArgument(field, "is required")
	case n > 100:
		return apierr.InvalidArgument(field, "is longer than 100 characters")
	}
	return nil
}

func timeZone(tz string) (string, error) {
	if tz == "" {
		return "UTC", nil
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
		return "", apierr.InvalidArgument("time_zone", fmt.Sprintf("%q is not an IANA time zone (e.g. Europe/Berlin)", tz))
	}
	return tz, nil
}

// Create makes an organisation owned by p.
func (s *Service) Create(ctx context.Context, p auth.Principal, name, tz string, c auth.Client) (store.Organization, error) {
	if err := Name("name", name); err != nil {
		return store.Organization{}, err
	}
	tz, err := timeZone(tz)
	if err != nil {
		return store.Organization{}, err
	}
	now := s.Now().UTC()
	o := store.Organization{ID: newID(), Name: name, TimeZone: tz, CreatedBy: p.UserID, CreatedAt: now}
	// The billing user holds the organisation's money; nobody signs in as it.
	billing := store.User{ID: newID(), Email: "org-" + o.ID + "@organizations.parley.invalid", DisplayName: name, Tier: store.TierMax, CreatedAt: now}
	if err := s.Orgs.CreateOrganization(ctx, o, billing, store.OrgMember{UserID: p.UserID, Role: store.RoleOwner, CreatedAt: now}); err != nil {
		return store.Organization{}, s.internal("creating an organisation", err)
	}
	o.BillingUserID = billing.ID
	s.record(ctx, Caller{Principal: p, Org: o, Role: store.RoleOwner, Client: c}, "org_created", map[string]string{"name": name, "time_zone": tz})
	return o, nil
}

// Caller resolves p's membership of orgID: not_found when p is not a
// member (whether or not the organisation exists), as for anything of
// another user. A site admin acts as an owner everywhere.
func (s *Service) Caller(ctx context.Context, p auth.Principal, orgID string, c auth.Client) (Caller, error) {
	if orgID == "" {
		return Caller{}, apierr.InvalidArgument("organization_id", "is required")
	}
	if p.Org != nil {
		return Caller{}, apierr.PermissionDenied("an organisation's API key cannot manage organisations")
	}
	o, err := s.Orgs.GetOrganization(ctx, orgID)
	if errors.Is(err, store.ErrNotFound) {
		return Caller{}, apierr.NotFound("organization")
	}
	if err != nil {
		return Caller{}, s.internal("reading an organisation", err)
	}
	m, err := s.Orgs.GetMember(ctx, orgID, p.UserID)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound) && p.Admin:
		m.Role = store.RoleOwner
	case errors.Is(err, store.ErrNotFound):
		return Caller{}, apierr.NotFound("organization")
	default:
		return Caller{}, s.internal("reading a membership", err)
	}
	return Caller{Principal: p, Org: o, Role: m.Role, Client: c}, nil
}

func denied(what string) error {
	return apierr.PermissionDenied("your role in this organisation does not allow " + what)
}

// Memberships lists p's organisations.
func (s *Service) Memberships(ctx context.Context, p auth.Principal) ([]store.Membership, error) {
	ms, err := s.Orgs.ListMemberships(ctx, p.UserID)
	if err != nil {
		return nil, s.internal("listing memberships", err)
	}
	return ms, nil
}

// Balance is the organisation's money, for roles that read the bill (ok
// false otherwise).
func (s *Service) Balance(ctx context.Context, c Caller) (store.Balance, bool, error) {
	if !can(c.Role, readBill) {
		return store.Balance{}, false, nil
	}
	b, err := s.Ledger.Account(ctx, c.Org.BillingUserID)
	if err != nil {
		return store.Balance{}, false, s.internal("reading a balance", err)
	}
	return b, true, nil
}

// Update renames the organisation or changes its time zone.
func (s *Service) Update(ctx context.Context, c Caller, name, tz string) (store.Organization, error) {
	if !can(c.Role, manage) {
		return store.Organization{}, denied("changing the organisation")
	}
	o := c.Org
	if name != "" {
		if err := Name("name", name); err != nil {
			return o, err
		}
		o.Name = name
	}
	if tz != "" {
		var err error
		if o.TimeZone, err = timeZone(tz); err != nil {
			return o, err
		}
	}
	if err := s.Orgs.UpdateOrganization(ctx, o); err != nil {
		return o, s.internal("updating an organisation", err)
	}
	s.record(ctx, c, "org_updated", map[string]string{"name": o.Name, "time_zone": o.TimeZone})
	return o, nil
}

// AddMember adds the user with email, or changes its role.
func (s *Service) AddMember(ctx context.Context, c Caller, email string, role store.OrgRole) (store.OrgMember, error) {
	if !can(c.Role, manage) {
		return store.OrgMember{}, denied("managing members")
	}
	if !role.Valid() {
		return store.OrgMember{}, apierr.InvalidArgument("role", "must be owner, admin, member or billing reader")
	}
	if role == store.RoleOwner && c.Role != store.RoleOwner {
		return store.OrgMember{}, denied("making owners (owners only)")
	}
	u, err := s.Accounts.GetUserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, store.ErrNotFound) {
		return store.OrgMember{}, apierr.NotFound("user with that email (they sign up first)")
	}
	if err != nil {
		return store.OrgMember{}, s.internal("reading a user", err)
	}
	if old, err := s.Orgs.GetMember(ctx, c.Org.ID, u.ID); err == nil && old.Role == store.RoleOwner && c.Role != store.RoleOwner {
		return store.OrgMember{}, denied("changing an owner (owners only)")
	}
	m := store.OrgMember{OrgID: c.Org.ID, UserID: u.ID, Email: u.Email, Role: role, CreatedAt: s.Now().UTC()}
	if role != store.RoleOwner {
		if err := s.keepAnOwner(ctx, c.Org.ID, u.ID); err != nil {
			return store.OrgMember{}, err
		}
	}
	if err := s.Orgs.PutMember(ctx, m); err != nil {
		return store.OrgMember{}, s.internal("adding a member", err)
	}
	s.record(ctx, c, "org_member_set", map[string]string{"user_id": u.ID, "email": u.Email, "role": string(role)})
	return m, nil
}

// keepAnOwner refuses a change that would leave the organisation without
// an owner: userID is losing its ownership.
func (s *Service) keepAnOwner(ctx context.Context, orgID, userID string) error {
	ms, err := s.Orgs.ListMembers(ctx, orgID)
	if err != nil {
		return s.internal("listing members", err)
	}
	owners, isOwner := 0, false
	for _, m := range ms {
		if m.Role == store.RoleOwner {
			owners++
			isOwner = isOwner || m.UserID == userID
		}
	}
	if isOwner && owners == 1 {
		return apierr.FailedPrecondition("the organisation's last owner cannot leave or stop being an owner; make another owner first")
	}
	return nil
}

// RemoveMember removes a member and its team memberships, and revokes the
// keys it made in the organisation.
func (s *Service) RemoveMember(ctx context.Context, c Caller, userID string) error {
	if !can(c.Role, manage) {
		return denied("managing members")
	}
	m, err := s.Orgs.GetMember(ctx, c.Org.ID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("member")
	}
	if err != nil {
		return s.internal("reading a member", err)
	}
	if m.Role == store.RoleOwner && c.Role != store.RoleOwner {
		return denied("removing an owner (owners only)")
	}
	if err := s.keepAnOwner(ctx, c.Org.ID, userID); err != nil {
		return err
	}
	// The keys it made go with it, its team keys too: it has seen their
	// secrets. Revoked first, so a failure leaves the member to remove again.
	keys, err := s.allKeys(ctx, c.Org.ID, store.OrgKeyFilter{CreatedBy: userID})
	if err != nil {
		return err
	}
	revoked := 0
	for _, k := range keys {
		if k.RevokedAt.IsZero() {
			if err := s.Auth.RevokeOwnedAPIKey(ctx, c.Org.BillingUserID, k.ID); err != nil {
				return err
			}
			revoked++
		}
	}
	if err := s.Orgs.RemoveMember(ctx, c.Org.ID, userID); err != nil {
		return s.internal("removing a member", err)
	}
	s.record(ctx, c, "org_member_removed", map[string]string{"user_id": userID, "email": m.Email, "keys_revoked": fmt.Sprint(revoked)})
	return nil
}

// Members lists the members (any member may).
func (s *Service) Members(ctx context.Context, c Caller) ([]store.OrgMember, error) {
	ms, err := s.Orgs.ListMembers(ctx, c.Org.ID)
	if err != nil {
		return nil, s.internal("listing members", err)
	}
	return ms, nil
}

// CreateTeam makes a team.
func (s *Service) CreateTeam(ctx context.Context, c Caller, name, ssoGroup string) (store.Team, error) {
	if !can(c.Role, manage) {
		return store.Team{}, denied("managing teams")
	}
	if err := Name("name", name); err != nil {
		return store.Team{}, err
	}
	if err := group(ssoGroup); err != nil {
		return store.Team{}, err
	}
	t := store.Team{ID: newID(), OrgID: c.Org.ID, Name: name, SSOGroup: ssoGroup, CreatedAt: s.Now().UTC()}
	if err := s.Orgs.CreateTeam(ctx, t); errors.Is(err, store.ErrConflict) {
		return store.Team{}, apierr.AlreadyExists("a team named " + name)
	} else if err != nil {
		return store.Team{}, s.internal("creating a team", err)
	}
	s.record(ctx, c, "org_team_created", map[string]string{"team_id": t.ID, "name": name, "sso_group": ssoGroup})
	return t, nil
}

// UpdateTeam renames a team (name not empty) or sets its identity
// provider group (ssoGroup not nil; empty clears it).
func (s *Service) UpdateTeam(ctx context.Context, c Caller, teamID, name string, ssoGroup *string) (store.Team, error) {
	if !can(c.Role, manage) {
		return store.Team{}, denied("managing teams")
	}
	t, _, err := s.team(ctx, c, teamID)
	if err != nil {
		return t, err
	}
	if name != "" {
		if err := Name("name", name); err != nil {
			return t, err
		}
		t.Name = name
	}
	if ssoGroup != nil {
		if err := group(*ssoGroup); err != nil {
			return t, err
		}
		t.SSOGroup = *ssoGroup
	}
	if err := s.Orgs.UpdateTeam(ctx, t); errors.Is(err, store.ErrConflict) {
		return t, apierr.AlreadyExists("a team named " + name)
	} else if errors.Is(err, store.ErrNotFound) {
		return t, apierr.NotFound("team")
	} else if err != nil {
		return t, s.internal("updating a team", err)
	}
	s.record(ctx, c, "org_team_updated", map[string]string{"team_id": t.ID, "name": t.Name, "sso_group": t.SSOGroup})
	return t, nil
}

// group checks an identity provider group name: what a groups claim
// carries, at most 256 bytes of printable text.
func group(g string) error {
	if len(g) > 256 {
		return apierr.InvalidArgument("sso_group", "is longer than 256 bytes")
	}
	for _, r := range g {
		if r < 0x20 || r == 0x7f {
			return apierr.InvalidArgument("sso_group", "holds a control character")
		}
	}
	return nil
}

// Teams lists every team for roles that manage or read the bill, the
// caller's own otherwise.
func (s *Service) Teams(ctx context.Context, c Caller) ([]store.Team, error) {
	all, err := s.Orgs.ListTeams(ctx, c.Org.ID)
	if err != nil {
		return nil, s.internal("listing teams", err)
	}
	if can(c.Role, readBill) {
		return all, nil
	}
	mine, err := s.teamRoles(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []store.Team
	for _, t := range all {
		if _, ok := mine[t.ID]; ok {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *Service) teamRoles(ctx context.Context, c Caller) (map[string]store.TeamRole, error) {
	tm, err := s.Orgs.TeamsOf(ctx, c.Org.ID, c.UserID)
	if err != nil {
		return nil, s.internal("listing a member's teams", err)
	}
	out := make(map[string]store.TeamRole, len(tm))
	for _, m := range tm {
		out[m.TeamID] = m.Role
	}
	return out, nil
}

// team returns the organisation's team and whether the caller may manage
// it (an organisation manager or the team's admin) and read it (also its
// members and billing readers). Another organisation's team, or one the
// caller may not read, is not_found.
func (s *Service) team(ctx context.Context, c Caller, teamID string) (t store.Team, manages bool, err error) {
	if teamID == "" {
		return t, false, apierr.InvalidArgument("team_id", "is required")
	}
	t, err = s.Orgs.GetTeam(ctx, c.Org.ID, teamID)
	if errors.Is(err, store.ErrNotFound) {
		return t, false, apierr.NotFound("team")
	}
	if err != nil {
		return t, false, s.internal("reading a team", err)
	}
	if can(c.Role, manage) {
		return t, true, nil
	}
	roles, err := s.teamRoles(ctx, c)
	if err != nil {
		return t, false, err
	}
	role, in := roles[teamID]
	if !in && !can(c.Role, readBill) {
		return store.Team{}, false, apierr.NotFound("team")
	}
	return t, role == store.TeamRoleAdmin, nil
}

// DeleteTeam deletes a team, its budget and memberships, and revokes its
// keys.
func (s *Service) DeleteTeam(ctx context.Context, c Caller, teamID string) error {
	if !can(c.Role, manage) {
		return denied("managing teams")
	}
	if _, _, err := s.team(ctx, c, teamID); err != nil {
		return err
	}
	keys, err := s.allKeys(ctx, c.Org.ID, store.OrgKeyFilter{TeamID: teamID})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.RevokedAt.IsZero() {
			if err := s.Auth.RevokeOwnedAPIKey(ctx, c.Org.BillingUserID, k.ID); err != nil {
				return err
			}
		}
	}
	if err := s.Orgs.DeleteTeam(ctx, c.Org.ID, teamID, s.Now().UTC()); err != nil {
		return s.internal("deleting a team", err)
	}
	s.record(ctx, c, "org_team_deleted", map[string]string{"team_id": teamID, "keys_revoked": fmt.Sprint(len(keys))})
	return nil
}

func (s *Service) allKeys(ctx context.Context, orgID string, f store.OrgKeyFilter) ([]store.APIKey, error) {
	var all []store.APIKey
	page := store.PageRequest{Size: store.MaxPageSize}
	for {
		keys, next, err := s.Orgs.ListOrgAPIKeys(ctx, orgID, f, page)
		if err != nil {
			return nil, s.internal("listing keys", err)
		}
		all = append(all, keys...)
		if next == "" {
			return all, nil
		}
		page.Cursor = next
	}
}

// SetTeamMember adds a member of the organisation to a team or changes
// its team role.
func (s *Service) SetTeamMember(ctx context.Context, c Caller, teamID, userID string, role store.TeamRole) error {
	if _, manages, err := s.team(ctx, c, teamID); err != nil {
		return err
	} else if !manages {
		return denied("managing this team")
	}
	if !role.Valid() {
		return apierr.InvalidArgument("role", "must be admin or member")
	}
	if _, err := s.Orgs.GetMember(ctx, c.Org.ID, userID); errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("member of this organisation")
	} else if err != nil {
		return s.internal("reading a member", err)
	}
	if err := s.Orgs.PutTeamMember(ctx, store.TeamMember{TeamID: teamID, UserID: userID, Role: role, CreatedAt: s.Now().UTC()}); err != nil {
		return s.internal("adding a team member", err)
	}
	s.record(ctx, c, "org_team_member_set", map[string]string{"team_id": teamID, "user_id": userID, "role": string(role)})
	return nil
}

// RemoveTeamMember removes a member from a team.
func (s *Service) RemoveTeamMember(ctx context.Context, c Caller, teamID, userID string) error {
	if _, manages, err := s.team(ctx, c, teamID); err != nil {
		return err
	} else if !manages {
		return denied("managing this team")
	}
	if err := s.Orgs.RemoveTeamMember(ctx, teamID, userID); errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("team member")
	} else if err != nil {
		return s.internal("removing a team member", err)
	}
	s.record(ctx, c, "org_team_member_removed", map[string]string{"team_id": teamID, "user_id": userID})
	return nil
}

// TeamMembers lists a team's members.
func (s *Service) TeamMembers(ctx context.Context, c Caller, teamID string) ([]store.TeamMember, error) {
	if _, _, err := s.team(ctx, c, teamID); err != nil {
		return nil, err
	}
	ms, err := s.Orgs.ListTeamMembers(ctx, teamID)
	if err != nil {
		return nil, s.internal("listing team members", err)
	}
	return ms, nil
}

// MaxBudgetNanos bounds a budget's limit ($1,000,000,000).
const MaxBudgetNanos = 1_000_000_000_000_000_000

// SetBudget sets the budget of a scope of the organisation.
func (s *Service) SetBudget(ctx context.Context, c Caller, b store.Budget) (store.Budget, error) {
	if !can(c.Role, manage) {
		return store.Budget{}, denied("managing budgets")
	}
	if err := s.checkScope(ctx, c, b.Scope, &b.ScopeID); err != nil {
		return store.Budget{}, err
	}
	if !b.Period.Valid() {
		return store.Budget{}, apierr.InvalidArgument("period", "must be daily, weekly, monthly or total")
	}
	if b.LimitNanos < 0 || b.LimitNanos > MaxBudgetNanos {
		return store.Budget{}, apierr.InvalidArgument("limit_nanos", "must be 0 to 10^18")
	}
	b.ID, b.OrgID = newID(), c.Org.ID
	out, err := s.Orgs.PutBudget(ctx, b, s.Now())
	if err != nil {
		return store.Budget{}, s.internal("setting a budget", err)
	}
	s.record(ctx, c, "org_budget_set", map[string]string{"budget_id": out.ID, "scope": string(b.Scope), "scope_id": b.ScopeID,
		"period": string(b.Period), "limit_nanos": fmt.Sprint(b.LimitNanos)})
	return out, nil
}

// checkScope checks that a budget's scope names something of the
// organisation (the organisation's own id when scope is the organisation).
func (s *Service) checkScope(ctx context.Context, c Caller, scope store.BudgetScope, id *string) error {
	var err error
	switch scope {
	case store.ScopeOrganization:
		if *id != "" && *id != c.Org.ID {
			return apierr.InvalidArgument("scope_id", "must be empty or the organisation's id for an organisation budget")
		}
		*id = c.Org.ID
		return nil
	case store.ScopeTeam:
		_, err = s.Orgs.GetTeam(ctx, c.Org.ID, *id)
	case store.ScopeMember:
		_, err = s.Orgs.GetMember(ctx, c.Org.ID, *id)
	case store.ScopeKey:
		var keys []store.APIKey
		if keys, err = s.allKeys(ctx, c.Org.ID, store.OrgKeyFilter{}); err == nil {
			err = store.ErrNotFound
			for _, k := range keys {
				if k.ID == *id {
					err = nil
				}
			}
		}
	default:
		return apierr.InvalidArgument("scope", "must be organization, team, key or member")
	}
	if *id == "" {
		return apierr.InvalidArgument("scope_id", "is required")
	}
	if errors.Is(err, store.ErrNotFound) {
		return apierr.InvalidArgument("scope_id", fmt.Sprintf("no %s %s in this organisation", scope, *id))
	}
	if err != nil {
		return s.internal("reading a budget's scope", err)
	}
	return nil
}

// DeleteBudget removes a budget.
func (s *Service) DeleteBudget(ctx context.Context, c Caller, budgetID string) error {
	if !can(c.Role, manage) {
		return denied("managing budgets")
	}
	if err := s.Orgs.DeleteBudget(ctx, c.Org.ID, budgetID); errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("budget")
	} else if err != nil {
		return s.internal("deleting a budget", err)
	}
	s.record(ctx, c, "org_budget_deleted", map[string]string{"budget_id": budgetID})
	return nil
}

// Budgets lists the budgets as they stand.
func (s *Service) Budgets(ctx context.Context, c Caller) ([]store.Budget, error) {
	if !can(c.Role, readBill) {
		return nil, denied("reading budgets")
	}
	bs, err := s.Orgs.ListBudgets(ctx, c.Org.ID, s.Now())
	if err != nil {
		return nil, s.internal("listing budgets", err)
	}
	return bs, nil
}

// KeySpec is what CreateKey makes.
type KeySpec struct {
	TeamID, Name string
	TTL          time.Duration
	Models, IPs  []string
	RPM, TPM     int64
	BudgetNanos  int64
	BudgetPeriod store.BudgetPeriod
}

// CreateKey makes a key of the organisation (a team's, or the caller's
// own), with its budget when one is asked for.
func (s *Service) CreateKey(ctx context.Context, c Caller, spec KeySpec) (store.APIKey, string, *store.Budget, error) {
	if spec.TeamID != "" {
		if _, manages, err := s.team(ctx, c, spec.TeamID); err != nil {
			return store.APIKey{}, "", nil, err
		} else if !manages {
			return store.APIKey{}, "", nil, denied("making this team's keys (its admins and the organisation's)")
		}
	} else if c.Role == store.RoleBillingReader {
		return store.APIKey{}, "", nil, denied("making keys")
	}
	if err := Name("name", spec.Name); err != nil {
		return store.APIKey{}, "", nil, err
	}
	if len(spec.Models) > 100 {
		return store.APIKey{}, "", nil, apierr.InvalidArgument("models", "at most 100")
	}
	for i, m := range spec.Models {
		if _, ok := s.Catalog.Lookup(m); !ok {
			return store.APIKey{}, "", nil, apierr.InvalidArgument(fmt.Sprintf("models[%d]", i), fmt.Sprintf("%q is not a model of this server", m))
		}
	}
	if len(spec.IPs) > 100 {
		return store.APIKey{}, "", nil, apierr.InvalidArgument("allowed_ips", "at most 100")
	}
	if _, err := auth.ParsePrefixes(spec.IPs); err != nil {
		return store.APIKey{}, "", nil, apierr.InvalidArgument("allowed_ips", err.Error())
	}
	switch {
	case spec.RPM < 0 || spec.RPM > 1_000_000:
		return store.APIKey{}, "", nil, apierr.InvalidArgument("requests_per_minute", "must be 0 to 1,000,000")
	case spec.TPM < 0 || spec.TPM > 1_000_000_000_000:
		return store.APIKey{}, "", nil, apierr.InvalidArgument("tokens_per_minute", "must be 0 to 10^12")
	case spec.BudgetNanos < 0 || spec.BudgetNanos > MaxBudgetNanos:
		return store.APIKey{}, "", nil, apierr.InvalidArgument("budget_limit_nanos", "must be 0 to 10^18")
	case spec.BudgetNanos > 0 && spec.BudgetPeriod != "" && !spec.BudgetPeriod.Valid():
		return store.APIKey{}, "", nil, apierr.InvalidArgument("budget_period", "must be daily, weekly, monthly or total")
	}
	k, secret, err := s.Auth.IssueAPIKey(ctx, store.APIKey{UserID: c.Org.BillingUserID, Name: spec.Name, OrgID: c.Org.ID, TeamID: spec.TeamID,
		CreatedBy: c.UserID, Models: spec.Models, AllowedIPs: spec.IPs, RPM: spec.RPM, TPM: spec.TPM}, spec.TTL)
	if err != nil {
		return store.APIKey{}, "", nil, err
	}
	s.record(ctx, c, "org_key_created", map[string]string{"key_id": k.ID, "prefix": k.Prefix, "team_id": spec.TeamID,
		"models": strings.Join(spec.Models, ","), "rpm": fmt.Sprint(spec.RPM), "tpm": fmt.Sprint(spec.TPM)})
	if spec.BudgetNanos == 0 {
		return k, secret, nil, nil
	}
	period := spec.BudgetPeriod
	if period == "" {
		period = store.PeriodMonthly
	}
	// The caller made the key, so it may bound it even when it manages
	// only its team.
	b, err := s.Orgs.PutBudget(ctx, store.Budget{ID: newID(), OrgID: c.Org.ID, Scope: store.ScopeKey, ScopeID: k.ID, Period: period, LimitNanos: spec.BudgetNanos}, s.Now())
	if err != nil {
		return store.APIKey{}, "", nil, s.internal("setting a key's budget", err)
	}
	s.record(ctx, c, "org_budget_set", map[string]string{"budget_id": b.ID, "scope": "key", "scope_id": k.ID, "period": string(period), "limit_nanos": fmt.Sprint(spec.BudgetNanos)})
	return k, secret, &b, nil
}

// Keys lists keys: every key for roles that manage or read the bill; a
// team's for its members; otherwise the caller's own.
func (s *Service) Keys(ctx context.Context, c Caller, teamID string, page store.PageRequest) ([]store.APIKey, string, error) {
	f := store.OrgKeyFilter{TeamID: teamID}
	if !can(c.Role, readBill) {
		if teamID == "" {
			f.CreatedBy = c.UserID
		} else if _, _, err := s.team(ctx, c, teamID); err != nil {
			return nil, "", err
		}
	}
	keys, next, err := s.Orgs.ListOrgAPIKeys(ctx, c.Org.ID, f, page)
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, "", apierr.InvalidArgument("page_token", "is not a token this server gave")
	}
	if err != nil {
		return nil, "", s.internal("listing keys", err)
	}
	return keys, next, nil
}

// RevokeKey revokes a key of the organisation.
func (s *Service) RevokeKey(ctx context.Context, c Caller, keyID string) error {
	keys, err := s.allKeys(ctx, c.Org.ID, store.OrgKeyFilter{})
	if err != nil {
		return err
	}
	var k *store.APIKey
	for i := range keys {
		if keys[i].ID == keyID {
			k = &keys[i]
		}
	}
	if k == nil {
		return apierr.NotFound("API key")
	}
	allowed := can(c.Role, manage) || k.CreatedBy == c.UserID
	if !allowed && k.TeamID != "" {
		_, manages, err := s.team(ctx, c, k.TeamID)
		if err != nil {
			return apierr.NotFound("API key")
		}
		allowed = manages
	}
	if !allowed {
		if can(c.Role, readBill) {
			return denied("revoking this key")
		}
		return apierr.NotFound("API key")
	}
	if err := s.Auth.RevokeOwnedAPIKey(ctx, c.Org.BillingUserID, keyID); err != nil {
		return err
	}
	s.record(ctx, c, "org_key_revoked", map[string]string{"key_id": keyID})
	return nil
}

// CheckReadBill refuses roles that may not read the bill.
func CheckReadBill(c Caller, what string) error {
	if !can(c.Role, readBill) {
		return denied(what)
	}
	return nil
}

// CheckManage refuses roles that may not manage the organisation.
func CheckManage(c Caller, what string) error {
	if !can(c.Role, manage) {
		return denied(what)
	}
	return nil
}

// record appends an audit event to the organisation's log (its billing
// user's), with who acted; a failure is logged, not returned.
func (s *Service) record(ctx context.Context, c Caller, kind string, detail map[string]string) {
	detail["by"] = c.UserID
	detail["by_email"] = c.Email
	b, _ := json.Marshal(detail)
	e := store.AuditEvent{ID: newID(), UserID: c.Org.BillingUserID, Kind: kind, IP: c.Client.IP, UserAgent: c.Client.UserAgent, Detail: string(b), At: s.Now().UTC()}
	if err := s.Audit.Append(context.WithoutCancel(ctx), e); err != nil {
		s.Logger.Error("org: audit append failed", "kind", kind, "org_id", c.Org.ID, "err", err)
	}
}

// TopUp adds money to an organisation's balance (the operator's CLI).
func (s *Service) TopUp(ctx context.Context, orgID string, nanos int64, reason string) (int64, error) {
	o, err := s.Orgs.GetOrganization(ctx, orgID)
	if err != nil {
		return 0, err
	}
	avail, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: o.BillingUserID, DeltaNanos: nanos, Reason: reason, At: s.Now().UTC()})
	if err != nil {
		return 0, err
	}
	s.record(ctx, Caller{Org: o, Principal: auth.Principal{UserID: "operator", Email: "parley admin"}}, "org_balance_adjusted",
		map[string]string{"delta_nanos": fmt.Sprint(nanos), "reason": reason})
	return avail, nil
}
