package auth_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/auth"
)

// x-api-key (Anthropic's header) authenticates as an API key does with
// Authorization: Bearer; Bearer wins when both come; a bad x-api-key fails
// rather than falling back to the cookie; and the cookie keeps its CSRF rule.
func TestAPIKeyHeader(t *testing.T) {
	f := newFixture(t, auth.Config{})
	u, token := f.signUp(t, "x@example.com")
	_, secret, err := f.auth.CreateAPIKey(context.Background(), auth.Principal{UserID: u.ID}, "k", time.Hour, "", auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	merge := func(hs ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, h := range hs {
			for k, v := range h {
				out[k] = v
			}
		}
		return out
	}
	key := func(s string) map[string]string { return map[string]string{"x-api-key": s} }
	origin := map[string]string{"Origin": "https://evil.example"}
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   connect.Code
	}{
		{"x-api-key", key(secret), 0},
		{"x-api-key, foreign origin", merge(key(secret), origin), 0},
		{"bad x-api-key", key("pk_wrong"), connect.CodeUnauthenticated},
		{"bad x-api-key with a good cookie", merge(key("pk_wrong"), cookie(token)), connect.CodeUnauthenticated},
		{"bearer wins over x-api-key", merge(key("pk_wrong"), bearer(secret)), 0},
		{"bad bearer wins over x-api-key", merge(key(secret), bearer("pk_wrong")), connect.CodeUnauthenticated},
		{"cookie, foreign origin", merge(cookie(token), origin), connect.CodePermissionDenied},
	} {
		if code := f.getMe(t, f.url, tc.header); code != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, code, tc.want)
		}
	}
}
