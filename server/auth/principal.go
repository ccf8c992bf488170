package auth

import (
	"context"
	"fmt"
	"net/netip"

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
	// Org is set when an organisation's key authenticated the call
	// (UserID is then the organisation's billing user).
	Org *OrgKey
}

// OrgKey is what an organisation's key carries into every request: the
// scopes its holds are taken against and the key's own bounds.
type OrgKey struct {
	OrgID, TeamID string
	// MemberID is the member who made the key.
	MemberID string
	// Models lists the models the key may use (ids or aliases); all when
	// empty.
	Models []string
	// AllowedIPs lists the prefixes the key works from; any when empty.
	AllowedIPs []netip.Prefix
	// RPM and TPM bound the key's requests and tokens a minute; 0: none.
	RPM, TPM int64
}

// Budgets names the scopes p's holds are taken against: none for a
// person.
func (p Principal) Budgets() store.BudgetScopes {
	if p.Org == nil {
		return store.BudgetScopes{}
	}
	return store.BudgetScopes{OrgID: p.Org.OrgID, TeamID: p.Org.TeamID, KeyID: p.KeyID, MemberID: p.Org.MemberID}
}

// AllowsIP reports whether ip may use the key (always for a person).
func (p Principal) AllowsIP(ip string) bool {
	if p.Org == nil || len(p.Org.AllowedIPs) == 0 {
		return true
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, pre := range p.Org.AllowedIPs {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// ParsePrefixes reads CIDR prefixes or single addresses.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if pre, err := netip.ParsePrefix(s); err == nil {
			out = append(out, pre.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR prefix", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
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
	p := Principal{
		UserID: u.ID, Email: u.Email, DisplayName: u.DisplayName, Tier: u.Tier,
		Channel: ch, KeyID: key.ID, ResponseCache: key.ResponseCache, Admin: u.Admin,
	}
	if p.Org = OrgKeyOf(key); p.Org != nil {
		p.Admin = false // an organisation's billing user is never a site admin
	}
	return p
}

// OrgKeyOf is the scope and bounds an organisation's key carries into its
// requests; nil for a person's key.
func OrgKeyOf(key store.APIKey) *OrgKey {
	if key.OrgID == "" {
		return nil
	}
	ips, _ := ParsePrefixes(key.AllowedIPs) // checked when the key was made
	return &OrgKey{OrgID: key.OrgID, TeamID: key.TeamID, MemberID: key.CreatedBy, Models: key.Models, AllowedIPs: ips, RPM: key.RPM, TPM: key.TPM}
}
