package worker

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// Workers and gateways share one secret, the worker token: the gateway sends
// it as "Authorization: Bearer <token>" on every WorkerService call, and a
// worker given a token refuses every call without exactly that token with
// unauthenticated, before reading the request body. Anyone who can reach a
// worker's port without it would otherwise generate for free: no billing,
// no limits.

// WithToken makes every call to the worker carry token (none when empty).
func WithToken(token string) DialOption {
	return func(o *dialOptions) {
		if token != "" {
			o.clientOpts = append(o.clientOpts, connect.WithInterceptors(tokenInterceptor{"Bearer " + token}))
		}
	}
}

// tokenInterceptor sets the Authorization header on every outgoing call.
type tokenInterceptor struct{ authorization string }

func (t tokenInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", t.authorization)
		return next(ctx, req)
	}
}

func (t tokenInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", t.authorization)
		return conn
	}
}

func (t tokenInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// RequireToken serves h only to requests carrying "Authorization: Bearer
// <token>", compared in constant time; every other request gets
// unauthenticated in its own protocol (Connect, gRPC or gRPC-Web), before a
// byte of its body is read. An empty token lets everything through.
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	errorWriter := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		// Hashing both sides makes the comparison's time independent of the
		// token's length as well as its content.
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			err := connect.NewError(connect.CodeUnauthenticated, errors.New("worker: missing or wrong worker token"))
			if errorWriter.IsSupported(r) {
				_ = errorWriter.Write(w, r, err)
				return
			}
			http.Error(w, err.Message(), http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// IsLoopback reports whether a listen address (host:port) accepts only
// connections from this host: 127.0.0.0/8, ::1 or localhost. An empty host
// or 0.0.0.0 listens on every interface.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
