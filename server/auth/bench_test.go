package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/auth"
)

// BenchmarkAuthenticateWarm is the common path: a credential already in the
// cache, through the HTTP middleware (the interceptor shares it).
func BenchmarkAuthenticateWarm(b *testing.B) {
	fx := newFixture(b, auth.Config{})
	u, token := fx.signUp(b, "a@example.com")
	_, secret, err := fx.auth.CreateAPIKey(context.Background(), auth.Principal{UserID: u.ID}, "k", time.Hour, "", auth.Client{})
	if err != nil {
		b.Fatal(err)
	}
	mw := fx.auth.Middleware(auth.AccessAny, func(w http.ResponseWriter, _ *http.Request, err *connect.Error) {
		b.Error(err)
	})
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, tc := range []struct{ name, header, value string }{
		{"session", "Cookie", auth.CookieName + "=" + token},
		{"api_key", "Authorization", "Bearer " + secret},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("POST", "/x", nil)
				r.Header.Set(tc.header, tc.value)
				w := httptest.NewRecorder()
				for pb.Next() {
					h.ServeHTTP(w, r)
				}
			})
		})
	}
}
