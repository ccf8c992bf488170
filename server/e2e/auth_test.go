package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
)

// fastAuth lifts the login throttle and the server-wide sign-up rate for
// tests that sign many users up from one address.
var fastAuth = []string{"--login-rate", "10000", "--signup-rate-global", "10000"}

func TestSignUpGetMeLogout(t *testing.T) {
	s := startServer(t, fastAuth...)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx := ctxTimeout(t, 10*time.Second)
			email := p.name + "@example.com"
			res, err := s.clients(p, cred{}).Auth.SignUp(ctx, connect.NewRequest(&parleyv1.SignUpRequest{
				Email: strings.ToUpper(email), Password: "correct horse", DisplayName: "Ada",
			}))
			if err != nil {
				t.Fatal(err)
			}
			u := res.Msg.GetUser()
			if u.GetEmail() != email || u.GetTier() != parleyv1.Tier_TIER_FREE || u.GetDisplayName() != "Ada" || u.GetUserId() == "" {
				t.Fatalf("user %v", u)
			}
			if d := time.Until(res.Msg.GetSessionExpiresAt().AsTime()); d < 29*24*time.Hour || d > 30*24*time.Hour {
				t.Fatalf("session expires in %v", d)
			}
			cookie := sessionCookie(t, res.Header())
			me, err := s.clients(p, cred{cookie: cookie}).Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if me.Msg.GetUser().GetUserId() != u.GetUserId() || me.Msg.GetChannel() != parleyv1.AuthChannel_AUTH_CHANNEL_SESSION {
				t.Fatalf("GetMe %v", me.Msg)
			}
			out, err := s.clients(p, cred{cookie: cookie}).Auth.Logout(ctx, connect.NewRequest(&parleyv1.LogoutRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Header().Get("Set-Cookie"); !strings.HasPrefix(got, "Session_id=;") || !strings.Contains(got, "Max-Age=0") {
				t.Fatalf("logout Set-Cookie %q", got)
			}
			_, err = s.clients(p, cred{cookie: cookie}).Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
			wantCode(t, "GetMe after logout", err, connect.CodeUnauthenticated)
			_, err = s.clients(p, cred{}).Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
			wantCode(t, "GetMe without credentials", err, connect.CodeUnauthenticated)

			// Login, in any case, starts a new session.
			in, err := s.clients(p, cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: " " + strings.ToUpper(email), Password: "correct horse"}))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.clients(p, cred{cookie: sessionCookie(t, in.Header())}).Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{})); err != nil {
				t.Fatal(err)
			}
		})
	}
}

var cookieRE = regexp.MustCompile(`^Session_id=[A-Za-z0-9_-]{43}; Path=/; Max-Age=2592000; HttpOnly(; Secure)?; SameSite=Lax$`)

func TestSessionCookieAttributes(t *testing.T) {
	for _, secure := range []bool{true, false} {
		args := append([]string{}, fastAuth...)
		if secure {
			args = append(args, "--insecure-cookies=false")
		}
		s := startServer(t, args...)
		res, err := s.clients(protocols[0], cred{}).Auth.SignUp(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.SignUpRequest{
			Email: "a@example.com", Password: "correct horse",
		}))
		if err != nil {
			t.Fatal(err)
		}
		got := res.Header().Values("Set-Cookie")
		if len(got) != 1 || !cookieRE.MatchString(got[0]) || strings.Contains(got[0], "Secure") != secure {
			t.Fatalf("secure=%v: Set-Cookie %q", secure, got)
		}
	}
}

func TestSignUpDuplicateEmail(t *testing.T) {
	s := startServer(t, fastAuth...)
	s.newAccount(t, "dup@example.com")
	_, err := s.clients(protocols[0], cred{}).Auth.SignUp(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.SignUpRequest{
		Email: "Dup@Example.COM", Password: "another password",
	}))
	wantCode(t, "duplicate email", err, connect.CodeAlreadyExists)
}

