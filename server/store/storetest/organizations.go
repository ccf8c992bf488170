package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// org is an organisation made for a test, with its owner and a team.
type org struct {
	store.Organization
	owner store.User
	team  store.Team
}

func newOrg(t *testing.T, s store.Store, name, tz string) org {
	t.Helper()
	ctx := t.Context()
	owner := mustUser(t, s, name+"-owner@example.com")
	o := store.Organization{ID: newID(), Name: name, TimeZone: tz, CreatedBy: owner.ID, CreatedAt: t0}
	billing := store.User{ID: newID(), Email: "org-" + o.ID + "@org.invalid", DisplayName: name, CreatedAt: t0}
	noErr(t, s.Organizations.CreateOrganization(ctx, o, billing, store.OrgMember{UserID: owner.ID, Role: store.RoleOwner, CreatedAt: t0}), "CreateOrganization")
	o.BillingUserID = billing.ID
	team := store.Team{ID: newID(), OrgID: o.ID, Name: "research", CreatedAt: t0}
	noErr(t, s.Organizations.CreateTeam(ctx, team), "CreateTeam")
	return org{Organization: o, owner: owner, team: team}
}

func (o org) budget(t *testing.T, s store.Store, scope store.BudgetScope, scopeID string, period store.BudgetPeriod, limit int64, now time.Time) store.Budget {
	t.Helper()
	b, err := s.Organizations.PutBudget(t.Context(), store.Budget{ID: newID(), OrgID: o.ID, Scope: scope, ScopeID: scopeID, Period: period, LimitNanos: limit}, now)
	noErr(t, err, "PutBudget")
	return b
}

func budgetOf(t *testing.T, s store.Store, orgID, id string, now time.Time) store.Budget {
	t.Helper()
	bs, err := s.Organizations.ListBudgets(t.Context(), orgID, now)
	noErr(t, err, "ListBudgets")
	for _, b := range bs {
		if b.ID == id {
			return b
		}
	}
	t.Fatalf("budget %s not listed", id)
	return store.Budget{}
}

