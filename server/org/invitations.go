package org

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// The limits of an organisation's invitation.
const (
	DefaultInvitationTTL = 7 * 24 * time.Hour
	MaxInvitationTTL     = 30 * 24 * time.Hour
	MaxInvitationUses    = 1000
)

// InvitationSpec is what an invitation gives.
type InvitationSpec struct {
	Role     store.OrgRole
	TeamID   string
	TeamRole store.TeamRole
	Email    string
	MaxUses  int64
	TTL      time.Duration
}

// CreateInvitation makes an invitation link (owners and admins; owners only
// invite owners) and returns it with its code, which exists nowhere else.
func (s *Service) CreateInvitation(ctx context.Context, c Caller, spec InvitationSpec) (store.Invitation, string, error) {
	if !can(c.Role, manage) {
		return store.Invitation{}, "", denied("inviting members")
	}
	if !spec.Role.Valid() {
		return store.Invitation{}, "", apierr.InvalidArgument("role", "must be owner, admin, member or billing reader")
	}
	if spec.Role == store.RoleOwner && c.Role != store.RoleOwner {
		return store.Invitation{}, "", denied("inviting owners (owners only)")
	}
	if spec.TeamID != "" {
		if _, _, err := s.team(ctx, c, spec.TeamID); err != nil {
			return store.Invitation{}, "", err
		}
		if spec.TeamRole == "" {
			spec.TeamRole = store.TeamRoleMember
		}
		if !spec.TeamRole.Valid() {
			return store.Invitation{}, "", apierr.InvalidArgument("team_role", "must be admin or member")
		}
	} else if spec.TeamRole != "" {
		return store.Invitation{}, "", apierr.InvalidArgument("team_role", "needs team_id")
	}
	if strings.TrimSpace(spec.Email) != "" {
		email, err := auth.NormalizeEmail(spec.Email)
		if err != nil {
			return store.Invitation{}, "", apierr.InvalidArgument("email", err.Error())
		}
		spec.Email = email
	} else {
		spec.Email = ""
	}
	switch {
	case spec.MaxUses == 0:
		spec.MaxUses = 1
	case spec.MaxUses < 0 || spec.MaxUses > MaxInvitationUses:
		return store.Invitation{}, "", apierr.InvalidArgument("max_uses", "must be 1–"+strconv.Itoa(MaxInvitationUses))
	}
	switch {
	case spec.TTL == 0:
		spec.TTL = DefaultInvitationTTL
	case spec.TTL < time.Minute || spec.TTL > MaxInvitationTTL:
		return store.Invitation{}, "", apierr.InvalidArgument("ttl", "must be from one minute to 30 days (720h)")
	}
	code, hash, shown := auth.NewOrgInvitationCode()
	now := s.Now().UTC()
	inv := store.Invitation{ID: newID(), CodeHash: hash, Prefix: shown, CreatedBy: c.UserID, CreatedAt: now, ExpiresAt: now.Add(spec.TTL),
		MaxUses: spec.MaxUses, OrgID: c.Org.ID, Role: spec.Role, TeamID: spec.TeamID, TeamRole: spec.TeamRole, Email: spec.Email}
	if err := s.Accounts.CreateInvitation(ctx, inv); err != nil {
		return store.Invitation{}, "", s.internal("creating an invitation", err)
	}
	s.record(ctx, c, "org_invitation_created", map[string]string{"invitation_id": inv.ID, "prefix": inv.Prefix, "role": string(inv.Role),
		"team_id": inv.TeamID, "email": inv.Email, "max_uses": strconv.FormatInt(inv.MaxUses, 10)})
	return inv, code, nil
}

// Invitations lists the organisation's invitations (owners and admins).
func (s *Service) Invitations(ctx context.Context, c Caller) ([]store.Invitation, error) {
	if !can(c.Role, manage) {
		return nil, denied("reading invitations")
	}
	list, err := s.Accounts.ListOrgInvitations(ctx, c.Org.ID)
	if err != nil {
		return nil, s.internal("listing invitations", err)
	}
	return list, nil
}

