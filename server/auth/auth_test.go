package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlimit"
	"github.com/parleyhq/parley/server/store/sqlite"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is an Authenticator over a real SQLite store with a fake clock,
// serving a GetMe that echoes the Principal over real HTTP.
type fixture struct {
	clock *fakeClock
	db    store.Store
	auth  *auth.Authenticator
	url   string
}

var fastPasswords = auth.PasswordParams{MemoryKiB: 64, Iterations: 1, Threads: 1}

func newFixture(t testing.TB, cfg auth.Config) *fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{clock: &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}, db: db.Store()}
	cfg.Password = fastPasswords
	f.auth = f.newAuth(cfg)
	f.url = f.serve(t, f.auth)
	return f
}

// newAuth is another gateway over the same store and clock.
func (f *fixture) newAuth(cfg auth.Config) *auth.Authenticator {
	cfg.Password = fastPasswords
	return auth.New(f.db.Accounts, f.db.Audit, memlimit.New(0), f.clock.Now, cfg)
}

func (f *fixture) serve(t testing.TB, a *auth.Authenticator) string {
	mux := http.NewServeMux()
	mux.Handle(parleyv1connect.NewAuthServiceHandler(meHandler{a}, connect.WithInterceptors(a.Interceptor())))
	srv := httptest.NewServer(auth.RecordOrigin(mux))
	t.Cleanup(srv.Close)
	return srv.URL
}

type meHandler struct {
	a *auth.Authenticator
}

func (h meHandler) SignUp(context.Context, *connect.Request[parleyv1.SignUpRequest]) (*connect.Response[parleyv1.SignUpResponse], error) {
	return nil, connect.NewError(connect.CodeUnimplemented, nil)
}

func (h meHandler) GetSignUpPolicy(context.Context, *connect.Request[parleyv1.GetSignUpPolicyRequest]) (*connect.Response[parleyv1.GetSignUpPolicyResponse], error) {
	return nil, connect.NewError(connect.CodeUnimplemented, nil)
}

func (h meHandler) Login(context.Context, *connect.Request[parleyv1.LoginRequest]) (*connect.Response[parleyv1.LoginResponse], error) {
	return nil, connect.NewError(connect.CodeUnimplemented, nil)
}

func (h meHandler) Logout(ctx context.Context, _ *connect.Request[parleyv1.LogoutRequest]) (*connect.Response[parleyv1.LogoutResponse], error) {
	_, err := h.a.Logout(ctx, auth.Client{IP: "test"})
	return connect.NewResponse(&parleyv1.LogoutResponse{}), err
}

func (h meHandler) GetMe(ctx context.Context, _ *connect.Request[parleyv1.GetMeRequest]) (*connect.Response[parleyv1.GetMeResponse], error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, errors.New("no principal")
	}
	return connect.NewResponse(&parleyv1.GetMeResponse{User: &parleyv1.User{UserId: p.UserID, Email: p.Email}, ApiKeyId: p.KeyID}), nil
}

// getMe calls GetMe with the given headers and returns the error code (0 for OK).
func (f *fixture) getMe(t testing.TB, url string, header map[string]string) connect.Code {
	t.Helper()
	c := parleyv1connect.NewAuthServiceClient(http.DefaultClient, url)
	req := connect.NewRequest(&parleyv1.GetMeRequest{})
	for k, v := range header {
		req.Header().Set(k, v)
	}
	_, err := c.GetMe(context.Background(), req)
	if err == nil {
		return 0
	}
	return connect.CodeOf(err)
}

