package api

import (
	"context"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// Password length bounds, in bytes.
const (
	minPasswordBytes = 10
	maxPasswordBytes = 256
	maxDisplayName   = 100
	// maxInvitationCode bounds SignUpRequest.invitation_code, in bytes.
	maxInvitationCode = 128
)

// AuthHandler serves AuthService.
type AuthHandler struct {
	Auth *auth.Authenticator
	// SSOLoginURL and SSOName are the identity provider's sign-in path and
	// button label; empty when single sign-on is off.
	SSOLoginURL, SSOName string
}

var _ parleyv1connect.AuthServiceHandler = (*AuthHandler)(nil)

// SignUp creates a user and sets the session cookie.
func (h *AuthHandler) SignUp(ctx context.Context, req *connect.Request[parleyv1.SignUpRequest]) (*connect.Response[parleyv1.SignUpResponse], error) {
	email, err := validEmail(req.Msg.GetEmail())
	if err != nil {
		return nil, err
	}
	if err := validPassword(req.Msg.GetPassword()); err != nil {
		return nil, err
	}
	name := req.Msg.GetDisplayName()
	if !utf8.ValidString(name) {
		return nil, apierr.InvalidArgument("display_name", "is not valid UTF-8")
	}
	if utf8.RuneCountInString(name) > maxDisplayName {
		return nil, apierr.InvalidArgument("display_name", "is longer than 100 characters")
	}
	code := req.Msg.GetInvitationCode()
	if len(code) > maxInvitationCode {
		return nil, apierr.InvalidArgument("invitation_code", "is longer than 128 bytes")
	}
	u, s, err := h.Auth.SignUp(ctx, email, req.Msg.GetPassword(), name, code, clientOf(req))
	if err != nil {
		return nil, err
	}
	res := connect.NewResponse(&parleyv1.SignUpResponse{User: UserToProto(u), SessionExpiresAt: timestamppb.New(s.ExpiresAt)})
	res.Header().Add("Set-Cookie", h.Auth.SessionCookie(s.Token))
	return res, nil
}

// GetSignUpPolicy says who may sign up here (the sign-up form asks before
// it is filled in).
func (h *AuthHandler) GetSignUpPolicy(context.Context, *connect.Request[parleyv1.GetSignUpPolicyRequest]) (*connect.Response[parleyv1.GetSignUpPolicyResponse], error) {
	p := parleyv1.SignUpPolicy_SIGN_UP_POLICY_OPEN
	switch h.Auth.SignUpPolicy() {
	case auth.SignUpInvite:
		p = parleyv1.SignUpPolicy_SIGN_UP_POLICY_INVITE
	case auth.SignUpClosed:
		p = parleyv1.SignUpPolicy_SIGN_UP_POLICY_CLOSED
	}
	return connect.NewResponse(&parleyv1.GetSignUpPolicyResponse{Policy: p, SsoLoginUrl: h.SSOLoginURL, SsoName: h.SSOName}), nil
}

// Login checks the password and sets the session cookie.
func (h *AuthHandler) Login(ctx context.Context, req *connect.Request[parleyv1.LoginRequest]) (*connect.Response[parleyv1.LoginResponse], error) {
	email, err := validEmail(req.Msg.GetEmail())
	if err != nil {
		return nil, err
	}
	if req.Msg.GetPassword() == "" {
		return nil, apierr.InvalidArgument("password", "is required")
	}
	if len(req.Msg.GetPassword()) > maxPasswordBytes {
		return nil, apierr.InvalidArgument("password", "is longer than 256 bytes")
	}
	u, s, err := h.Auth.Login(ctx, email, req.Msg.GetPassword(), clientOf(req))
	if err != nil {
		return nil, err
	}
	res := connect.NewResponse(&parleyv1.LoginResponse{User: UserToProto(u), SessionExpiresAt: timestamppb.New(s.ExpiresAt)})
	res.Header().Add("Set-Cookie", h.Auth.SessionCookie(s.Token))
	return res, nil
}

// Logout ends the caller's session and clears the cookie; with an API key it
// does nothing.
func (h *AuthHandler) Logout(ctx context.Context, req *connect.Request[parleyv1.LogoutRequest]) (*connect.Response[parleyv1.LogoutResponse], error) {
	ended, err := h.Auth.Logout(ctx, clientOf(req))
	if err != nil {
		return nil, err
	}
	res := connect.NewResponse(&parleyv1.LogoutResponse{})
	if ended {
		res.Header().Add("Set-Cookie", h.Auth.ClearCookie())
	}
	return res, nil
}

// GetMe returns the caller, from the auth cache.
func (h *AuthHandler) GetMe(ctx context.Context, _ *connect.Request[parleyv1.GetMeRequest]) (*connect.Response[parleyv1.GetMeResponse], error) {
	u, p, err := h.Auth.Me(ctx)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.GetMeResponse{User: UserToProto(u), ApiKeyId: p.KeyID, Channel: parleyv1.AuthChannel_AUTH_CHANNEL_SESSION}
	if p.Channel == auth.ChannelAPIKey {
		res.Channel = parleyv1.AuthChannel_AUTH_CHANNEL_API_KEY
	}
	return connect.NewResponse(res), nil
}

// UserToProto maps a store user to the API's (never the password hash).
func UserToProto(u store.User) *parleyv1.User {
	return &parleyv1.User{
		UserId: u.ID, Email: u.Email, DisplayName: u.DisplayName,
		Tier: TierToProto(u.Tier), Admin: u.Admin, CreatedAt: timestamppb.New(u.CreatedAt),
	}
}

func validEmail(s string) (string, error) {
	email, err := auth.NormalizeEmail(s)
	if err != nil {
		return "", apierr.InvalidArgument("email", err.Error())
	}
	return email, nil
}

func validPassword(s string) error {
	switch {
	case s == "":
		return apierr.InvalidArgument("password", "is required")
	case len(s) < minPasswordBytes:
		return apierr.InvalidArgument("password", "is shorter than 10 bytes")
	case len(s) > maxPasswordBytes:
		return apierr.InvalidArgument("password", "is longer than 256 bytes")
	}
	return nil
}

// clientOf is the caller's address and User-Agent, for the audit log and the
// pre-auth limiter.
func clientOf(req connect.AnyRequest) auth.Client {
	return auth.ClientOf(req.Peer().Addr, req.Header().Get("User-Agent"))
}
