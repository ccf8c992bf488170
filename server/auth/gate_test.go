package auth_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/auth"
)

// countingBody records how much of a request body was read.
type countingBody struct {
	r    io.Reader
	read *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c countingBody) Close() error { return nil }

// TestGateRefusesBeforeTheBody checks that a request without valid
// credentials to a procedure that needs them is answered in its protocol
// without a byte of its body read, and that an admitted one reaches the
// handler with its Principal.
func TestGateRefusesBeforeTheBody(t *testing.T) {
	f := newFixture(t, auth.Config{})
	_, token := f.signUp(t, "gate@example.com")
	mux := http.NewServeMux()
	mux.Handle(parleyv1connect.NewAuthServiceHandler(meHandler{f.auth}, connect.WithInterceptors(f.auth.Interceptor())))
	handler := auth.RecordOrigin(f.auth.Gate(mux))
	var read atomic.Int64
	serve := func(path, contentType string, header map[string]string, body []byte) *httptest.ResponseRecorder {
		read.Store(0)
		req := httptest.NewRequest("POST", path, nil)
		req.Body = countingBody{bytes.NewReader(body), &read}
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", contentType)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}
	big := bytes.Repeat([]byte{0}, 8<<20)
	getMe := parleyv1connect.AuthServiceGetMeProcedure
	for _, tc := range []struct {
		name, path, contentType string
		header                  map[string]string
		status                  int
		want                    string // in the body or the headers
	}{
		{"connect, no credentials", getMe, "application/proto", nil, 401, `"code":"unauthenticated"`},
		{"connect json, bad key", getMe, "application/json", bearer("pk_nope"), 401, "invalid, expired or revoked API key"},
		{"grpc, bad session", getMe, "application/grpc", cookie("nope"), 200, "grpc-status: 16"},
		{"grpc-web, no credentials", getMe, "application/grpc-web+proto", nil, 200, "grpc-status: 16"},
		{"sse, no credentials", "/sse/parley.v1.ConversationService/SendMessage", "application/json", nil, 200, "event: error\ndata: {\"code\":\"unauthenticated\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(tc.path, tc.contentType, tc.header, big)
			var head strings.Builder
			_ = rec.Header().Write(&head)
			for k, v := range rec.Result().Trailer {
				head.WriteString(strings.ToLower(k) + ": " + strings.Join(v, ",") + "\n")
			}
			if rec.Code != tc.status || !strings.Contains(rec.Body.String()+strings.ToLower(head.String()), tc.want) {
				t.Fatalf("status %d, headers %q, body %q; want %d and %q", rec.Code, head.String(), rec.Body.String(), tc.status, tc.want)
			}
			if n := read.Load(); n != 0 {
				t.Fatalf("%d bytes of the body were read before the refusal", n)
			}
		})
	}
	t.Run("admitted once, with its principal", func(t *testing.T) {
		rec := serve(getMe, "application/json", cookie(token), []byte("{}"))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), "gate@example.com") {
			t.Fatalf("status %d body %s", rec.Code, rec.Body.String())
		}
	})
	t.Run("public procedures pass to their handler", func(t *testing.T) {
		rec := serve(parleyv1connect.AuthServiceLoginProcedure, "application/json", nil, []byte("{}"))
		if !strings.Contains(rec.Body.String(), "unimplemented") {
			t.Fatalf("status %d body %s", rec.Code, rec.Body.String())
		}
	})
}