func TestBadInputsNameTheField(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "a@example.com")
	ctx := ctxTimeout(t, 20*time.Second)
	anon := s.clients(protocols[0], cred{})
	me := s.as(protocols[0], a, "session")
	signUp := func(email, password, name string) error {
		_, err := anon.Auth.SignUp(ctx, connect.NewRequest(&parleyv1.SignUpRequest{Email: email, Password: password, DisplayName: name}))
		return err
	}
	createKey := func(name string, ttl time.Duration) error {
		req := &parleyv1.CreateApiKeyRequest{Name: name}
		if ttl != 0 {
			req.Ttl = durationpb.New(ttl)
		}
		_, err := me.Keys.CreateApiKey(ctx, connect.NewRequest(req))
		return err
	}
	for _, tc := range []struct {
		name, field string
		err         error
	}{
		{"empty email", "email", signUp("", "correct horse", "")},
		{"not an email", "email", signUp("not-an-email", "correct horse", "")},
		{"display name in email", "email", signUp("Ada <ada@example.com>", "correct horse", "")},
		{"short password", "password", signUp("b@example.com", "short", "")},
		{"long password", "password", signUp("b@example.com", strings.Repeat("x", 257), "")},
		{"long display name", "display_name", signUp("b@example.com", "correct horse", strings.Repeat("é", 101))},
		{"login without password", "password", func() error {
			_, err := anon.Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "a@example.com"}))
			return err
		}()},
		{"key without name", "name", createKey("", 0)},
		{"key ttl over 30 days", "ttl", createKey("k", 30*24*time.Hour+time.Second)},
		{"key ttl negative", "ttl", createKey("k", -time.Hour)},
		{"key response cache", "response_cache", func() error {
			_, err := me.Keys.CreateApiKey(ctx, connect.NewRequest(&parleyv1.CreateApiKeyRequest{Name: "k", ResponseCache: 7}))
			return err
		}()},
		{"page size", "page_size", func() error {
			_, err := me.Keys.ListApiKeys(ctx, connect.NewRequest(&parleyv1.ListApiKeysRequest{PageSize: 201}))
			return err
		}()},
		{"page token", "page_token", func() error {
			_, err := me.Keys.ListApiKeys(ctx, connect.NewRequest(&parleyv1.ListApiKeysRequest{PageToken: "forged"}))
			return err
		}()},
		{"revoke without id", "key_id", func() error {
			_, err := me.Keys.RevokeApiKey(ctx, connect.NewRequest(&parleyv1.RevokeApiKeyRequest{}))
			return err
		}()},
	} {
		var fv parleyv1.FieldViolation
		if connect.CodeOf(tc.err) != connect.CodeInvalidArgument || !apierr.Detail(tc.err, &fv) || fv.GetField() != tc.field {
			t.Errorf("%s: %v (field %q), want invalid_argument naming %s", tc.name, tc.err, fv.GetField(), tc.field)
		}
	}
	// Nothing partial was left behind: the refused sign-ups made no user.
	_, err := anon.Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "b@example.com", Password: "correct horse"}))
	wantCode(t, "login of a refused sign-up", err, connect.CodeUnauthenticated)
}

