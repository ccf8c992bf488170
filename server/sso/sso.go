// Package sso signs people in through an OpenID Connect provider: the
// authorization code flow with PKCE, state and nonce; the provider's
// endpoints and keys from its discovery document (keys fetched again when
// a token names one not seen yet, so a rotation needs no restart); and the
// same cookie session a password login starts. What the provider says of
// the person (a verified address, groups) joins them to their organisation
// and its teams (org.Service.SyncSSO).
package sso

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/org"
	"github.com/parleyhq/parley/server/store"
)

// The gateway's routes: LoginPath sends the browser to the provider (with
// ?return=/path to come back to), which sends it back to CallbackPath.
const (
	LoginPath    = "/auth/oidc/login"
	CallbackPath = "/auth/oidc/callback"
	// ErrorParam carries a failed sign-in's reason to the web app.
	ErrorParam = "sso_error"

	flowCookie = "parley_oidc"
	flowTTL    = 10 * time.Minute
)

// Handler serves LoginPath and CallbackPath.
type Handler struct {
	Config Config
	Auth   *auth.Authenticator
	Orgs   *org.Service
	Logger *slog.Logger
	// Client reaches the provider; nil: one with a 10 s timeout.
	Client *http.Client
	// Now is the clock ID tokens are checked against; nil: time.Now.
	Now func() time.Time

	mu       sync.Mutex
	provider *oidc.Provider // nil until discovery succeeds
}

// Claims is what a verified ID token says of the person.
type Claims struct {
	auth.Federated
	Groups []string
}

func (h *Handler) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}

// discover fetches the provider's discovery document once; a failure is
// tried again at the next sign-in.
func (h *Handler) discover(ctx context.Context) (*oidc.Provider, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.provider != nil {
		return h.provider, nil
	}
	ctx = oidc.ClientContext(ctx, h.client())
	p, err := oidc.NewProvider(ctx, h.Config.Issuer)
	if err != nil {
		return nil, err
	}
	h.provider = p
	return p, nil
}

func (h *Handler) oauth(p *oidc.Provider) oauth2.Config {
	return oauth2.Config{
		ClientID: h.Config.ClientID, ClientSecret: h.Config.ClientSecret,
		Endpoint: p.Endpoint(), RedirectURL: h.Config.RedirectURL, Scopes: h.Config.scopes(),
	}
}

// ServeHTTP routes the two paths.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case LoginPath:
		h.login(w, r)
	case CallbackPath:
		h.callback(w, r)
	default:
		http.NotFound(w, r)
	}
}

// flow is what the browser carries from LoginPath to CallbackPath, in a
// cookie only this site's pages under /auth/oidc/ receive: the state the
// provider must send back, the nonce the ID token must carry, the PKCE
// verifier, and where to go after.
type flow struct {
	State, Nonce, Verifier, Return string
}

func (f flow) encode() string {
	b, _ := json.Marshal(f)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeFlow(s string) (flow, bool) {
	var f flow
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) > 4096 || json.Unmarshal(b, &f) != nil || f.State == "" || f.Nonce == "" || f.Verifier == "" {
		return flow{}, false
	}
	return f, true
}

func (h *Handler) flowCookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: flowCookie, Value: value, Path: "/auth/oidc/", MaxAge: maxAge,
		HttpOnly: true, Secure: h.Auth.SecureCookies(), SameSite: http.SameSiteLaxMode,
	}
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// safeReturn keeps a return path on this site: an absolute path, not
// "//host" or "/\host", which browsers read as another host.
func safeReturn(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\") || len(s) > 2048 ||
		strings.ContainsAny(s, "\r\n") {
		return "/"
	}
	return s
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	p, err := h.discover(r.Context())
	if err != nil {
		h.Logger.Warn("sso: provider discovery failed", "issuer", h.Config.Issuer, "err", err)
		h.fail(w, r, "the identity provider cannot be reached; try again shortly")
		return
	}
	f := flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Return: safeReturn(r.URL.Query().Get("return"))}
	http.SetCookie(w, h.flowCookie(f.encode(), int(flowTTL/time.Second)))
	cfg := h.oauth(p)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, cfg.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusFound)
}