// RevokeInvitation stops an invitation (owners and admins).
func (s *Service) RevokeInvitation(ctx context.Context, c Caller, id string) (store.Invitation, error) {
	if !can(c.Role, manage) {
		return store.Invitation{}, denied("revoking invitations")
	}
	inv, err := s.Accounts.RevokeInvitation(ctx, c.Org.ID, id, s.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return inv, apierr.NotFound("invitation")
	}
	if err != nil {
		return inv, s.internal("revoking an invitation", err)
	}
	s.record(ctx, c, "org_invitation_revoked", map[string]string{"invitation_id": inv.ID, "prefix": inv.Prefix})
	return inv, nil
}

// Offer is what an invitation offers its holder.
type Offer struct {
	Invitation    store.Invitation
	Org           store.Organization
	TeamName      string
	AlreadyMember bool
}

// PeekInvitation says what code offers p, or why p cannot use it.
func (s *Service) PeekInvitation(ctx context.Context, p auth.Principal, code string) (Offer, error) {
	hash, ok := auth.ParseOrgInvitationCode(code)
	if !ok {
		return Offer{}, apierr.NotFound("invitation")
	}
	inv, err := s.Accounts.GetInvitationByCode(ctx, hash)
	if errors.Is(err, store.ErrNotFound) || err == nil && inv.OrgID == "" {
		return Offer{}, apierr.NotFound("invitation")
	}
	if err != nil {
		return Offer{}, s.internal("reading an invitation", err)
	}
	// A member who opens a link again is told so, whatever the link's state.
	_, err = s.Orgs.GetMember(ctx, inv.OrgID, p.UserID)
	member := err == nil
	if !member {
		if err := usable(inv, p, s.Now()); err != nil {
			return Offer{}, err
		}
	}
	o, err := s.Orgs.GetOrganization(ctx, inv.OrgID)
	if err != nil {
		return Offer{}, s.internal("reading an organisation", err)
	}
	offer := Offer{Invitation: inv, Org: o, AlreadyMember: member}
	if inv.TeamID != "" {
		if t, err := s.Orgs.GetTeam(ctx, o.ID, inv.TeamID); err == nil {
			offer.TeamName = t.Name
		}
	}
	return offer, nil
}

// usable is why p cannot use inv at now, or nil.
func usable(inv store.Invitation, p auth.Principal, now time.Time) error {
	if why := inv.Unusable(now); why != "" {
		return apierr.FailedPrecondition("this invitation is " + why + "; ask the organisation's admins for another")
	}
	if inv.Email != "" && !strings.EqualFold(inv.Email, p.Email) {
		return apierr.FailedPrecondition("this invitation is for another address; sign in as the person it was sent to")
	}
	return nil
}

// AcceptInvitation makes p a member by code.
func (s *Service) AcceptInvitation(ctx context.Context, p auth.Principal, code string, client auth.Client) (store.Membership, error) {
	offer, err := s.PeekInvitation(ctx, p, code)
	if err != nil {
		return store.Membership{}, err
	}
	if offer.AlreadyMember {
		return store.Membership{}, apierr.AlreadyExists("your membership of " + offer.Org.Name)
	}
	inv, err := s.Accounts.AcceptOrgInvitation(ctx, offer.Invitation.CodeHash, p.UserID, s.Now().UTC())
	var unusable *store.InvitationUnusableError
	switch {
	case errors.As(err, &unusable):
		return store.Membership{}, apierr.FailedPrecondition("this invitation is " + unusable.Reason + "; ask the organisation's admins for another")
	case errors.Is(err, store.ErrConflict):
		return store.Membership{}, apierr.AlreadyExists("your membership of " + offer.Org.Name)
	case errors.Is(err, store.ErrNotFound):
		return store.Membership{}, apierr.NotFound("invitation")
	case err != nil:
		return store.Membership{}, s.internal("accepting an invitation", err)
	}
	c := Caller{Principal: p, Org: offer.Org, Role: inv.Role, Client: client}
	s.record(ctx, c, "org_invitation_accepted", map[string]string{"invitation_id": inv.ID, "prefix": inv.Prefix, "user_id": p.UserID,
		"email": p.Email, "role": string(inv.Role), "team_id": inv.TeamID})
	return store.Membership{Organization: offer.Org, Role: inv.Role}, nil
}