func TestAPIKeyLifecycle(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "a@example.com")
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx := ctxTimeout(t, 20*time.Second)
			res, err := s.as(p, a, "session").Keys.CreateApiKey(ctx, connect.NewRequest(&parleyv1.CreateApiKeyRequest{
				Name: "ci", Ttl: durationpb.New(time.Hour),
			}))
			if err != nil {
				t.Fatal(err)
			}
			secret, key := res.Msg.GetSecret(), res.Msg.GetApiKey()
			if !regexp.MustCompile(`^pk_[0-9A-Za-z]{43}$`).MatchString(secret) || !strings.HasPrefix(secret, key.GetPrefix()) || len(key.GetPrefix()) < 7 {
				t.Fatalf("secret %q prefix %q", secret, key.GetPrefix())
			}
			if d := key.GetExpiresAt().AsTime().Sub(key.GetCreatedAt().AsTime()); d != time.Hour {
				t.Fatalf("ttl %v", d)
			}
			byKey := s.clients(p, cred{bearer: secret})
			me, err := byKey.Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if me.Msg.GetChannel() != parleyv1.AuthChannel_AUTH_CHANNEL_API_KEY || me.Msg.GetApiKeyId() != key.GetKeyId() || me.Msg.GetUser().GetUserId() != a.User.GetUserId() {
				t.Fatalf("GetMe by key: %v", me.Msg)
			}
			_, err = byKey.Keys.ListApiKeys(ctx, connect.NewRequest(&parleyv1.ListApiKeysRequest{}))
			wantCode(t, "ListApiKeys with a key", err, connect.CodePermissionDenied)
			_, err = byKey.Keys.CreateApiKey(ctx, connect.NewRequest(&parleyv1.CreateApiKeyRequest{Name: "x"}))
			wantCode(t, "CreateApiKey with a key", err, connect.CodePermissionDenied)
			// Logout with a key does nothing.
			if _, err := byKey.Auth.Logout(ctx, connect.NewRequest(&parleyv1.LogoutRequest{})); err != nil {
				t.Fatal(err)
			}

			rev, err := s.as(p, a, "session").Keys.RevokeApiKey(ctx, connect.NewRequest(&parleyv1.RevokeApiKeyRequest{KeyId: key.GetKeyId()}))
			if err != nil {
				t.Fatal(err)
			}
			if rev.Msg.GetApiKey().GetRevokedAt() == nil {
				t.Fatalf("revoked key %v", rev.Msg.GetApiKey())
			}
			revoked := time.Now()
			for {
				_, err := byKey.Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
				if connect.CodeOf(err) == connect.CodeUnauthenticated {
					break
				}
				if time.Since(revoked) > 5*time.Second {
					t.Fatalf("revoked key still accepted after 5 s: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Revoking again succeeds and keeps the first time.
			again, err := s.as(p, a, "session").Keys.RevokeApiKey(ctx, connect.NewRequest(&parleyv1.RevokeApiKeyRequest{KeyId: key.GetKeyId()}))
			if err != nil || !again.Msg.GetApiKey().GetRevokedAt().AsTime().Equal(rev.Msg.GetApiKey().GetRevokedAt().AsTime()) {
				t.Fatalf("second revoke: %v %v", again, err)
			}
		})
	}
}

func TestAPIKeyLastUseIsWrittenOnShutdown(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "a@example.com")
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := s.as(protocols[0], a, "key").Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{})); err != nil {
		t.Fatal(err)
	}
	s.Signal(syscall.SIGTERM)
	if code, err := s.Wait(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("exit %d %v", code, err)
	}
	s2 := startServer(t, append([]string{"--data-dir", s.DataDir}, fastAuth...)...)
	res, err := s2.as(protocols[0], a, "session").Keys.ListApiKeys(ctx, connect.NewRequest(&parleyv1.ListApiKeysRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Msg.GetApiKeys()) != 1 || res.Msg.GetApiKeys()[0].GetLastUsedAt() == nil {
		t.Fatalf("keys after restart: %v", res.Msg.GetApiKeys())
	}
}

func TestCSRFRefusesForeignOriginWithCookie(t *testing.T) {
	s := startServer(t, append([]string{"--web-origins", "https://app.example.com"}, fastAuth...)...)
	a := s.newAccount(t, "a@example.com")
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx := ctxTimeout(t, 10*time.Second)
			getMe := func(c cred) error {
				_, err := s.clients(p, c).Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
				return err
			}
			wantCode(t, "cookie from a foreign origin", getMe(cred{cookie: a.Cookie, origin: "https://evil.example"}), connect.CodePermissionDenied)
			_, err := s.clients(p, cred{cookie: a.Cookie, origin: "https://evil.example"}).Keys.CreateApiKey(ctx, connect.NewRequest(&parleyv1.CreateApiKeyRequest{Name: "stolen"}))
			wantCode(t, "CreateApiKey from a foreign origin", err, connect.CodePermissionDenied)
			for _, c := range []cred{
				{cookie: a.Cookie},
				{cookie: a.Cookie, origin: s.BaseURL},
				{cookie: a.Cookie, origin: "https://app.example.com"},
				{bearer: a.Key, origin: "https://evil.example"},
			} {
				if err := getMe(c); err != nil {
					t.Errorf("origin %q (bearer %v): %v", c.origin, c.bearer != "", err)
				}
			}
		})
	}
}

