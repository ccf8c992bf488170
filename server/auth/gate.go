package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// gatedKey marks a request's context as admitted by Gate, for the
// procedure it names.
type gatedKey struct{}

// Gate authenticates before a body is read. In front of the Connect
// handlers and the SSE adapter (/sse/<procedure>), for every procedure that
// Policy says needs credentials, it admits the request from its headers
// alone — credential, CSRF rule, access level — and answers one it refuses
// at once, without reading its body, in the caller's protocol: a Connect,
// gRPC or gRPC-Web error, or for the SSE adapter the stream's error event. An admitted
// request goes on with the Principal in its context, marked admitted for
// its procedure, so the interceptor does not authenticate it again. Public
// procedures and paths that are not procedures pass untouched (the
// interceptor still denies a procedure missing from Policy).
func (a *Authenticator) Gate(next http.Handler) http.Handler {
	errorWriter := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		procedure, sse := r.URL.Path, false
		if rest, ok := strings.CutPrefix(procedure, "/sse/"); ok {
			procedure, sse = "/"+rest, true
		}
		access, ok := Policy[procedure]
		if !ok || access == AccessPublic || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		ctx, err := a.admit(r.Context(), access, r.Header, selfOrigin(r))
		if err != nil {
			ce := asConnect(err)
			if r.ProtoMajor == 1 && r.ContentLength != 0 {
				// The client may still be sending: close rather than drain.
				w.Header().Set("Connection", "close")
			}
			switch {
			case sse:
				writeSSEError(w, ce)
			case errorWriter.IsSupported(r):
				_ = errorWriter.Write(w, r, ce)
			default:
				writeConnectJSON(w, ce)
			}
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, gatedKey{}, procedure)))
	})
}

// gated says whether Gate admitted the call to procedure already (its
// Principal is in ctx).
func gated(ctx context.Context, procedure string) bool {
	p, _ := ctx.Value(gatedKey{}).(string)
	return p != "" && p == procedure
}

// writeSSEError writes err as the SSE adapter does an RPC's error: a stream
// of one `event: error` with the Connect error JSON.
func writeSSEError(w http.ResponseWriter, err *connect.Error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	data, _ := json.Marshal(map[string]string{"code": err.Code().String(), "message": err.Message()})
	_, _ = w.Write([]byte("event: error\ndata: " + string(data) + "\n\n"))
}

// writeConnectJSON writes err as the Connect protocol's unary error JSON.
func writeConnectJSON(w http.ResponseWriter, err *connect.Error) {
	status := http.StatusInternalServerError
	switch err.Code() {
	case connect.CodeUnauthenticated:
		status = http.StatusUnauthorized
	case connect.CodePermissionDenied:
		status = http.StatusForbidden
	case connect.CodeUnavailable:
		status = http.StatusServiceUnavailable
	case connect.CodeResourceExhausted:
		status = http.StatusTooManyRequests
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": err.Code().String(), "message": err.Message()})
}
