package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/org"
	"github.com/parleyhq/parley/server/store"
)

func orgInvitationToProto(inv store.Invitation) *parleyv1.OrganizationInvitation {
	return &parleyv1.OrganizationInvitation{
		InvitationId: inv.ID, Prefix: inv.Prefix, Role: keyOf(orgRoles, inv.Role), TeamId: inv.TeamID, TeamRole: keyOf(teamRoles, inv.TeamRole),
		Email: inv.Email, MaxUses: inv.MaxUses, Uses: inv.Uses, CreatedBy: inv.CreatedBy,
		CreateTime: timestamppb.New(inv.CreatedAt), ExpireTime: timestamppb.New(inv.ExpiresAt), RevokeTime: timeOrNil(inv.RevokedAt),
	}
}

// CreateOrganizationInvitation makes an invitation link.
func (h *OrganizationHandler) CreateOrganizationInvitation(ctx context.Context, req *connect.Request[parleyv1.CreateOrganizationInvitationRequest]) (*connect.Response[parleyv1.CreateOrganizationInvitationResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	role, ok := orgRoles[req.Msg.GetRole()]
	if !ok {
		return nil, apierr.InvalidArgument("role", "must be owner, admin, member or billing reader")
	}
	spec := org.InvitationSpec{Role: role, TeamID: req.Msg.GetTeamId(), Email: req.Msg.GetEmail(), MaxUses: req.Msg.GetMaxUses()}
	if req.Msg.GetTeamRole() != parleyv1.TeamRole_TEAM_ROLE_UNSPECIFIED {
		if spec.TeamRole, err = teamRole("team_role", req.Msg.GetTeamRole()); err != nil {
			return nil, err
		}
	}
	if d := req.Msg.GetTtl(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, apierr.InvalidArgument("ttl", "is not a valid duration")
		}
		if spec.TTL = d.AsDuration(); spec.TTL == 0 {
			return nil, apierr.InvalidArgument("ttl", "must be from one minute to 30 days (720h)")
		}
	}
	inv, code, err := h.Orgs.CreateInvitation(ctx, c, spec)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateOrganizationInvitationResponse{Invitation: orgInvitationToProto(inv), Code: code}), nil
}

// ListOrganizationInvitations lists the organisation's invitations.
func (h *OrganizationHandler) ListOrganizationInvitations(ctx context.Context, req *connect.Request[parleyv1.ListOrganizationInvitationsRequest]) (*connect.Response[parleyv1.ListOrganizationInvitationsResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	list, err := h.Orgs.Invitations(ctx, c)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListOrganizationInvitationsResponse{}
	for _, inv := range list {
		res.Invitations = append(res.Invitations, orgInvitationToProto(inv))
	}
	return connect.NewResponse(res), nil
}

// RevokeOrganizationInvitation stops an invitation.
func (h *OrganizationHandler) RevokeOrganizationInvitation(ctx context.Context, req *connect.Request[parleyv1.RevokeOrganizationInvitationRequest]) (*connect.Response[parleyv1.RevokeOrganizationInvitationResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if req.Msg.GetInvitationId() == "" {
		return nil, apierr.InvalidArgument("invitation_id", "is required")
	}
	inv, err := h.Orgs.RevokeInvitation(ctx, c, req.Msg.GetInvitationId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.RevokeOrganizationInvitationResponse{Invitation: orgInvitationToProto(inv)}), nil
}

// GetOrganizationInvitation says what a code offers.
func (h *OrganizationHandler) GetOrganizationInvitation(ctx context.Context, req *connect.Request[parleyv1.GetOrganizationInvitationRequest]) (*connect.Response[parleyv1.GetOrganizationInvitationResponse], error) {
	p, _ := auth.FromContext(ctx)
	if req.Msg.GetCode() == "" {
		return nil, apierr.InvalidArgument("code", "is required")
	}
	o, err := h.Orgs.PeekInvitation(ctx, p, req.Msg.GetCode())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetOrganizationInvitationResponse{
		OrganizationId: o.Org.ID, OrganizationName: o.Org.Name, Role: keyOf(orgRoles, o.Invitation.Role), TeamName: o.TeamName,
		ExpireTime: timestamppb.New(o.Invitation.ExpiresAt), AlreadyMember: o.AlreadyMember,
	}), nil
}

// AcceptOrganizationInvitation joins the caller to the organisation.
func (h *OrganizationHandler) AcceptOrganizationInvitation(ctx context.Context, req *connect.Request[parleyv1.AcceptOrganizationInvitationRequest]) (*connect.Response[parleyv1.AcceptOrganizationInvitationResponse], error) {
	p, _ := auth.FromContext(ctx)
	if req.Msg.GetCode() == "" {
		return nil, apierr.InvalidArgument("code", "is required")
	}
	m, err := h.Orgs.AcceptInvitation(ctx, p, req.Msg.GetCode(), clientOf(req))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.AcceptOrganizationInvitationResponse{
		Membership: &parleyv1.OrganizationMembership{Organization: orgToProto(m.Organization), Role: keyOf(orgRoles, m.Role)},
	}), nil
}