func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		h.fail(w, r, "the identity provider refused the sign-in: "+clip(e+" "+q.Get("error_description"), 200))
		return
	}
	c, err := r.Cookie(flowCookie)
	f, ok := flow{}, false
	if err == nil {
		f, ok = decodeFlow(c.Value)
	}
	if !ok {
		h.fail(w, r, "this sign-in began more than 10 minutes ago or in another browser; sign in again")
		return
	}
	http.SetCookie(w, h.flowCookie("", -1)) // one use
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		h.fail(w, r, "the sign-in's state does not match the one this browser began with; sign in again")
		return
	}
	ctx := oidc.ClientContext(r.Context(), h.client())
	p, err := h.discover(ctx)
	if err != nil {
		h.fail(w, r, "the identity provider cannot be reached; try again shortly")
		return
	}
	cfg := h.oauth(p)
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		h.Logger.Info("sso: code exchange failed", "err", err)
		h.fail(w, r, "the identity provider did not accept the sign-in's code; sign in again")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	claims, err := h.Verify(ctx, raw, f.Nonce)
	if err != nil {
		h.Logger.Info("sso: ID token refused", "err", err)
		h.fail(w, r, "the identity provider's answer could not be verified: "+err.Error())
		return
	}
	client := auth.ClientOf(r.RemoteAddr, r.UserAgent())
	jit, found, err := h.Orgs.SSOOrganization(ctx, claims.Email, claims.EmailVerified)
	if err != nil {
		h.fail(w, r, "the sign-in failed on this server; try again")
		return
	}
	var jitOrg *store.Organization
	if found {
		jitOrg = &jit
	}
	u, sess, err := h.Auth.SignInFederated(ctx, claims.Federated, found, client)
	if err != nil {
		h.fail(w, r, message(err))
		return
	}
	if err := h.Orgs.SyncSSO(ctx, u, jitOrg, claims.Groups, client); err != nil {
		// Signed in: the memberships are tried again at the next sign-in.
		h.Logger.Error("sso: organisation memberships not brought up to date", "user_id", u.ID, "err", err)
	}
	w.Header().Add("Set-Cookie", h.Auth.SessionCookie(sess.Token))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, f.Return, http.StatusFound)
}

// Verify checks an ID token from the provider (signature by one of its
// keys, issuer, audience, expiry within the clock skew) and that it
// carries nonce, and returns what it says of the person.
func (h *Handler) Verify(ctx context.Context, raw, nonce string) (Claims, error) {
	if raw == "" {
		return Claims{}, errors.New("no ID token in the token response")
	}
	p, err := h.discover(ctx)
	if err != nil {
		return Claims{}, err
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	v := p.Verifier(&oidc.Config{ClientID: h.Config.ClientID, Now: func() time.Time { return now().Add(-h.Config.ClockSkew) }})
	idt, err := v.Verify(oidc.ClientContext(ctx, h.client()), raw)
	if err != nil {
		return Claims{}, err
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return Claims{}, errors.New("the ID token's nonce is not this sign-in's")
	}
	var all map[string]json.RawMessage
	if err := idt.Claims(&all); err != nil {
		return Claims{}, err
	}
	c := Claims{Federated: auth.Federated{Issuer: idt.Issuer, Subject: idt.Subject}}
	var email string
	_ = json.Unmarshal(all["email"], &email)
	if email == "" {
		return Claims{}, errors.New("the ID token has no email claim (ask the provider for the email scope)")
	}
	if c.Email, err = auth.NormalizeEmail(email); err != nil {
		return Claims{}, fmt.Errorf("the ID token's email: %w", err)
	}
	c.EmailVerified = boolClaim(all["email_verified"])
	_ = json.Unmarshal(all["name"], &c.Name)
	c.Groups = strs(all[h.Config.GroupsClaim])
	return c, nil
}

// boolClaim reads a boolean claim, which some providers send as a string.
func boolClaim(raw json.RawMessage) bool {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && strings.EqualFold(s, "true")
}

// strs reads a claim of strings: a list, or one string.
func strs(raw json.RawMessage) []string {
	var l []string
	if json.Unmarshal(raw, &l) == nil {
		return l
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return []string{s}
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return strings.TrimSpace(s)
}

// message is a refusal's text for the person (a connect error's message;
// anything else is the server's fault and says so).
func message(err error) string {
	if ce := new(connect.Error); errors.As(err, &ce) {
		return ce.Message()
	}
	return "the sign-in failed on this server; try again"
}

// fail sends the browser back to the web app, which shows why.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, why string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/?"+ErrorParam+"="+url.QueryEscape(why), http.StatusSeeOther)
}
