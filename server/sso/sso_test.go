package sso_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/parleyhq/parley/server/internal/hydratest"
	"github.com/parleyhq/parley/server/sso"
)

// idToken signs in through Hydra as the login app's person, with a nonce
// of its own, and returns the ID token the provider issued.
func idToken(t *testing.T, idp *hydratest.Provider, clientID, secret, redirect string) (raw, nonce string) {
	t.Helper()
	conf := oauth2.Config{
		ClientID: clientID, ClientSecret: secret, RedirectURL: redirect, Scopes: []string{"openid", "email", "profile"},
		Endpoint: oauth2.Endpoint{AuthURL: idp.Issuer + "/oauth2/auth", TokenURL: idp.Issuer + "/oauth2/token"},
	}
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	nonce = rand.Text()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, err := browser.Get(conf.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	res.Body.Close()
	back, err := url.Parse(res.Header.Get("Location"))
	if err != nil || back.Query().Get("code") == "" || back.Query().Get("state") != state {
		t.Fatalf("authorize ended at %s %q, want the redirect with a code and the state", res.Status, res.Header.Get("Location"))
	}
	tok, err := conf.Exchange(t.Context(), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	raw, _ = tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no id_token in the token response")
	}
	return raw, nonce
}

// part decodes the JOSE header (0) or payload (1) of a compact JWT.
func part(t *testing.T, raw string, i int) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(raw, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestVerifyAgainstHydra checks ID tokens issued by a real provider: a
// good one, a wrong nonce, a tampered payload, another client's token, an
// expired one (within and past the clock skew), one signed with a key the
// provider does not publish, and one signed after the provider rotated its
// key, which verifies without a restart.
func TestVerifyAgainstHydra(t *testing.T) {
	idp := hydratest.Start(t)
	redirect := "http://127.0.0.1:1" + sso.CallbackPath // never reached: the test stops at the redirect
	clientID, secret := idp.Client(t, redirect)
	h := &sso.Handler{
		Config: sso.Config{Issuer: idp.Issuer, ClientID: clientID, ClientSecret: secret, RedirectURL: redirect,
			Scopes: "email,profile", GroupsClaim: "groups", ClockSkew: time.Minute},
		Logger: slog.Default(),
	}
	ctx := t.Context()
	idp.SignInAs(hydratest.Person{Subject: "ann-1", Email: "Ann@Example.COM", Verified: true, Name: "Ann", Groups: []string{"eng", "ops"}})
	raw, nonce := idToken(t, idp, clientID, secret, redirect)

	c, err := h.Verify(ctx, raw, nonce)
	if err != nil {
		t.Fatalf("Verify of a good token: %v", err)
	}
	if c.Issuer != idp.Issuer || c.Subject != "ann-1" || c.Email != "ann@example.com" || !c.EmailVerified || c.Name != "Ann" ||
		strings.Join(c.Groups, ",") != "eng,ops" {
		t.Fatalf("Verify = %+v, want ann-1 at %s, her address in lower case, verified, groups eng,ops", c, idp.Issuer)
	}

	if _, err := h.Verify(ctx, raw, rand.Text()); err == nil || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("Verify with another sign-in's nonce: %v, want a nonce error", err)
	}

	// Tampered: the payload says someone else, the signature is the provider's.
	payload := part(t, raw, 1)
	payload["email"], payload["sub"] = "mallory@example.com", "mallory"
	b, _ := json.Marshal(payload)
	segs := strings.Split(raw, ".")
	tampered := segs[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + segs[2]
	if _, err := h.Verify(ctx, tampered, nonce); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("Verify of a tampered token: %v, want a signature error", err)
	}

	// Signed by a key the provider does not publish, with the kid of one it does.
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", part(t, raw, 0)["kid"]))
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := json.Marshal(part(t, raw, 1))
	forged, err := signer.Sign(orig)
	if err != nil {
		t.Fatal(err)
	}
	forgedRaw, _ := forged.CompactSerialize()
	if _, err := h.Verify(ctx, forgedRaw, nonce); err == nil {
		t.Fatal("Verify of a token signed with a key the provider does not publish: accepted")
	}

	// Another client's token: the audience is not this gateway.
	otherID, otherSecret := idp.Client(t, redirect)
	otherRaw, otherNonce := idToken(t, idp, otherID, otherSecret, redirect)
	if _, err := h.Verify(ctx, otherRaw, otherNonce); err == nil || !strings.Contains(err.Error(), "audience") {
		t.Fatalf("Verify of a token issued to another client: %v, want an audience error", err)
	}

	// Expiry, on a clock moved past it: within the skew it passes, past it not.
	exp := time.Unix(int64(part(t, raw, 1)["exp"].(float64)), 0)
	h.Now = func() time.Time { return exp.Add(h.Config.ClockSkew - time.Second) }
	if _, err := h.Verify(ctx, raw, nonce); err != nil {
		t.Fatalf("Verify %v after expiry, within the %v skew: %v", h.Config.ClockSkew-time.Second, h.Config.ClockSkew, err)
	}
	h.Now = func() time.Time { return exp.Add(h.Config.ClockSkew + time.Second) }
	var expired *oidc.TokenExpiredError
	if _, err := h.Verify(ctx, raw, nonce); err == nil || !errors.As(err, &expired) {
		t.Fatalf("Verify past expiry and skew: %v, want a TokenExpiredError", err)
	}
	h.Now = nil

	// The provider rotates its signing key: new tokens carry the new kid,
	// and the same handler (which fetched the old keys) verifies them.
	kid := idp.RotateKey(t)
	rotated, rnonce := idToken(t, idp, clientID, secret, redirect)
	if got := part(t, rotated, 0)["kid"]; got != kid {
		t.Fatalf("after rotation the token's kid is %v, want %s", got, kid)
	}
	if _, err := h.Verify(ctx, rotated, rnonce); err != nil {
		t.Fatalf("Verify of a token signed with the rotated key: %v", err)
	}
}
