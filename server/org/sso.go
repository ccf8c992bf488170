package org

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// SSOOrganization returns the organisation whose SSO domain is email's,
// if the provider verified the address: its people may be made accounts
// at their first sign-in, and join it.
func (s *Service) SSOOrganization(ctx context.Context, email string, verified bool) (store.Organization, bool, error) {
	_, domain, ok := strings.Cut(email, "@")
	if !verified || !ok || domain == "" {
		return store.Organization{}, false, nil
	}
	o, err := s.Orgs.GetOrganizationBySSODomain(ctx, strings.ToLower(domain))
	if errors.Is(err, store.ErrNotFound) {
		return o, false, nil
	}
	if err != nil {
		return o, false, s.internal("finding an organisation by its SSO domain", err)
	}
	return o, true, nil
}

// SyncSSO applies what the identity provider says of u at a sign-in:
// u joins jit (the organisation of its verified address's domain, when
// found) as a member if it is not in it already (a member keeps its role),
// and in every organisation u is in, each team with an SSO group gains u
// if groups holds that group and loses it if not. Each change is in the
// organisation's audit log, by u, via the provider.
func (s *Service) SyncSSO(ctx context.Context, u store.User, jit *store.Organization, groups []string, c auth.Client) error {
	if jit != nil {
		if _, err := s.Orgs.GetMember(ctx, jit.ID, u.ID); errors.Is(err, store.ErrNotFound) {
			m := store.OrgMember{OrgID: jit.ID, UserID: u.ID, Email: u.Email, Role: store.RoleMember, CreatedAt: s.Now().UTC()}
			if err := s.Orgs.PutMember(ctx, m); err != nil {
				return s.internal("adding a member at sign-in", err)
			}
			s.record(ctx, s.ssoCaller(*jit, u, c), "org_member_set", map[string]string{"user_id": u.ID, "email": u.Email, "role": string(store.RoleMember), "via": "sso"})
		} else if err != nil {
			return s.internal("reading a membership", err)
		}
	}
	ms, err := s.Orgs.ListMemberships(ctx, u.ID)
	if err != nil {
		return s.internal("listing memberships", err)
	}
	for _, m := range ms {
		if err := s.syncTeams(ctx, m.Organization, u, groups, c); err != nil {
			return err
		}
	}
	return nil
}

// syncTeams makes u's memberships of o's teams with an SSO group follow
// groups.
func (s *Service) syncTeams(ctx context.Context, o store.Organization, u store.User, groups []string, c auth.Client) error {
	teams, err := s.Orgs.ListTeams(ctx, o.ID)
	if err != nil {
		return s.internal("listing teams", err)
	}
	in, err := s.Orgs.TeamsOf(ctx, o.ID, u.ID)
	if err != nil {
		return s.internal("listing a member's teams", err)
	}
	isIn := func(teamID string) bool {
		return slices.ContainsFunc(in, func(m store.TeamMember) bool { return m.TeamID == teamID })
	}
	caller := s.ssoCaller(o, u, c)
	for _, t := range teams {
		if t.SSOGroup == "" {
			continue
		}
		want, has := slices.Contains(groups, t.SSOGroup), isIn(t.ID)
		switch {
		case want && !has:
			m := store.TeamMember{TeamID: t.ID, UserID: u.ID, Role: store.TeamRoleMember, CreatedAt: s.Now().UTC()}
			if err := s.Orgs.PutTeamMember(ctx, m); err != nil {
				return s.internal("adding a team member at sign-in", err)
			}
			s.record(ctx, caller, "org_team_member_set", map[string]string{"team_id": t.ID, "user_id": u.ID, "role": string(m.Role), "via": "sso", "group": t.SSOGroup})
		case !want && has:
			if err := s.Orgs.RemoveTeamMember(ctx, t.ID, u.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return s.internal("removing a team member at sign-in", err)
			}
			s.record(ctx, caller, "org_team_member_removed", map[string]string{"team_id": t.ID, "user_id": u.ID, "via": "sso", "group": t.SSOGroup})
		}
	}
	return nil
}

func (s *Service) ssoCaller(o store.Organization, u store.User, c auth.Client) Caller {
	return Caller{Org: o, Principal: auth.Principal{UserID: u.ID, Email: u.Email}, Client: c}
}

// SetSSODomain gives an organisation its email domain, or clears it with
// "" (the operator's CLI: claiming a domain is the operator's word that
// the organisation owns it).
func (s *Service) SetSSODomain(ctx context.Context, orgID, domain string) (store.Organization, error) {
	domain = strings.ToLower(strings.TrimSpace(domain))
	if domain != "" {
		if _, err := auth.NormalizeEmail("x@" + domain); err != nil || strings.ContainsAny(domain, "@ ") {
			return store.Organization{}, apierr.InvalidArgument("domain", "is not an email domain")
		}
	}
	o, err := s.Orgs.GetOrganization(ctx, orgID)
	if err != nil {
		return o, err
	}
	o.SSODomain = domain
	if err := s.Orgs.UpdateOrganization(ctx, o); errors.Is(err, store.ErrConflict) {
		return o, apierr.AlreadyExists("an organisation with the SSO domain " + domain)
	} else if err != nil {
		return o, err
	}
	s.record(ctx, Caller{Org: o, Principal: auth.Principal{UserID: "operator", Email: "parley admin"}}, "org_sso_domain_set",
		map[string]string{"sso_domain": domain})
	return o, nil
}