// TestOrganizations runs the conformance suite of store.Organizations and
// of the budgets the Ledger holds against.
func TestOrganizations(t *testing.T, newStore NewStore) {
	t.Run("Invitations", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		if s.Organizations == nil {
			t.Skip("the backend keeps no organisations")
		}
		a := newOrg(t, s, "acme", "UTC")
		b := newOrg(t, s, "globex", "UTC")
		now := t0.Add(time.Hour)
		inv := store.Invitation{ID: newID(), CodeHash: hash("org-code"), Prefix: "oinv_abc", CreatedBy: a.owner.ID, CreatedAt: t0,
			ExpiresAt: t0.Add(48 * time.Hour), MaxUses: 3, OrgID: a.ID, Role: store.RoleAdmin, TeamID: a.team.ID, TeamRole: store.TeamRoleAdmin}
		noErr(t, s.Accounts.CreateInvitation(ctx, inv), "CreateInvitation")
		// It is no sign-up invitation: not listed nor usable as one.
		signups, _, err := s.Accounts.ListInvitations(ctx, store.PageRequest{})
		noErr(t, err, "ListInvitations")
		if len(signups) != 0 {
			t.Fatalf("an organisation's invitation among sign-up ones: %+v", signups)
		}
		_, err = s.Accounts.CreateUserWithInvitation(ctx, store.User{ID: newID(), Email: "x@example.com", CreatedAt: now}, hash("org-code"), now)
		wantErr(t, err, store.ErrNotFound, "signing up with an organisation's code")
		list, err := s.Accounts.ListOrgInvitations(ctx, a.ID)
		noErr(t, err, "ListOrgInvitations")
		if len(list) != 1 || list[0].Role != store.RoleAdmin || list[0].TeamID != a.team.ID || list[0].TeamRole != store.TeamRoleAdmin || list[0].OrgID != a.ID {
			t.Fatalf("ListOrgInvitations = %+v", list)
		}
		if other, err := s.Accounts.ListOrgInvitations(ctx, b.ID); err != nil || len(other) != 0 {
			t.Fatalf("another organisation's invitations = %+v, %v", other, err)
		}
		// Five people race for three uses: three join, each with the team.
		var wg sync.WaitGroup
		var mu sync.Mutex
		joined, usedUp := 0, 0
		for i := range 5 {
			u := mustUser(t, s, "joiner"+string(rune('a'+i))+"@example.com")
			wg.Go(func() {
				_, err := s.Accounts.AcceptOrgInvitation(ctx, hash("org-code"), u.ID, now)
				mu.Lock()
				defer mu.Unlock()
				var ue *store.InvitationUnusableError
				switch {
				case err == nil:
					joined++
					if m, err := s.Organizations.GetMember(ctx, a.ID, u.ID); err != nil || m.Role != store.RoleAdmin {
						t.Errorf("a joiner's membership: %+v %v", m, err)
					}
				case errors.As(err, &ue) && ue.Reason == store.InvitationUsedUp:
					usedUp++
					if _, err := s.Organizations.GetMember(ctx, a.ID, u.ID); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("one refused is a member: %v", err)
					}
				default:
					t.Errorf("AcceptOrgInvitation: %v", err)
				}
			})
		}
		wg.Wait()
		if joined != 3 || usedUp != 2 {
			t.Fatalf("%d joined, %d refused, of five for three uses", joined, usedUp)
		}
		if tm, err := s.Organizations.ListTeamMembers(ctx, a.team.ID); err != nil || len(tm) != 3 || tm[0].Role != store.TeamRoleAdmin {
			t.Fatalf("the team's members: %+v %v", tm, err)
		}
		// A member accepting takes no use and keeps its role.
		inv2 := inv
		inv2.ID, inv2.CodeHash, inv2.Role, inv2.TeamID, inv2.TeamRole = newID(), hash("org-code-2"), store.RoleMember, "", ""
		noErr(t, s.Accounts.CreateInvitation(ctx, inv2), "CreateInvitation 2")
		_, err = s.Accounts.AcceptOrgInvitation(ctx, hash("org-code-2"), a.owner.ID, now)
		wantErr(t, err, store.ErrConflict, "the owner accepting")
		if m, _ := s.Organizations.GetMember(ctx, a.ID, a.owner.ID); m.Role != store.RoleOwner {
			t.Fatalf("the owner's role after accepting: %s", m.Role)
		}
		// Revoked through another organisation: not found; through its own: done.
		_, err = s.Accounts.RevokeInvitation(ctx, b.ID, inv2.ID, now)
		wantErr(t, err, store.ErrNotFound, "revoking through another organisation")
		_, err = s.Accounts.RevokeInvitation(ctx, "", inv2.ID, now)
		wantErr(t, err, store.ErrNotFound, "revoking as a sign-up invitation")
		r, err := s.Accounts.RevokeInvitation(ctx, a.ID, inv2.ID, now)
		noErr(t, err, "RevokeInvitation")
		if r.RevokedAt.IsZero() || r.Uses != 0 {
			t.Fatalf("revoked = %+v", r)
		}
		late := mustUser(t, s, "late@example.com")
		_, err = s.Accounts.AcceptOrgInvitation(ctx, hash("org-code-2"), late.ID, now)
		var ue *store.InvitationUnusableError
		if !errors.As(err, &ue) || ue.Reason != store.InvitationRevoked {
			t.Fatalf("a revoked invitation: %v", err)
		}
		_, err = s.Accounts.AcceptOrgInvitation(ctx, hash("no-such-code"), late.ID, now)
		wantErr(t, err, store.ErrNotFound, "an unknown code")
	})
	t.Run("MembersTeamsAndScope", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		if s.Organizations == nil {
			t.Skip("the backend keeps no organisations")
		}
		a := newOrg(t, s, "acme", "Europe/Berlin")
		b := newOrg(t, s, "globex", "UTC")
		got, err := s.Organizations.GetOrganization(ctx, a.ID)
		noErr(t, err, "GetOrganization")
		if got.Name != "acme" || got.TimeZone != "Europe/Berlin" || got.BillingUserID != a.BillingUserID {
			t.Fatalf("GetOrganization = %+v", got)
		}
		// The billing user has an account; it is not a member.
		wantBalance(t, s, a.BillingUserID, 0, 0)
		ms, err := s.Organizations.ListMemberships(ctx, a.owner.ID)
		noErr(t, err, "ListMemberships")
		if len(ms) != 1 || ms[0].ID != a.ID || ms[0].Role != store.RoleOwner {
			t.Fatalf("memberships = %+v", ms)
		}
		m := mustUser(t, s, "member@example.com")
		noErr(t, s.Organizations.PutMember(ctx, store.OrgMember{OrgID: a.ID, UserID: m.ID, Role: store.RoleMember, CreatedAt: t0}), "PutMember")
		noErr(t, s.Organizations.PutMember(ctx, store.OrgMember{OrgID: a.ID, UserID: m.ID, Role: store.RoleAdmin, CreatedAt: t0}), "PutMember again")
		gm, err := s.Organizations.GetMember(ctx, a.ID, m.ID)
		noErr(t, err, "GetMember")
		if gm.Role != store.RoleAdmin || gm.Email != "member@example.com" {
			t.Fatalf("member = %+v", gm)
		}
		wantErr(t, s.Organizations.PutMember(ctx, store.OrgMember{OrgID: a.ID, UserID: m.ID, Role: "god"}), store.ErrInvalidArgument, "a bad role")
		_, err = s.Organizations.GetMember(ctx, b.ID, m.ID)
		wantErr(t, err, store.ErrNotFound, "a member of another organisation")
		noErr(t, s.Organizations.PutTeamMember(ctx, store.TeamMember{TeamID: a.team.ID, UserID: m.ID, Role: store.TeamRoleAdmin, CreatedAt: t0}), "PutTeamMember")
		tm, err := s.Organizations.TeamsOf(ctx, a.ID, m.ID)
		noErr(t, err, "TeamsOf")
		if len(tm) != 1 || tm[0].TeamID != a.team.ID || tm[0].Role != store.TeamRoleAdmin {
			t.Fatalf("TeamsOf = %+v", tm)
		}
		// Another organisation's team is not found through this one.
		_, err = s.Organizations.GetTeam(ctx, b.ID, a.team.ID)
		wantErr(t, err, store.ErrNotFound, "GetTeam across organisations")
		wantErr(t, s.Organizations.CreateTeam(ctx, store.Team{ID: newID(), OrgID: a.ID, Name: "research", CreatedAt: t0}), store.ErrConflict, "a team name taken")
		if ts, err := s.Organizations.ListTeams(ctx, b.ID); err != nil || len(ts) != 1 || ts[0].Name != "research" || ts[0].ID != b.team.ID {
			t.Fatalf("the other organisation's teams (the same name) = %+v, %v", ts, err)
		}
		// Keys of the team; deleting the team revokes them.
		k := store.APIKey{ID: newID(), UserID: a.BillingUserID, Name: "ci", Prefix: "pk_x", SecretHash: []byte(newID()), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
			OrgID: a.ID, TeamID: a.team.ID, CreatedBy: m.ID, Models: []string{"sim-small"}, AllowedIPs: []string{"10.0.0.0/8"}, RPM: 60, TPM: 1000}
		noErr(t, s.Accounts.CreateAPIKey(ctx, k), "CreateAPIKey")
		gk, gu, err := s.Accounts.GetAPIKeyByHash(ctx, k.SecretHash)
		noErr(t, err, "GetAPIKeyByHash")
		if gu.ID != a.BillingUserID || gk.OrgID != a.ID || gk.TeamID != a.team.ID || gk.CreatedBy != m.ID || gk.RPM != 60 || gk.TPM != 1000 ||
			len(gk.Models) != 1 || gk.Models[0] != "sim-small" || len(gk.AllowedIPs) != 1 {
			t.Fatalf("key = %+v, user %s", gk, gu.ID)
		}
		keys, _, err := s.Organizations.ListOrgAPIKeys(ctx, a.ID, store.OrgKeyFilter{TeamID: a.team.ID}, store.PageRequest{})
		noErr(t, err, "ListOrgAPIKeys")
		if len(keys) != 1 || keys[0].ID != k.ID {
			t.Fatalf("team keys = %+v", keys)
		}
		keys, _, err = s.Organizations.ListOrgAPIKeys(ctx, b.ID, store.OrgKeyFilter{}, store.PageRequest{})
		noErr(t, err, "ListOrgAPIKeys of another")
		if len(keys) != 0 {
			t.Fatalf("another organisation lists %d keys", len(keys))
		}
		noErr(t, s.Organizations.RemoveMember(ctx, a.ID, m.ID), "RemoveMember")
		if tm, _ := s.Organizations.TeamsOf(ctx, a.ID, m.ID); len(tm) != 0 {
			t.Fatalf("a removed member is still in %d teams", len(tm))
		}
		noErr(t, s.Organizations.DeleteTeam(ctx, a.ID, a.team.ID, t0.Add(time.Minute)), "DeleteTeam")
		_, _, err = s.Accounts.GetAPIKeyByHash(ctx, k.SecretHash)
		wantErr(t, err, store.ErrNotFound, "a deleted team's key")
		// Read by id, a revoked key still tells its scope.
		byID, err := s.Accounts.GetAPIKey(ctx, k.ID)
		noErr(t, err, "GetAPIKey")
		if byID.OrgID != a.ID || byID.TeamID != a.team.ID || byID.RevokedAt.IsZero() {
			t.Fatalf("GetAPIKey = %+v", byID)
		}
		_, err = s.Accounts.GetAPIKey(ctx, newID())
		wantErr(t, err, store.ErrNotFound, "GetAPIKey of an unknown id")
	})

	t.Run("SingleSignOn", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		if s.Organizations == nil {
			t.Skip("the backend keeps no organisations")
		}
		a, b := newOrg(t, s, "acme", "UTC"), newOrg(t, s, "globex", "UTC")
		if _, err := s.Organizations.GetOrganizationBySSODomain(ctx, "acme.example"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetOrganizationBySSODomain before any is set: %v, want ErrNotFound", err)
		}
		if _, err := s.Organizations.GetOrganizationBySSODomain(ctx, ""); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetOrganizationBySSODomain(\"\"): %v, want ErrNotFound (an unset domain matches nothing)", err)
		}
		a.SSODomain = "acme.example"
		noErr(t, s.Organizations.UpdateOrganization(ctx, a.Organization), "UpdateOrganization sso_domain")
		got, err := s.Organizations.GetOrganizationBySSODomain(ctx, "acme.example")
		noErr(t, err, "GetOrganizationBySSODomain")
		if got.ID != a.ID || got.SSODomain != "acme.example" {
			t.Fatalf("GetOrganizationBySSODomain = %+v, want %s with its domain", got, a.ID)
		}
		b.SSODomain = "acme.example"
		if err := s.Organizations.UpdateOrganization(ctx, b.Organization); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a second organisation claiming the domain: %v, want ErrConflict", err)
		}

		a.team.SSOGroup = "research-eng"
		noErr(t, s.Organizations.UpdateTeam(ctx, a.team), "UpdateTeam")
		ts, err := s.Organizations.ListTeams(ctx, a.ID)
		noErr(t, err, "ListTeams")
		if len(ts) != 1 || ts[0].SSOGroup != "research-eng" {
			t.Fatalf("ListTeams = %+v, want the team with its group", ts)
		}
		if tm, err := s.Organizations.GetTeam(ctx, a.ID, a.team.ID); err != nil || tm.SSOGroup != "research-eng" {
			t.Fatalf("GetTeam = %+v, %v", tm, err)
		}
		if err := s.Organizations.UpdateTeam(ctx, store.Team{ID: a.team.ID, OrgID: b.ID, Name: "x"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("UpdateTeam through another organisation: %v, want ErrNotFound", err)
		}

		u := mustUser(t, s, "sso-person@acme.example")
		id := store.Identity{Issuer: "https://idp.example", Subject: "sub-1", UserID: u.ID, CreatedAt: t0}
		if _, err := s.Accounts.GetUserByIdentity(ctx, id.Issuer, id.Subject); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetUserByIdentity before linking: %v, want ErrNotFound", err)
		}
		noErr(t, s.Accounts.LinkIdentity(ctx, id), "LinkIdentity")
		if got, err := s.Accounts.GetUserByIdentity(ctx, id.Issuer, id.Subject); err != nil || got.ID != u.ID {
			t.Fatalf("GetUserByIdentity = %+v, %v; want %s", got, err, u.ID)
		}
		other := mustUser(t, s, "someone-else@acme.example")
		if err := s.Accounts.LinkIdentity(ctx, store.Identity{Issuer: id.Issuer, Subject: id.Subject, UserID: other.ID, CreatedAt: t0}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("linking a linked identity to another user: %v, want ErrConflict", err)
		}
		if _, err := s.Accounts.GetUserByIdentity(ctx, "https://other-idp.example", id.Subject); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the same subject at another issuer: %v, want ErrNotFound", err)
		}
	})

	t.Run("BudgetHoldsUnderConcurrency", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		if s.Organizations == nil {
			t.Skip("the backend keeps no organisations")
		}
		o := newOrg(t, s, "initech", "UTC")
		topUp(t, s, o.BillingUserID, 1_000_000_000)
		const limit, each = 10_000_000, 100_000 // $0.01, 100 holds of $0.0001
		tb := o.budget(t, s, store.ScopeTeam, o.team.ID, store.PeriodMonthly, limit, t0)
		keys := []string{newID(), newID(), newID(), newID(), newID()}
		kb := o.budget(t, s, store.ScopeKey, keys[0], store.PeriodTotal, 3*each, t0) // the first key: 3 holds at most
		var (
			mu              sync.Mutex
			held            []store.Reservation
			short, exceeded int
			wg              sync.WaitGroup
		)
		for i := range 200 {
			wg.Go(func() {
				r := reservation(o.BillingUserID, each, time.Hour)
				r.Budgets = store.BudgetScopes{OrgID: o.ID, TeamID: o.team.ID, KeyID: keys[i%5], MemberID: o.owner.ID}
				_, err := s.Ledger.Reserve(ctx, r)
				mu.Lock()
				defer mu.Unlock()
				var over *store.BudgetExceededError
				switch {
				case err == nil:
					held = append(held, r)
				case errors.As(err, &over):
					exceeded++
				case errors.As(err, new(*store.InsufficientFundsError)):
					short++
				default:
					t.Errorf("Reserve: %v", err)
				}
			})
		}
		wg.Wait()
		if len(held) != limit/each || exceeded != 200-limit/each || short != 0 {
			t.Fatalf("held %d, over budget %d, short %d; want %d held", len(held), exceeded, short, limit/each)
		}
		if b := budgetOf(t, s, o.ID, tb.ID, t0); b.ReservedNanos != limit || b.SpentNanos != 0 {
			t.Fatalf("team budget after the holds = %+v", b)
		}
		if b := budgetOf(t, s, o.ID, kb.ID, t0); b.ReservedNanos > 3*each {
			t.Fatalf("key budget after the holds = %+v", b)
		}
		// Settle them together: some in full, some in part, some released
		// (a cancelled request that never ran).
		var charged int64
		for i, r := range held {
			cost := []int64{each, each / 2, 0}[i%3]
			charged += cost
			wg.Go(func() {
				var rec *store.UsageRecord
				if cost > 0 {
					rec = usageOf(o.BillingUserID)
				}
				if _, err := s.Ledger.Settle(ctx, r.ID, cost, t0.Add(time.Second), rec); err != nil {
					t.Errorf("Settle: %v", err)
				}
			})
		}
		wg.Wait()
		b := budgetOf(t, s, o.ID, tb.ID, t0.Add(time.Second))
		if b.SpentNanos != charged || b.ReservedNanos != 0 {
			t.Fatalf("team budget after settling = spent %d reserved %d, want spent %d reserved 0", b.SpentNanos, b.ReservedNanos, charged)
		}
		wantBalance(t, s, o.BillingUserID, 1_000_000_000-charged, 0)
		if got := sumCost(recordsOf(t, s, o.BillingUserID)); got != charged {
			t.Fatalf("usage records add up to %d, the ledger charged %d", got, charged)
		}
		// The team's budget has room again for what was not spent.
		r := reservation(o.BillingUserID, limit-charged, time.Hour)
		r.CreatedAt = t0.Add(2 * time.Second)
		r.Budgets = store.BudgetScopes{OrgID: o.ID, TeamID: o.team.ID, KeyID: keys[1]}
		_, err := s.Ledger.Reserve(ctx, r)
		noErr(t, err, "a hold of the rest of the budget")
		r2 := reservation(o.BillingUserID, 1, time.Hour)
		r2.Budgets = r.Budgets
		_, err = s.Ledger.Reserve(ctx, r2)
		var over *store.BudgetExceededError
		if !errors.As(err, &over) || over.Budget.Scope != store.ScopeTeam || over.Budget.ResetsAt.IsZero() {
			t.Fatalf("one nano past the budget: %v (%+v)", err, over)
		}
		// A person's hold is not touched by any budget.
		p := mustUser(t, s, "person@example.com")
		topUp(t, s, p.ID, 10)
		_, err = s.Ledger.Reserve(ctx, reservation(p.ID, 10, time.Hour))
		noErr(t, err, "a person's hold")
	})

	t.Run("OrganizationBalance", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		if s.Organizations == nil {
			t.Skip("the backend keeps no organisations")
		}
		o := newOrg(t, s, "hooli", "UTC")
		topUp(t, s, o.BillingUserID, 10_000_000) // $0.01
		var (
			wg         sync.WaitGroup
			mu         sync.Mutex
			ok, refuse int
		)
		for i := range 200 {
			wg.Go(func() {
				r := reservation(o.BillingUserID, 100_000, time.Hour)
				r.Budgets = store.BudgetScopes{OrgID: o.ID, TeamID: o.team.ID, KeyID: newID(), MemberID: o.owner.ID}
				_, err := s.Ledger.Reserve(ctx, r)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					ok++
				} else if errors.As(err, new(*store.InsufficientFundsError)) {
					refuse++
				} else {
					t.Errorf("Reserve %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if ok != 100 || refuse != 100 {
			t.Fatalf("held %d, refused %d; want 100 and 100", ok, refuse)
		}
		wantBalance(t, s, o.BillingUserID, 0, 10_000_000)
	})

	t.Run("PeriodBoundary", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		if s.Organizations == nil {
			t.Skip("the backend keeps no organisations")
		}
		// Midnight in Tokyo is 15:00 UTC the day before.
		o := newOrg(t, s, "umbrella", "Asia/Tokyo")
		topUp(t, s, o.BillingUserID, 1_000_000)
		tokyo := store.Location("Asia/Tokyo")
		day1 := time.Date(2026, 3, 1, 12, 0, 0, 0, tokyo)
		midnight := time.Date(2026, 3, 2, 0, 0, 0, 0, tokyo)
		b := o.budget(t, s, store.ScopeTeam, o.team.ID, store.PeriodDaily, 300, day1)
		sc := store.BudgetScopes{OrgID: o.ID, TeamID: o.team.ID, KeyID: "k"}
		hold := func(at time.Time, amount int64) (store.Reservation, error) {
			r := reservation(o.BillingUserID, amount, time.Hour)
			r.CreatedAt, r.ExpiresAt, r.Budgets = at, at.Add(time.Hour), sc
			_, err := s.Ledger.Reserve(ctx, r)
			return r, err
		}
		a, err := hold(midnight.Add(-time.Second), 200)
		noErr(t, err, "a hold a second before midnight")
		_, err = hold(midnight.Add(-time.Second/2), 200)
		if !errors.As(err, new(*store.BudgetExceededError)) {
			t.Fatalf("a second hold in the same day: %v, want over budget", err)
		}
		// Just past midnight, with a's hold in flight: a new day, its own 300.
		bh, err := hold(midnight.Add(time.Second), 200)
		noErr(t, err, "a hold in the new day")
		// a settles in the new day: its charge belongs to the day it was held in.
		_, err = s.Ledger.Settle(ctx, a.ID, 150, midnight.Add(2*time.Second), usageOf(o.BillingUserID))
		noErr(t, err, "settling the old day's hold")
		got := budgetOf(t, s, o.ID, b.ID, midnight.Add(3*time.Second))
		if got.SpentNanos != 0 || got.ReservedNanos != 200 || !got.WindowStart.Equal(midnight) || !got.ResetsAt.Equal(midnight.AddDate(0, 0, 1)) {
			t.Fatalf("the new day after the old day's settle = %+v", got)
		}
		_, err = s.Ledger.Settle(ctx, bh.ID, 120, midnight.Add(4*time.Second), usageOf(o.BillingUserID))
		noErr(t, err, "settling the new day's hold")
		if got := budgetOf(t, s, o.ID, b.ID, midnight.Add(5*time.Second)); got.SpentNanos != 120 || got.ReservedNanos != 0 {
			t.Fatalf("the new day = spent %d reserved %d, want 120 and 0", got.SpentNanos, got.ReservedNanos)
		}
		// Many holds race over the next midnight: the window rolls once (a
		// second roll would forget what the first holds took).
		next := midnight.AddDate(0, 0, 1)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for i := range 60 {
			wg.Go(func() {
				if _, err := hold(next.Add(time.Duration(i)*time.Millisecond), 10); err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if ok != 30 {
			t.Fatalf("%d holds of 10 fit a new day of 300, want 30", ok)
		}
		if got := budgetOf(t, s, o.ID, b.ID, next.Add(time.Second)); got.ReservedNanos != 300 || got.SpentNanos != 0 || !got.WindowStart.Equal(next) {
			t.Fatalf("after the race = %+v", got)
		}
		if _, err := hold(next.Add(time.Minute), 1); !errors.As(err, new(*store.BudgetExceededError)) {
			t.Fatalf("a hold past a full day: %v, want over budget", err)
		}
	})

	t.Run("ReleasedHoldsLeaveTheBudget", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		if s.Organizations == nil {
			t.Skip("the backend keeps no organisations")
		}
		o := newOrg(t, s, "wonka", "UTC")
		topUp(t, s, o.BillingUserID, 1_000_000)
		b := o.budget(t, s, store.ScopeKey, "key-1", store.PeriodTotal, 500, t0)
		r := reservation(o.BillingUserID, 400, time.Minute)
		r.Budgets = store.BudgetScopes{OrgID: o.ID, KeyID: "key-1"}
		_, err := s.Ledger.Reserve(ctx, r)
		noErr(t, err, "Reserve")
		n, err := s.Ledger.ReleaseExpired(ctx, t0.Add(2*time.Minute))
		noErr(t, err, "ReleaseExpired")
		if n != 1 {
			t.Fatalf("released %d, want 1", n)
		}
		if got := budgetOf(t, s, o.ID, b.ID, t0.Add(2*time.Minute)); got.ReservedNanos != 0 || got.SpentNanos != 0 {
			t.Fatalf("after the release = %+v", got)
		}
		st, err := s.Ledger.Settle(ctx, r.ID, 300, t0.Add(3*time.Minute), usageOf(o.BillingUserID))
		noErr(t, err, "a late Settle")
		if !st.Late || st.ChargedNanos != 300 {
			t.Fatalf("late settle = %+v", st)
		}
		if got := budgetOf(t, s, o.ID, b.ID, t0.Add(3*time.Minute)); got.ReservedNanos != 0 || got.SpentNanos != 300 {
			t.Fatalf("after the late settle = %+v", got)
		}
	})
}