func (f *fixture) signUp(t testing.TB, email string) (store.User, string) {
	t.Helper()
	u, s, err := f.auth.SignUp(context.Background(), email, "password123", "", "", auth.Client{IP: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	return u, s.Token
}

func cookie(token string) map[string]string {
	return map[string]string{"Cookie": auth.CookieName + "=" + token}
}

func bearer(secret string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + secret}
}

func TestExpiredSessionIsUnauthenticated(t *testing.T) {
	f := newFixture(t, auth.Config{})
	_, token := f.signUp(t, "a@example.com")
	if code := f.getMe(t, f.url, cookie(token)); code != 0 {
		t.Fatalf("fresh session: %v", code)
	}
	f.clock.Advance(auth.DefaultSessionTTL - time.Second)
	if code := f.getMe(t, f.url, cookie(token)); code != 0 {
		t.Fatalf("session a second before expiry: %v", code)
	}
	f.clock.Advance(time.Second)
	if code := f.getMe(t, f.url, cookie(token)); code != connect.CodeUnauthenticated {
		t.Fatalf("expired session: %v, want unauthenticated", code)
	}
}

func TestExpiredKeyIsUnauthenticated(t *testing.T) {
	f := newFixture(t, auth.Config{})
	u, _ := f.signUp(t, "a@example.com")
	k, secret, err := f.auth.CreateAPIKey(context.Background(), auth.Principal{UserID: u.ID}, "k", time.Hour, "", auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if !k.ExpiresAt.Equal(f.clock.Now().Add(time.Hour)) {
		t.Fatalf("expires_at %v", k.ExpiresAt)
	}
	if code := f.getMe(t, f.url, bearer(secret)); code != 0 {
		t.Fatalf("fresh key: %v", code)
	}
	// Within the cache's life, the cached entry must still honour expiry.
	f.clock.Advance(time.Hour)
	if code := f.getMe(t, f.url, bearer(secret)); code != connect.CodeUnauthenticated {
		t.Fatalf("expired key: %v, want unauthenticated", code)
	}
}

func TestAPIKeyTTL(t *testing.T) {
	f := newFixture(t, auth.Config{})
	u, _ := f.signUp(t, "a@example.com")
	p := auth.Principal{UserID: u.ID}
	for _, ttl := range []time.Duration{-time.Second, auth.MaxAPIKeyTTL + time.Second} {
		_, _, err := f.auth.CreateAPIKey(context.Background(), p, "k", ttl, "", auth.Client{})
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "ttl") {
			t.Errorf("ttl %v: %v", ttl, err)
		}
	}
	k, secret, err := f.auth.CreateAPIKey(context.Background(), p, "k", 0, "", auth.Client{})
	if err != nil || k.ExpiresAt.Sub(k.CreatedAt) != auth.MaxAPIKeyTTL {
		t.Fatalf("default ttl: %v %v", k.ExpiresAt.Sub(k.CreatedAt), err)
	}
	if !strings.HasPrefix(secret, "pk_") || len(secret) != 46 || !strings.HasPrefix(secret, k.Prefix) || len(k.Prefix) != 11 {
		t.Fatalf("secret %q prefix %q", secret, k.Prefix)
	}
}

func TestAPIKeyResponseCacheMode(t *testing.T) {
	f := newFixture(t, auth.Config{})
	u, _ := f.signUp(t, "a@example.com")
	p := auth.Principal{UserID: u.ID}
	_, _, err := f.auth.CreateAPIKey(context.Background(), p, "k", time.Hour, "sometimes", auth.Client{})
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "response_cache") {
		t.Fatalf("unknown mode: %v", err)
	}
	k, _, err := f.auth.CreateAPIKey(context.Background(), p, "k", time.Hour, "off", auth.Client{})
	if err != nil || k.ResponseCache != "off" {
		t.Fatalf("off: %q %v", k.ResponseCache, err)
	}
}

