package auth

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// Client is who is on the other end of a request, for the audit log and the
// pre-auth limiter.
type Client struct {
	// IP is the client address without the port.
	IP string
	// UserAgent is the User-Agent header.
	UserAgent string
}

// ClientOf returns the Client of a request from its remote address
// (host:port, as connect.Peer.Addr or http.Request.RemoteAddr give it) and
// its User-Agent. Forwarded-for headers are not trusted.
func ClientOf(remoteAddr, userAgent string) Client {
	ip := remoteAddr
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		ip = host
	}
	if len(userAgent) > 512 {
		userAgent = userAgent[:512]
	}
	return Client{IP: ip, UserAgent: userAgent}
}

// AddressKey is the part of a client address that the pre-auth throttles
// count by: an IPv4 address whole, an IPv6 address by its /64 (the smallest
// block a site is given, so whoever holds one holds all 2^64 of its
// addresses and must not get as many buckets). An IPv4-mapped IPv6 address
// counts as its IPv4 address. What does not parse is used as it is.
func AddressKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is4() {
		return addr.String()
	}
	p, _ := addr.Prefix(64)
	return p.String()
}

// signUpGlobalKey is the bucket of every sign-up on every gateway sharing
// the limiter.
const signUpGlobalKey = "auth:signup:global"

// throttleSignUp takes one sign-up from the client address's bucket (its
// /64 for IPv6), the email's and the global one, all or nothing, before any
// password work is done.
func (a *Authenticator) throttleSignUp(ctx context.Context, email string, c Client) error {
	takes := []store.Take{
		{Key: "auth:signup:ip:" + AddressKey(c.IP), Limit: a.cfg.LoginRate, Window: time.Minute, N: 1},
		{Key: "auth:signup:email:" + email, Limit: a.cfg.LoginRate, Window: time.Minute, N: 1},
		{Key: signUpGlobalKey, Limit: a.cfg.SignUpRateGlobal, Window: time.Minute, N: 1},
	}
	d, err := a.limiter.Take(ctx, a.now(), takes)
	if err != nil {
		a.log.Error("auth: limiter failed", "err", err)
		return apierr.Internal()
	}
	if !d.Allowed {
		msg := "too many signup attempts; try again later"
		if d.Denied == 2 {
			msg = "too many sign-ups on this server just now (--signup-rate-global); try again later"
		}
		return apierr.ResourceExhausted(msg, max(d.RetryAfter, time.Second))
	}
	return nil
}

// refundSignUp gives back a sign-up's take of the global bucket when it
// made no account.
func (a *Authenticator) refundSignUp(ctx context.Context) {
	if _, err := a.limiter.Refund(ctx, a.now(), signUpGlobalKey, a.cfg.SignUpRateGlobal, time.Minute, 1); err != nil {
		a.log.Error("auth: limiter failed", "err", err)
	}
}

// The login throttle. Wrong passwords must slow a guesser down without
// letting anyone lock the account's owner out by failing on purpose:
//
//   - per client IP (an IPv6 one by its /64, see AddressKey), before any
//     password work: LoginRate attempts a minute (whatever the account), as
//     for sign-up;
//   - per (account, client IP): LoginFreeFailures failures are free; each
//     one after that shuts that address out of that account for a back-off
//     that doubles, from loginBackoffBase up to LoginBackoffMax. A failure
//     is forgotten every pairForget; a successful login clears the pair. The
//     owner, at another address, is not slowed at all;
//   - per account, from every address together: the same back-off, but
//     only past LoginAccountFreeFailures failures (a failure is forgotten
//     every accountForget), so only a guesser spread over very many
//     addresses ever meets it. A success does not clear it.
//
// Forgetting is slower than the back-off grows, so a persistent guesser
// ends at one try per LoginBackoffMax per address; across all addresses an
// account takes, sustained, about one wrong password per accountForget, and
// its owner then waits at most about that long.
//
// Unknown emails are counted as known ones are, so the throttle says nothing
// about which accounts exist. Attempts racing through the same open gate at
// the same instant all get their one try (the per-IP bucket bounds them);
// each failure then counts, so the back-off only grows faster.
const (
	loginBackoffBase = time.Second
	pairForget       = time.Hour
	accountForget    = time.Minute
	loginMemory      = 1024 // failures a counter holds at most
)

