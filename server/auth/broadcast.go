package auth

import (
	"context"
	"encoding/hex"
	"time"
)

// Eviction names cached credentials that every gateway must drop: a logged
// out session, a revoked key, or every credential of a user whose tier
// changed. Gateways sharing stores exchange them through a Broadcaster
// (Redis pub/sub in scale mode), so a logout or revocation on one takes
// effect on all within the broadcast's latency instead of the cache TTL.
type Eviction struct {
	// Session is the hex SHA-256 of a session token.
	Session string `json:"session,omitempty"`
	// KeyID is an API key's ID.
	KeyID string `json:"key_id,omitempty"`
	// UserID drops every cached credential of the user.
	UserID string `json:"user_id,omitempty"`
}

// Broadcaster tells the other gateways about an eviction. Delivery is best
// effort: a gateway that misses one still drops the credential when its
// cache entry ages out (Config.CacheTTL).
type Broadcaster interface {
	Publish(ctx context.Context, e Eviction) error
}

// Evict applies an eviction received from another gateway.
func (a *Authenticator) Evict(e Eviction) {
	if e.Session != "" {
		if b, err := hex.DecodeString(e.Session); err == nil && len(b) == len(digest{}) {
			var d digest
			copy(d[:], b)
			a.evict(cacheKey{ChannelSession, d})
		}
	}
	if e.KeyID != "" {
		a.evictWhere(func(c *cached) bool { return c.principal.KeyID == e.KeyID })
	}
	if e.UserID != "" {
		a.evictWhere(func(c *cached) bool { return c.user.ID == e.UserID })
	}
}

// broadcast applies e here and publishes it to the other gateways.
func (a *Authenticator) broadcast(ctx context.Context, e Eviction) {
	a.Evict(e)
	if a.cfg.Broadcast == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := a.cfg.Broadcast.Publish(ctx, e); err != nil {
		a.log.Warn("auth: eviction not broadcast; other gateways drop it within the cache TTL", "err", err)
	}
}