func TestRevocationReachesOtherGatewaysWithinCacheTTL(t *testing.T) {
	f := newFixture(t, auth.Config{})
	other := f.newAuth(auth.Config{})
	otherURL := f.serve(t, other)
	u, _ := f.signUp(t, "a@example.com")
	p := auth.Principal{UserID: u.ID}
	k, secret, err := f.auth.CreateAPIKey(context.Background(), p, "k", time.Hour, "", auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{f.url, otherURL} {
		if code := f.getMe(t, url, bearer(secret)); code != 0 {
			t.Fatalf("before revocation: %v", code)
		}
	}
	if _, err := f.auth.RevokeAPIKey(context.Background(), p, k.ID, auth.Client{}); err != nil {
		t.Fatal(err)
	}
	if code := f.getMe(t, f.url, bearer(secret)); code != connect.CodeUnauthenticated {
		t.Fatalf("revoking gateway still accepts the key: %v", code)
	}
	f.clock.Advance(auth.DefaultCacheTTL)
	if code := f.getMe(t, otherURL, bearer(secret)); code != connect.CodeUnauthenticated {
		t.Fatalf("other gateway accepts the key %v after revocation: %v", auth.DefaultCacheTTL, code)
	}
}

func TestLogoutEvicts(t *testing.T) {
	f := newFixture(t, auth.Config{})
	_, token := f.signUp(t, "a@example.com")
	if code := f.getMe(t, f.url, cookie(token)); code != 0 {
		t.Fatal(code)
	}
	c := parleyv1connect.NewAuthServiceClient(http.DefaultClient, f.url)
	req := connect.NewRequest(&parleyv1.LogoutRequest{})
	req.Header().Set("Cookie", auth.CookieName+"="+token)
	if _, err := c.Logout(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if code := f.getMe(t, f.url, cookie(token)); code != connect.CodeUnauthenticated {
		t.Fatalf("after logout: %v", code)
	}
}

func TestLastUseIsWrittenInBatches(t *testing.T) {
	f := newFixture(t, auth.Config{})
	u, _ := f.signUp(t, "a@example.com")
	_, secret, err := f.auth.CreateAPIKey(context.Background(), auth.Principal{UserID: u.ID}, "k", time.Hour, "", auth.Client{})
	if err != nil {
		t.Fatal(err)
	}
	used := f.clock.Now()
	for range 5 {
		if code := f.getMe(t, f.url, bearer(secret)); code != 0 {
			t.Fatal(code)
		}
	}
	keys, _, _ := f.db.Accounts.ListAPIKeys(context.Background(), u.ID, store.PageRequest{})
	if !keys[0].LastUsedAt.IsZero() {
		t.Fatal("last use written per call, not in a batch")
	}
	if err := f.auth.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys, _, _ = f.db.Accounts.ListAPIKeys(context.Background(), u.ID, store.PageRequest{})
	if !keys[0].LastUsedAt.Equal(used) {
		t.Fatalf("last_used_at %v, want %v", keys[0].LastUsedAt, used)
	}
}

func TestCSRF(t *testing.T) {
	f := newFixture(t, auth.Config{WebOrigins: []string{"https://app.example.com"}})
	u, token := f.signUp(t, "a@example.com")
	_, secret, _ := f.auth.CreateAPIKey(context.Background(), auth.Principal{UserID: u.ID}, "k", time.Hour, "", auth.Client{})
	with := func(h map[string]string, origin string) map[string]string {
		out := map[string]string{"Origin": origin}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   connect.Code
	}{
		{"cookie, no origin", cookie(token), 0},
		{"cookie, own origin", with(cookie(token), f.url), 0},
		{"cookie, configured origin", with(cookie(token), "https://APP.example.com"), 0},
		{"cookie, foreign origin", with(cookie(token), "https://evil.example"), connect.CodePermissionDenied},
		{"cookie, null origin", with(cookie(token), "null"), connect.CodePermissionDenied},
		{"bearer, foreign origin", with(bearer(secret), "https://evil.example"), 0},
	} {
		if code := f.getMe(t, f.url, tc.header); code != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, code, tc.want)
		}
	}
}

func TestLoginFailuresLookAlike(t *testing.T) {
	f := newFixture(t, auth.Config{})
	f.signUp(t, "a@example.com")
	ctx := context.Background()
	_, _, errUnknown := f.auth.Login(ctx, "nobody@example.com", "password123", auth.Client{IP: "192.0.2.9"})
	_, _, errWrong := f.auth.Login(ctx, "a@example.com", "password124", auth.Client{IP: "192.0.2.9"})
	if connect.CodeOf(errUnknown) != connect.CodeUnauthenticated || errUnknown.Error() != errWrong.Error() {
		t.Fatalf("unknown email %v, wrong password %v", errUnknown, errWrong)
	}
	if _, _, err := f.auth.Login(ctx, "a@example.com", "password123", auth.Client{IP: "192.0.2.9"}); err != nil {
		t.Fatal(err)
	}
	events, _, _ := f.db.Audit.List(ctx, "", store.PageRequest{})
	if len(events) != 1 || events[0].Kind != store.AuditLoginFailure {
		t.Fatalf("unknown-email failure not audited: %+v", events)
	}
	for _, e := range events {
		if strings.Contains(e.Detail, "password") {
			t.Fatalf("audit detail holds a secret: %s", e.Detail)
		}
	}
}