// The login throttle slows a password guesser without locking the owner
// out: the guesser's address backs off exponentially after a few failures,
// the owner at another address logs in at once, and the per-address limit
// before any password work stays.
func TestLoginThrottle(t *testing.T) {
	s := startServer(t)
	owner := s.newAccount(t, "victim@example.com")
	ctx := ctxTimeout(t, 30*time.Second)
	// The attacker comes from 127.0.0.2, the owner from 127.0.0.1: both
	// loopback, two addresses to the gateway.
	attacker := s.clients(protocol{"connect", func() *http.Client { return fromAddr("127.0.0.2") }, nil}, cred{}).Auth
	ownerAuth := s.clients(protocols[0], cred{}).Auth
	login := func(c parleyv1connect.AuthServiceClient, email, password string) error {
		_, err := c.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: email, Password: password}))
		return err
	}
	for range 6 { // five free failures, and the sixth shuts the address out for 1 s
		wantCode(t, "attempt", login(attacker, owner.Email, "wrong password"), connect.CodeUnauthenticated)
	}
	err := login(attacker, owner.Email, owner.Password)
	wantCode(t, "7th attempt, even with the right password", err, connect.CodeResourceExhausted)
	if d, ok := apierr.RetryAfter(err); !ok || d != time.Second {
		t.Fatalf("retry after %v %v, want 1s", d, ok)
	}
	if ce := err.(*connect.Error); ce.Meta().Get("Retry-After") != "1" {
		t.Fatalf("Retry-After header: %v", ce.Meta())
	}
	// The owner, from another address, is not locked out.
	if err := login(ownerAuth, owner.Email, owner.Password); err != nil {
		t.Fatalf("owner from another address: %v", err)
	}
	// The attacker's next failure doubles the wait.
	time.Sleep(time.Second)
	wantCode(t, "after the back-off", login(attacker, owner.Email, "wrong password"), connect.CodeUnauthenticated)
	err = login(attacker, owner.Email, "wrong password")
	if d, _ := apierr.RetryAfter(err); connect.CodeOf(err) != connect.CodeResourceExhausted || d <= time.Second || d > 2*time.Second {
		t.Fatalf("after the 7th failure: %v (retry after %v), want a 2 s back-off", err, d)
	}
	// The attacker's address has made 7 of its 10 attempts a minute (refused
	// ones cost nothing): three more on other accounts, then even another
	// account waits.
	for i := range 5 {
		err := login(attacker, fmt.Sprintf("other%d@example.com", i), "x")
		if connect.CodeOf(err) == connect.CodeResourceExhausted {
			if i < 3 {
				t.Errorf("refused after %d attempts on other accounts, want 3", i)
			}
			break
		}
		wantCode(t, "another email, same address", err, connect.CodeUnauthenticated)
		if i == 4 {
			t.Error("the per-address limit never refused")
		}
	}
	if err := login(ownerAuth, owner.Email, owner.Password); err != nil {
		t.Fatalf("owner from another address, after the attack: %v", err)
	}
}

// fromAddr is a client whose connections come from the local address ip.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// admin runs `parley admin` on the server's data directory.
func (s *server) admin(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(parleyBin, append([]string{"admin", args[0], "--data-dir", s.DataDir}, args[1:]...)...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("parley admin %v: %v\n%s%s", args, err, out, stderr)
	}
	return string(out)
}

