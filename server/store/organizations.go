package store

import (
	"context"
	"fmt"
	"time"
)

// OrgRole is a member's role in an organisation.
type OrgRole string

// The roles, most powerful first.
const (
	// RoleOwner does everything, owners included.
	RoleOwner OrgRole = "owner"
	// RoleAdmin manages members (not owners), teams, keys and budgets.
	RoleAdmin OrgRole = "admin"
	// RoleMember sees the teams it is in and uses their keys.
	RoleMember OrgRole = "member"
	// RoleBillingReader reads the balance, budgets and usage.
	RoleBillingReader OrgRole = "billing_reader"
)

// Valid reports whether r is one of the roles.
func (r OrgRole) Valid() bool {
	switch r {
	case RoleOwner, RoleAdmin, RoleMember, RoleBillingReader:
		return true
	}
	return false
}

// TeamRole is a member's role in a team.
type TeamRole string

// The team roles.
const (
	// TeamRoleAdmin manages the team's members and keys.
	TeamRoleAdmin TeamRole = "admin"
	// TeamRoleMember uses the team and reads its keys.
	TeamRoleMember TeamRole = "member"
)

// Valid reports whether r is one of the team roles.
func (r TeamRole) Valid() bool { return r == TeamRoleAdmin || r == TeamRoleMember }

// Organization is a company's account: members, teams, keys and one
// balance. Its money is the billing account of BillingUserID, a user made
// with it that cannot sign in, so the ledger is the same for people and
// organisations.
type Organization struct {
	ID            string
	Name          string
	BillingUserID string
	// TimeZone is an IANA name; budget periods begin at midnight there.
	TimeZone string
	// SSODomain, when set, is the email domain whose people join the
	// organisation as members when they first sign in through the
	// identity provider with a verified address. Unique across
	// organisations; only the operator sets it.
	SSODomain string
	CreatedBy string
	CreatedAt time.Time
}

// OrgMember is a user's membership of an organisation.
type OrgMember struct {
	OrgID  string
	UserID string
	// Email is the user's, filled in by lists.
	Email     string
	Role      OrgRole
	CreatedAt time.Time
}

// Membership is an organisation seen by one of its members.
type Membership struct {
	Organization
	Role OrgRole
}

// Team groups members and keys of an organisation under one budget.
type Team struct {
	ID    string
	OrgID string
	Name  string
	// SSOGroup, when set, is the identity provider's group whose people
	// are this team's members: each sign-in through the provider adds
	// those in the group and removes those no longer in it.
	SSOGroup  string
	CreatedAt time.Time
}

// TeamMember is a user's membership of a team.
type TeamMember struct {
	TeamID    string
	UserID    string
	Email     string // filled in by lists
	Role      TeamRole
	CreatedAt time.Time
}

// BudgetScope is what a budget bounds.
type BudgetScope string

// The scopes.
const (
	ScopeOrganization BudgetScope = "organization"
	ScopeTeam         BudgetScope = "team"
	ScopeKey          BudgetScope = "key"
	ScopeMember       BudgetScope = "member"
)

// Valid reports whether s is one of the scopes.
func (s BudgetScope) Valid() bool {
	switch s {
	case ScopeOrganization, ScopeTeam, ScopeKey, ScopeMember:
		return true
	}
	return false
}

// BudgetPeriod is how often a budget's spend starts again from zero.
type BudgetPeriod string

// The periods: calendar days (from midnight), weeks (from Monday), months
// (from the 1st) in the organisation's time zone, or never.
const (
	PeriodDaily   BudgetPeriod = "daily"
	PeriodWeekly  BudgetPeriod = "weekly"
	PeriodMonthly BudgetPeriod = "monthly"
	PeriodTotal   BudgetPeriod = "total"
)

// Valid reports whether p is one of the periods.
func (p BudgetPeriod) Valid() bool {
	switch p {
	case PeriodDaily, PeriodWeekly, PeriodMonthly, PeriodTotal:
		return true
	}
	return false
}

