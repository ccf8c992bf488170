package api

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// CreateInvitation issues a sign-up invitation and returns its code once.
func (h *AdminHandler) CreateInvitation(ctx context.Context, req *connect.Request[parleyv1.CreateInvitationRequest]) (*connect.Response[parleyv1.CreateInvitationResponse], error) {
	p, _ := auth.FromContext(ctx)
	var ttl int64
	if d := req.Msg.GetTtl(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, apierr.InvalidArgument("ttl", "is not a valid duration")
		}
		ttl = int64(d.AsDuration())
		if ttl == 0 {
			return nil, apierr.InvalidArgument("ttl", "must be positive (leave it unset for the default)")
		}
	}
	inv, code, err := h.Auth.CreateInvitation(ctx, p.UserID, req.Msg.GetNote(), req.Msg.GetMaxUses(), time.Duration(ttl), clientOf(req))
	if err != nil {
		return nil, h.typed(ctx, "invitation", err)
	}
	return connect.NewResponse(&parleyv1.CreateInvitationResponse{Invitation: InvitationToProto(inv), Code: code}), nil
}

// ListInvitations pages through every invitation, newest first.
func (h *AdminHandler) ListInvitations(ctx context.Context, req *connect.Request[parleyv1.ListInvitationsRequest]) (*connect.Response[parleyv1.ListInvitationsResponse], error) {
	p, _ := auth.FromContext(ctx)
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	const list = "admin_invitations"
	cursor, err := h.Pages.Open(p.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	invs, next, err := h.Auth.ListInvitations(ctx, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, h.typed(ctx, "page_token", err)
	}
	res := &parleyv1.ListInvitationsResponse{NextPageToken: h.Pages.Seal(p.UserID, list, next)}
	for _, inv := range invs {
		res.Invitations = append(res.Invitations, InvitationToProto(inv))
	}
	return connect.NewResponse(res), nil
}

// RevokeInvitation revokes an invitation; the accounts it made stay.
func (h *AdminHandler) RevokeInvitation(ctx context.Context, req *connect.Request[parleyv1.RevokeInvitationRequest]) (*connect.Response[parleyv1.RevokeInvitationResponse], error) {
	p, _ := auth.FromContext(ctx)
	id := req.Msg.GetInvitationId()
	if id == "" {
		return nil, apierr.InvalidArgument("invitation_id", "is required")
	}
	if len(id) > 64 {
		return nil, apierr.InvalidArgument("invitation_id", "is longer than 64 bytes")
	}
	inv, err := h.Auth.RevokeInvitation(ctx, p.UserID, id, clientOf(req))
	if err != nil {
		return nil, h.typed(ctx, "invitation", err)
	}
	return connect.NewResponse(&parleyv1.RevokeInvitationResponse{Invitation: InvitationToProto(inv)}), nil
}

// InvitationToProto maps a store invitation to the API's (never the code's hash).
func InvitationToProto(inv store.Invitation) *parleyv1.Invitation {
	out := &parleyv1.Invitation{
		InvitationId: inv.ID, Prefix: inv.Prefix, Note: inv.Note, CreatedBy: inv.CreatedBy,
		CreatedAt: timestamppb.New(inv.CreatedAt), ExpiresAt: timestamppb.New(inv.ExpiresAt),
		MaxUses: inv.MaxUses, Uses: inv.Uses,
	}
	if !inv.LastUsedAt.IsZero() {
		out.LastUsedAt = timestamppb.New(inv.LastUsedAt)
	}
	if !inv.RevokedAt.IsZero() {
		out.RevokedAt = timestamppb.New(inv.RevokedAt)
	}
	return out
}