func TestAdminSetUserTier(t *testing.T) {
	s := startServer(t, fastAuth...)
	s.admin(t, "create-user", "--email", "root@example.com", "--password", "root password", "--admin")
	user := s.newAccount(t, "user@example.com")
	ctx := ctxTimeout(t, 20*time.Second)

	req := func() *connect.Request[parleyv1.SetUserTierRequest] {
		return connect.NewRequest(&parleyv1.SetUserTierRequest{Email: "USER@example.com", Tier: parleyv1.Tier_TIER_PRO})
	}
	_, err := s.as(protocols[0], user, "session").Admin.SetUserTier(ctx, req())
	wantCode(t, "non-admin session", err, connect.CodePermissionDenied)
	_, err = s.as(protocols[1], user, "key").Admin.SetUserTier(ctx, req())
	wantCode(t, "non-admin key", err, connect.CodePermissionDenied)
	_, err = s.clients(protocols[0], cred{}).Admin.SetUserTier(ctx, req())
	wantCode(t, "anonymous", err, connect.CodeUnauthenticated)

	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "root@example.com", Password: "root password"}))
	if err != nil {
		t.Fatal(err)
	}
	root := s.clients(protocols[1], cred{cookie: sessionCookie(t, in.Header())})
	_, err = root.Admin.SetUserTier(ctx, connect.NewRequest(&parleyv1.SetUserTierRequest{Email: "user@example.com"}))
	wantCode(t, "unspecified tier", err, connect.CodeInvalidArgument)
	_, err = root.Admin.SetUserTier(ctx, connect.NewRequest(&parleyv1.SetUserTierRequest{UserId: "nobody", Tier: parleyv1.Tier_TIER_PRO}))
	wantCode(t, "unknown user", err, connect.CodeNotFound)
	_, err = root.Admin.AdjustBalance(ctx, connect.NewRequest(&parleyv1.AdjustBalanceRequest{}))
	if code := connect.CodeOf(err); code == connect.CodePermissionDenied || code == connect.CodeUnauthenticated {
		t.Fatalf("admin refused AdjustBalance: %v", err)
	}
	res, err := root.Admin.SetUserTier(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	if res.Msg.GetUser().GetTier() != parleyv1.Tier_TIER_PRO {
		t.Fatalf("user after: %v", res.Msg.GetUser())
	}
	// The user's own calls see the new tier at once on this gateway.
	me, err := s.as(protocols[0], user, "key").Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
	if err != nil || me.Msg.GetUser().GetTier() != parleyv1.Tier_TIER_PRO {
		t.Fatalf("GetMe after tier change: %v %v", me, err)
	}

	events := auditOf(t, s, user.User.GetUserId())
	kinds := map[string]store.AuditEvent{}
	for _, e := range events {
		kinds[e.Kind] = e
	}
	for _, k := range []string{store.AuditSignup, store.AuditAPIKeyCreated, store.AuditTierChanged} {
		e, ok := kinds[k]
		if !ok {
			t.Errorf("no %s event in %+v", k, events)
			continue
		}
		if e.IP != "127.0.0.1" || e.UserAgent == "" || e.At.IsZero() {
			t.Errorf("%s event %+v", k, e)
		}
	}
	if d := kinds[store.AuditTierChanged].Detail; !strings.Contains(d, `"to":"pro"`) || !strings.Contains(d, `"from":"free"`) {
		t.Errorf("tier_changed detail %s", d)
	}
	for _, e := range events {
		if strings.Contains(e.Detail, user.Key) || strings.Contains(e.Detail, user.Password) || strings.Contains(e.Detail, user.Cookie) {
			t.Fatalf("audit event holds a secret: %+v", e)
		}
	}
}

func TestAdminCreateKey(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "a@example.com")
	secret := strings.TrimSpace(s.admin(t, "create-key", "--email", "A@example.com", "--ttl", "2h", "--name", "cli"))
	if !strings.HasPrefix(secret, "pk_") {
		t.Fatalf("create-key printed %q", secret)
	}
	me, err := s.clients(protocols[1], cred{bearer: secret}).Auth.GetMe(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.GetMeRequest{}))
	if err != nil || me.Msg.GetUser().GetUserId() != a.User.GetUserId() {
		t.Fatalf("GetMe with the CLI's key: %v %v", me, err)
	}
}

// auditOf reads a user's audit events from the server's database.
func auditOf(t *testing.T, s *server, userID string) []store.AuditEvent {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(s.DataDir, "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	events, _, err := db.Store().Audit.List(context.Background(), userID, store.PageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return events
}