// Window returns the start of the period holding t in loc, and the start
// of the next (zero for a total budget, which never starts again).
func (p BudgetPeriod) Window(t time.Time, loc *time.Location) (start, next time.Time) {
	t = t.In(loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	switch p {
	case PeriodDaily:
		return day, day.AddDate(0, 0, 1)
	case PeriodWeekly:
		start = day.AddDate(0, 0, -((int(t.Weekday()) + 6) % 7)) // back to Monday
		return start, start.AddDate(0, 0, 7)
	case PeriodMonthly:
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		return start, start.AddDate(0, 1, 0)
	}
	return time.Unix(0, 0), time.Time{}
}

// Budget bounds what a scope of an organisation may spend in each period.
// Holds count against it from reserve to settle: SpentNanos +
// ReservedNanos never exceeds LimitNanos through a reservation, whatever
// the concurrency.
type Budget struct {
	ID      string
	OrgID   string
	Scope   BudgetScope
	ScopeID string // the organisation's, team's or key's id, or the member's user id
	Period  BudgetPeriod
	// LimitNanos is the most a period may spend, in nano-USD.
	LimitNanos int64
	// WindowStart is the start of the period SpentNanos counts.
	WindowStart time.Time
	// SpentNanos is what settled requests held in this window charged.
	SpentNanos int64
	// ReservedNanos is held by requests of this window not yet settled.
	ReservedNanos int64
	// ResetsAt is when the period ends (zero for a total budget); set by
	// reads.
	ResetsAt  time.Time
	UpdatedAt time.Time
}

// BudgetScopes names the scopes a request falls under, for
// Reservation.Budgets: its organisation, its key's team, its key and the
// member who made the key. The zero value is a person's request: no budget.
type BudgetScopes struct {
	OrgID, TeamID, KeyID, MemberID string
}

// IsZero reports whether s names no organisation.
func (s BudgetScopes) IsZero() bool { return s.OrgID == "" }

// BudgetExceededError is a reservation refused by a budget: the budget as
// it stood, and the amount asked for.
type BudgetExceededError struct {
	Budget        Budget
	RequiredNanos int64
}

func (e *BudgetExceededError) Error() string {
	return fmt.Sprintf("%s budget %s: %d of %d nano-USD spent or held this period, %d more required",
		e.Budget.Scope, e.Budget.ScopeID, e.Budget.SpentNanos+e.Budget.ReservedNanos, e.Budget.LimitNanos, e.RequiredNanos)
}

// OrgKeyFilter narrows Organizations.ListOrgAPIKeys.
type OrgKeyFilter struct {
	// TeamID, when set, keeps the team's keys.
	TeamID string
	// CreatedBy, when set, keeps the keys this member made.
	CreatedBy string
}

// Organizations stores organisations, their members, teams and budgets.
// Keys of an organisation are API keys (Accounts) whose OrgID is set.
type Organizations interface {
	// CreateOrganization stores o, its billing user and its first owner
	// together. ErrConflict if an ID or the billing user's email is taken.
	CreateOrganization(ctx context.Context, o Organization, billing User, owner OrgMember) error
	// GetOrganization returns the organisation, or ErrNotFound.
	GetOrganization(ctx context.Context, id string) (Organization, error)
	// UpdateOrganization changes o's name, time zone and SSO domain;
	// ErrNotFound, ErrConflict if the domain is another's.
	UpdateOrganization(ctx context.Context, o Organization) error
	// GetOrganizationBySSODomain returns the organisation whose SSODomain
	// is domain (lower case), or ErrNotFound.
	GetOrganizationBySSODomain(ctx context.Context, domain string) (Organization, error)
	// ListMemberships lists the organisations userID is a member of, by name.
	ListMemberships(ctx context.Context, userID string) ([]Membership, error)

	// GetMember returns userID's membership of orgID, or ErrNotFound.
	GetMember(ctx context.Context, orgID, userID string) (OrgMember, error)
	// PutMember adds the member or changes its role.
	PutMember(ctx context.Context, m OrgMember) error
	// RemoveMember removes the membership and the user's memberships of
	// the organisation's teams; ErrNotFound if it was not a member.
	RemoveMember(ctx context.Context, orgID, userID string) error
	// ListMembers lists an organisation's members by email.
	ListMembers(ctx context.Context, orgID string) ([]OrgMember, error)

	// CreateTeam stores t; ErrConflict if its name is taken in the
	// organisation.
	CreateTeam(ctx context.Context, t Team) error
	// GetTeam returns the organisation's team, or ErrNotFound (also for a
	// team of another organisation).
	GetTeam(ctx context.Context, orgID, teamID string) (Team, error)
	// UpdateTeam changes t's name and SSO group; ErrNotFound,
	// ErrConflict.
	UpdateTeam(ctx context.Context, t Team) error
	// DeleteTeam deletes the team, its memberships and its budget, and
	// revokes its keys at at; ErrNotFound.
	DeleteTeam(ctx context.Context, orgID, teamID string, at time.Time) error
	// ListTeams lists an organisation's teams by name.
	ListTeams(ctx context.Context, orgID string) ([]Team, error)
	// PutTeamMember adds the member to the team or changes its role.
	PutTeamMember(ctx context.Context, m TeamMember) error
	// RemoveTeamMember removes it; ErrNotFound if it was not a member.
	RemoveTeamMember(ctx context.Context, teamID, userID string) error
	// ListTeamMembers lists a team's members by email.
	ListTeamMembers(ctx context.Context, teamID string) ([]TeamMember, error)
	// TeamsOf lists userID's memberships of orgID's teams.
	TeamsOf(ctx context.Context, orgID, userID string) ([]TeamMember, error)

	// PutBudget sets the budget of b's scope (one per scope): its limit
	// and period. A new budget, or a new period, starts a window at now
	// with nothing spent; a new limit keeps what the window spent. It
	// returns the budget as stored.
	PutBudget(ctx context.Context, b Budget, now time.Time) (Budget, error)
	// DeleteBudget removes an organisation's budget; ErrNotFound.
	DeleteBudget(ctx context.Context, orgID, budgetID string) error
	// ListBudgets lists an organisation's budgets as they stand at now (a
	// window that has ended reads as the new one, nothing spent), by scope
	// and scope id.
	ListBudgets(ctx context.Context, orgID string, now time.Time) ([]Budget, error)

	// ListOrgAPIKeys lists an organisation's keys, newest first.
	ListOrgAPIKeys(ctx context.Context, orgID string, filter OrgKeyFilter, page PageRequest) ([]APIKey, string, error)
}

// Roll brings b to the period holding now in loc: a window that has ended
// is replaced by the current one, with nothing spent or held in it (holds
// still in flight belong to the window they were taken in: settling them
// counts nothing in this one). It sets ResetsAt. It reports whether the
// window changed.
func (b *Budget) Roll(now time.Time, loc *time.Location) bool {
	start, next := b.Period.Window(now, loc)
	b.ResetsAt = next
	if !start.After(b.WindowStart) {
		// The current window, or a clock behind the one that rolled it.
		if _, n := b.Period.Window(b.WindowStart, loc); !n.IsZero() {
			b.ResetsAt = n
		}
		return false
	}
	b.WindowStart, b.SpentNanos, b.ReservedNanos = start, 0, 0
	return true
}

// Location is the time zone named tz, UTC when it is unknown.
func Location(tz string) *time.Location {
	if loc, err := time.LoadLocation(tz); err == nil {
		return loc
	}
	return time.UTC
}

// CheckBudget refuses the budgets every store refuses.
func CheckBudget(b Budget) error {
	switch {
	case !b.Scope.Valid():
		return fmt.Errorf("%w: budget scope %q", ErrInvalidArgument, b.Scope)
	case !b.Period.Valid():
		return fmt.Errorf("%w: budget period %q", ErrInvalidArgument, b.Period)
	case b.LimitNanos < 0:
		return fmt.Errorf("%w: budget limit %d is negative", ErrInvalidArgument, b.LimitNanos)
	case b.ScopeID == "" || b.OrgID == "" || b.ID == "":
		return fmt.Errorf("%w: budget without its organisation, scope id or id", ErrInvalidArgument)
	}
	return nil
}
