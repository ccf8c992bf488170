package auth

import (
	"context"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
)

// credentialKey carries the resolved credential in a request's context, for
// Logout (which needs the session) and GetMe (which needs the user).
type credentialKey struct{}

type credential struct {
	entry  *cached
	digest digest
}

// originKey carries the request's own origin (scheme://host), recorded by
// RecordOrigin before Connect hides the Host header.
type originKey struct{}

// RecordOrigin is the HTTP middleware that lets the interceptor know the
// request's own origin for the CSRF rule; it wraps the Connect handlers.
// Without it only the configured web origins count as same-site.
func RecordOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), originKey{}, selfOrigin(r))
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, remoteIPKey{}, ClientOf(r.RemoteAddr, "").IP)))
	})
}

func selfOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.ToLower(scheme + "://" + r.Host)
}

func normalizeOrigin(o string) string {
	return strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/"))
}

// admit applies the policy to one request: it authenticates its credential
// as access requires, enforces the CSRF rule, and returns ctx carrying the
// Principal.
func (a *Authenticator) admit(ctx context.Context, access Access, h http.Header, self string) (context.Context, error) {
	if access == AccessPublic {
		return ctx, nil
	}
	if access == 0 {
		return ctx, apierr.PermissionDenied("this procedure is not open to anyone")
	}
	ch, raw, present := credentialsOf(h)
	if !present {
		return ctx, errNoCredentials()
	}
	c, d, err := a.authenticate(ctx, ch, raw)
	if err != nil {
		return ctx, err
	}
	p := c.principal
	if p.Channel == ChannelSession {
		// CSRF: browsers send Origin on cross-site requests; a cookie
		// request from a page of another origin is refused. Bearer requests
		// cannot be forged by a page and are exempt.
		if origin := h.Get("Origin"); origin != "" {
			o := normalizeOrigin(origin)
			if o != self && !a.origins[o] {
				return ctx, apierr.PermissionDenied("cross-origin request with the session cookie refused: origin " + origin + " is not allowed")
			}
		}
	}
	switch access {
	case AccessSession:
		if p.Channel != ChannelSession {
			return ctx, apierr.PermissionDenied("this procedure needs a browser session; API keys cannot call it")
		}
	case AccessAdmin:
		if !p.Admin {
			return ctx, apierr.PermissionDenied("this procedure is for administrators")
		}
	}
	if ip, _ := ctx.Value(remoteIPKey{}).(string); !p.AllowsIP(ip) {
		return ctx, apierr.PermissionDenied("this API key is not allowed from " + ip + " (its organisation's IP allow-list)")
	}
	ctx = WithPrincipal(ctx, p)
	return context.WithValue(ctx, credentialKey{}, credential{entry: c, digest: d}), nil
}

// remoteIPKey carries the client's address (RecordOrigin), for an
// organisation key's IP allow-list.
type remoteIPKey struct{}

// Interceptor returns the Connect interceptor that authenticates every
// unary and streaming call by Policy. It needs RecordOrigin around the
// handlers for the CSRF rule's same-origin case. A call Gate admitted
// already passes as it is (its Principal is in the context).
func (a *Authenticator) Interceptor() connect.Interceptor { return interceptor{a} }

type interceptor struct{ a *Authenticator }

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient || gated(ctx, req.Spec().Procedure) {
			return next(ctx, req)
		}
		self, _ := ctx.Value(originKey{}).(string)
		ctx, err := i.a.admit(ctx, accessOf(req.Spec()), req.Header(), self)
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if gated(ctx, conn.Spec().Procedure) {
			return next(ctx, conn)
		}
		self, _ := ctx.Value(originKey{}).(string)
		ctx, err := i.a.admit(ctx, accessOf(conn.Spec()), conn.RequestHeader(), self)
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// Middleware is the auth layer for the endpoints that are not Connect
// handlers (the OpenAI-compatible API, the SSE adapter): it admits requests
// with access and reports refusals through writeErr, in the endpoint's own
// error format.
func (a *Authenticator) Middleware(access Access, writeErr func(http.ResponseWriter, *http.Request, *connect.Error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, err := a.admit(r.Context(), access, r.Header, selfOrigin(r))
			if err != nil {
				writeErr(w, r, asConnect(err))
				return
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

func asConnect(err error) *connect.Error {
	if ce, ok := err.(*connect.Error); ok {
		return ce
	}
	return apierr.Internal()
}
