package auth_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/auth"
)

// FuzzAuthenticate feeds garbled cookies and Authorization headers to the
// auth layer: it must never panic and never admit.
func FuzzAuthenticate(f *testing.F) {
	fx := newFixture(f, auth.Config{})
	for _, seed := range [][2]string{
		{"", ""},
		{auth.CookieName + "=", ""},
		{auth.CookieName + "=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", ""},
		{auth.CookieName + "=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", ""},
		{auth.CookieName + `="a b"; other=1`, ""},
		{"a=b; " + auth.CookieName + "=%%%%; c", ""},
		{"", "Bearer"},
		{"", "Bearer "},
		{"", "Basic dXNlcjpwYXNz"},
		{"", "Bearer pk_0000000000000000000000000000000000000000000"},
		{"", "Bearer pk_000000000000000000000000000000000000000000é"},
		{"", "bearer  pk_\x00"},
		{auth.CookieName + "=x", "Bearer sk-openai"},
	} {
		f.Add(seed[0], seed[1])
	}
	var got connect.Code
	mw := fx.auth.Middleware(auth.AccessAny, func(w http.ResponseWriter, _ *http.Request, err *connect.Error) {
		got = err.Code()
		w.WriteHeader(401)
	})
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = 0 }))
	f.Fuzz(func(t *testing.T, cookieHeader, authorization string) {
		r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		if cookieHeader != "" {
			r.Header.Set("Cookie", cookieHeader)
		}
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		got = connect.CodeUnknown
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got != connect.CodeUnauthenticated {
			t.Fatalf("cookie %q, authorization %q: code %v, want unauthenticated", cookieHeader, authorization, got)
		}
	})
}
