package auth

import (
	"context"
	"net"
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

// throttle takes one attempt of op (login or signup) from the client IP's
// and the email's buckets, before any password work is done.
func (a *Authenticator) throttle(ctx context.Context, op, email string, c Client) error {
	takes := []store.Take{
		{Key: "auth:" + op + ":ip:" + c.IP, Limit: a.cfg.LoginRate, Window: time.Minute, N: 1},
		{Key: "auth:" + op + ":email:" + email, Limit: a.cfg.LoginRate, Window: time.Minute, N: 1},
	}
	d, err := a.limiter.Take(ctx, a.now(), takes)
	if err != nil {
		a.log.Error("auth: limiter failed", "err", err)
		return apierr.Internal()
	}
	if !d.Allowed {
		return apierr.ResourceExhausted("too many "+op+" attempts; try again later", max(d.RetryAfter, time.Second))
	}
	return nil
}