// loginScope is one of the two back-offs: its bucket keys and how many
// failures are free and how fast they are forgotten.
type loginScope struct {
	what   string // how the error names it
	key    string
	free   int64
	forget time.Duration
}

func (a *Authenticator) loginScopes(email string, c Client) [2]loginScope {
	return [2]loginScope{
		{"for this account from this address", "auth:login:pair:" + email + ":" + AddressKey(c.IP), int64(a.cfg.LoginFreeFailures), pairForget},
		{"for this account", "auth:login:account:" + email, int64(a.cfg.LoginAccountFreeFailures), accountForget},
	}
}

// gateLimit is a back-off gate's size: the longest back-off in
// milliseconds. A shut gate is a bucket drained by the back-off's
// milliseconds, refilling one a millisecond; it is open when full.
func (a *Authenticator) gateLimit() int64 { return a.cfg.LoginBackoffMax.Milliseconds() }

// loginGate refuses a login attempt while either back-off gate is shut, then
// takes the attempt from the client IP's bucket; all before any password
// work.
func (a *Authenticator) loginGate(ctx context.Context, email string, c Client) error {
	now := a.now()
	for _, sc := range a.loginScopes(email, c) {
		st, err := a.limiter.Peek(ctx, now, sc.key+":gate", a.gateLimit(), a.cfg.LoginBackoffMax)
		if err != nil {
			a.log.Error("auth: limiter failed", "err", err)
			return apierr.Internal()
		}
		if st.Remaining < a.gateLimit() {
			wait := max(st.ResetAt.Sub(now), time.Second)
			return apierr.ResourceExhausted(fmt.Sprintf("too many failed logins %s; try again in %s", sc.what, wait.Round(time.Second)), wait)
		}
	}
	d, err := a.limiter.Take(ctx, now, []store.Take{{Key: "auth:login:ip:" + AddressKey(c.IP), Limit: a.cfg.LoginRate, Window: time.Minute, N: 1}})
	if err != nil {
		a.log.Error("auth: limiter failed", "err", err)
		return apierr.Internal()
	}
	if !d.Allowed {
		return apierr.ResourceExhausted("too many login attempts from this address; try again later", max(d.RetryAfter, time.Second))
	}
	return nil
}

// loginFailed counts a failure in both scopes and shuts the gate of each
// past its free failures for the back-off the count has reached.
func (a *Authenticator) loginFailed(ctx context.Context, email string, c Client) {
	now := a.now()
	for _, sc := range a.loginScopes(email, c) {
		window := sc.forget * loginMemory
		d, err := a.limiter.Take(ctx, now, []store.Take{{Key: sc.key + ":failures", Limit: loginMemory, Window: window, N: 1}})
		if err != nil {
			a.log.Error("auth: limiter failed", "err", err)
			return
		}
		n := int64(loginMemory) // the counter is full: as many as it holds
		if d.Allowed {
			n = loginMemory - d.States[0].Remaining
		}
		wait := LoginBackoff(n, sc.free, a.cfg.LoginBackoffMax)
		if wait <= 0 {
			continue
		}
		// Shut the gate: drain it by the back-off. Refused only when a
		// concurrent failure has drained it already.
		if _, err := a.limiter.Take(ctx, now, []store.Take{{Key: sc.key + ":gate", Limit: a.gateLimit(), Window: a.cfg.LoginBackoffMax, N: wait.Milliseconds()}}); err != nil {
			a.log.Error("auth: limiter failed", "err", err)
		}
	}
}

// loginSucceeded clears the (account, address) back-off: the owner's own
// mistypes are forgiven once they get in.
func (a *Authenticator) loginSucceeded(ctx context.Context, email string, c Client) {
	sc := a.loginScopes(email, c)[0]
	now := a.now()
	if _, err := a.limiter.Refund(ctx, now, sc.key+":failures", loginMemory, sc.forget*loginMemory, loginMemory); err != nil {
		a.log.Error("auth: limiter failed", "err", err)
	}
}

// LoginBackoff is how long a gate stays shut after the n-th failure in a
// row when free failures are allowed: nothing up to free, then 1 s, 2 s, 4 s
// … doubling up to most.
func LoginBackoff(n, free int64, most time.Duration) time.Duration {
	if n <= free {
		return 0
	}
	shift := n - free - 1
	if shift >= 30 {
		return most
	}
	return min(loginBackoffBase<<shift, most)
}
