package api

import (
	"context"
	"encoding/base64"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// maxEmail is the longest email address (RFC 5321's path limit).
const maxEmail = 254

// SearchUsers pages through the users whose email starts with a prefix,
// with their balances.
func (h *AdminHandler) SearchUsers(ctx context.Context, req *connect.Request[parleyv1.SearchUsersRequest]) (*connect.Response[parleyv1.SearchUsersResponse], error) {
	p, _ := auth.FromContext(ctx)
	prefix := strings.ToLower(strings.TrimSpace(req.Msg.GetEmailPrefix()))
	if len(prefix) > maxEmail {
		return nil, apierr.InvalidArgument("email_prefix", "is over 254 bytes")
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	list := "admin_users:" + base64.RawURLEncoding.EncodeToString([]byte(prefix))
	cursor, err := h.Pages.Open(p.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	users, next, err := h.Auth.SearchUsers(ctx, prefix, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, h.typed(ctx, "page_token", err)
	}
	res := &parleyv1.SearchUsersResponse{NextPageToken: h.Pages.Seal(p.UserID, list, next)}
	for _, u := range users {
		b, err := h.Billing.Balance(ctx, u.ID)
		if err != nil {
			return nil, h.typed(ctx, "user", err)
		}
		res.Users = append(res.Users, &parleyv1.AdminUser{User: UserToProto(u), BalanceNanos: b.AvailableNanos, ReservedNanos: b.ReservedNanos})
	}
	return connect.NewResponse(res), nil
}

// SetUserAdmin grants or takes away a user's admin flag; it is audited.
func (h *AdminHandler) SetUserAdmin(ctx context.Context, req *connect.Request[parleyv1.SetUserAdminRequest]) (*connect.Response[parleyv1.SetUserAdminResponse], error) {
	p, _ := auth.FromContext(ctx)
	userID, err := h.userID(ctx, req.Msg.GetUserId(), req.Msg.GetEmail())
	if err != nil {
		return nil, err
	}
	u, err := h.Auth.SetUserAdmin(ctx, p, userID, req.Msg.GetAdmin(), clientOf(req))
	if err != nil {
		return nil, h.typed(ctx, "user", err)
	}
	return connect.NewResponse(&parleyv1.SetUserAdminResponse{User: UserToProto(u)}), nil
}

// ListAuditEvents pages through one user's audit log, newest first.
func (h *AdminHandler) ListAuditEvents(ctx context.Context, req *connect.Request[parleyv1.ListAuditEventsRequest]) (*connect.Response[parleyv1.ListAuditEventsResponse], error) {
	p, _ := auth.FromContext(ctx)
	userID := req.Msg.GetUserId()
	if userID == "" {
		return nil, apierr.InvalidArgument("user_id", "is required")
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	list := "admin_audit:" + base64.RawURLEncoding.EncodeToString([]byte(userID))
	cursor, err := h.Pages.Open(p.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	events, next, err := h.Audit.List(ctx, userID, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, h.typed(ctx, "page_token", err)
	}
	res := &parleyv1.ListAuditEventsResponse{NextPageToken: h.Pages.Seal(p.UserID, list, next)}
	for _, e := range events {
		res.Events = append(res.Events, &parleyv1.AuditEvent{
			EventId: e.ID, UserId: e.UserID, Kind: e.Kind, Ip: e.IP, UserAgent: e.UserAgent, Detail: e.Detail, At: timestamppb.New(e.At),
		})
	}
	return connect.NewResponse(res), nil
}
