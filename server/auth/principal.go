package auth

import (
	"context"

	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/store"
)

// Channel is how a caller authenticated: it decides which limits and which
// billing apply (tier limits for the web, usage billing for the API).
type Channel int

// The channels.
const (
	// ChannelSession is a browser session: the Session_id cookie.
	ChannelSession Channel = iota + 1
	// ChannelAPIKey is an API key: Authorization: Bearer pk_….
	ChannelAPIKey
)

// String returns the channel's name for logs.
func (c Channel) String() string {
	switch c {
	case ChannelSession:
		return "session"
	case ChannelAPIKey:
		return "api_key"
	}
	return "none"
}

// Principal is the authenticated caller, as every handler after the auth
// layer sees it.
type Principal struct {
	UserID, Email, DisplayName string
	// Tier is the user's subscription tier.
	Tier store.Tier
	// Channel is how the call was authenticated.
	Channel Channel
	// KeyID is the API key's id when Channel is ChannelAPIKey.
	KeyID string
	// ResponseCache is the API key's response cache default (the
	// operator's when unset, and always on the session channel).
	ResponseCache store.ResponseCacheMode
	// Admin grants the AdminService.
	Admin bool
}

type principalKey struct{}

// FromContext returns the Principal the auth layer put in ctx; false on a
// public procedure or outside the auth layer.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// WithPrincipal returns ctx carrying p, as the auth layer does (and tests).
// The request log (obs.NoteCaller) learns the caller's user and key ids.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	obs.NoteCaller(ctx, p.UserID, p.KeyID)
	return context.WithValue(ctx, principalKey{}, p)
}

func principalOf(u store.User, ch Channel, key store.APIKey) Principal {
	return Principal{
		UserID: u.ID, Email: u.Email, DisplayName: u.DisplayName, Tier: u.Tier,
		Channel: ch, KeyID: key.ID, ResponseCache: key.ResponseCache, Admin: u.Admin,
	}
}
