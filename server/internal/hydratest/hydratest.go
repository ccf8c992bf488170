// Package hydratest runs Ory Hydra, a certified OpenID Connect provider,
// for tests: in memory, on loopback ports, with a login and consent app
// that signs in whoever the test names, so a test drives the real
// protocol (authorization code, PKCE, signed ID tokens, key rotation)
// without a person at a form. scripts/hydra.sh builds the binary; the
// tests find it in PARLEY_TEST_HYDRA.
package hydratest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Person is who the login app signs in, and what the ID token says of them.
type Person struct {
	Subject  string
	Email    string
	Verified bool
	Name     string
	Groups   []string
}

// Provider is a running Hydra and its login app.
type Provider struct {
	// Issuer is the public URL (discovery, authorize, token, keys).
	Issuer string
	// Admin is the admin API's URL.
	Admin string

	mu   sync.Mutex
	next Person
	logs bytes.Buffer
}

// FreePort returns a loopback port no one listens on just now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start runs Hydra until the test ends. It skips the test when
// PARLEY_TEST_HYDRA is not set.
func Start(t testing.TB) *Provider {
	t.Helper()
	bin := os.Getenv("PARLEY_TEST_HYDRA")
	if bin == "" {
		t.Skip(`PARLEY_TEST_HYDRA not set (scripts/hydra.sh build; eval "$(scripts/hydra.sh env)")`)
	}
	p := &Provider{}
	app := httptest.NewServer(http.HandlerFunc(p.serveApp))
	t.Cleanup(app.Close)

	pub, adm := FreePort(t), FreePort(t)
	p.Issuer, p.Admin = fmt.Sprintf("http://127.0.0.1:%d", pub), fmt.Sprintf("http://127.0.0.1:%d", adm)
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out")
	cmd.Env = append(os.Environ(),
		"DSN=memory",
		"SECRETS_SYSTEM="+hex.EncodeToString(secret),
		"URLS_SELF_ISSUER="+p.Issuer,
		"URLS_LOGIN="+app.URL+"/login",
		"URLS_CONSENT="+app.URL+"/consent",
		fmt.Sprintf("SERVE_PUBLIC_PORT=%d", pub), "SERVE_PUBLIC_HOST=127.0.0.1",
		fmt.Sprintf("SERVE_ADMIN_PORT=%d", adm), "SERVE_ADMIN_HOST=127.0.0.1",
		"LOG_LEVEL=warn",
	)
	cmd.Stdout, cmd.Stderr = &lockedWriter{p: p}, &lockedWriter{p: p}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting hydra: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("hydra logs:\n%s", p.Logs())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(p.Admin + "/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-done:
			t.Fatalf("hydra exited before it was ready:\n%s", p.Logs())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hydra not ready after 30s:\n%s", p.Logs())
		}
	}
	return p
}

type lockedWriter struct{ p *Provider }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.logs.Len() < 1<<20 {
		w.p.logs.Write(b)
	}
	return len(b), nil
}

// Logs returns what Hydra has printed.
func (p *Provider) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// SignInAs makes person the one the login app signs in from now on.
func (p *Provider) SignInAs(person Person) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = person
}

func (p *Provider) person() Person {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

// Client registers an OAuth 2.0 client for the authorization code flow
// with redirectURL, and returns its id and secret.
func (p *Provider) Client(t testing.TB, redirectURL string) (id, secret string) {
	t.Helper()
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	p.admin(t, http.MethodPost, "/admin/clients", map[string]any{
		"redirect_uris":              []string{redirectURL},
		"grant_types":                []string{"authorization_code"},
		"response_types":             []string{"code"},
		"scope":                      "openid email profile",
		"token_endpoint_auth_method": "client_secret_basic",
	}, &out)
	if out.ClientID == "" || out.ClientSecret == "" {
		t.Fatalf("hydra made a client without an id or secret: %+v", out)
	}
	return out.ClientID, out.ClientSecret
}

// RotateKey adds a new signing key for ID tokens, which Hydra signs with
// from now on, and returns its key id.
func (p *Provider) RotateKey(t testing.TB) string {
	t.Helper()
	kid := "rotated-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	var out struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	p.admin(t, http.MethodPost, "/admin/keys/hydra.openid.id-token", map[string]any{"alg": "RS256", "use": "sig", "kid": kid}, &out)
	if len(out.Keys) == 0 {
		t.Fatal("hydra made no key")
	}
	return out.Keys[0].Kid
}

func (p *Provider) admin(t testing.TB, method, path string, body, out any) {
	t.Helper()
	if err := p.call(context.Background(), method, path, body, out); err != nil {
		t.Fatal(err)
	}
}

func (p *Provider) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.Admin+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("hydra %s %s: %s: %s", method, path, res.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// serveApp is the login and consent app: it accepts every login as the
// person SignInAs named and grants every scope asked for, with the
// person's claims in the ID token.
func (p *Provider) serveApp(w http.ResponseWriter, r *http.Request) {
	who := p.person()
	var redirect struct {
		RedirectTo string `json:"redirect_to"`
	}
	var err error
	switch r.URL.Path {
	case "/login":
		ch := url.QueryEscape(r.URL.Query().Get("login_challenge"))
		err = p.call(r.Context(), http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+ch,
			map[string]any{"subject": who.Subject}, &redirect)
	case "/consent":
		ch := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
		var req struct {
			Scope    []string `json:"requested_scope"`
			Audience []string `json:"requested_access_token_audience"`
		}
		if err = p.call(r.Context(), http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+ch, nil, &req); err != nil {
			break
		}
		claims := map[string]any{"email": who.Email, "email_verified": who.Verified}
		if who.Name != "" {
			claims["name"] = who.Name
		}
		if who.Groups != nil {
			claims["groups"] = who.Groups
		}
		err = p.call(r.Context(), http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+ch, map[string]any{
			"grant_scope": req.Scope, "grant_access_token_audience": req.Audience,
			"session": map[string]any{"id_token": claims},
		}, &redirect)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, redirect.RedirectTo, http.StatusFound)
}
