package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// CookieName is the session cookie's name.
const CookieName = "Session_id"

// APIKeyPrefix starts every API key secret.
const APIKeyPrefix = "pk_"

const (
	tokenBytes = 32
	// sessionTokenLen is the length of 32 bytes in unpadded base64url.
	sessionTokenLen = 43
	// keyBodyLen is the length of 32 bytes in base62, zero-padded.
	keyBodyLen = 43
	// keyPrefixLen is how much of a secret is kept for display: "pk_" and 8 characters.
	keyPrefixLen = len(APIKeyPrefix) + 8
)

// digest is SHA-256 of a credential: the only form in which one is stored.
type digest [sha256.Size]byte

// newSessionToken returns a fresh cookie value and its digest.
func newSessionToken() (string, digest) {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b), sha256.Sum256(b)
}

// parseSessionToken checks a cookie value's shape and returns its digest.
func parseSessionToken(v string) (digest, bool) {
	if len(v) != sessionTokenLen {
		return digest{}, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(v)
	if err != nil || len(b) != tokenBytes {
		return digest{}, false
	}
	return sha256.Sum256(b), true
}

// newAPIKeySecret returns a fresh secret "pk_" + base62(32 random bytes).
func newAPIKeySecret() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b)
	body := new(big.Int).SetBytes(b).Text(62)
	return APIKeyPrefix + strings.Repeat("0", keyBodyLen-len(body)) + body
}

// parseAPIKeySecret checks a secret's shape and returns its digest.
func parseAPIKeySecret(s string) (digest, bool) {
	if len(s) != len(APIKeyPrefix)+keyBodyLen || !strings.HasPrefix(s, APIKeyPrefix) {
		return digest{}, false
	}
	for i := len(APIKeyPrefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return digest{}, false
		}
	}
	return sha256.Sum256([]byte(s)), true
}

// sessionCookie is the Set-Cookie of a new session.
func (a *Authenticator) sessionCookie(token string) *http.Cookie {
	return &http.Cookie{
		Name: CookieName, Value: token, Path: "/",
		MaxAge: int(a.cfg.SessionTTL / time.Second), HttpOnly: true,
		Secure: !a.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode,
	}
}

// SessionCookie returns the Set-Cookie header value that starts a session
// with token; handlers add it to their response headers.
func (a *Authenticator) SessionCookie(token string) string {
	return a.sessionCookie(token).String()
}

// ClearCookie returns the Set-Cookie header value that removes the session
// cookie from the browser.
func (a *Authenticator) ClearCookie() string {
	c := a.sessionCookie("")
	c.MaxAge = -1
	return c.String()
}

// APIKeyHeader carries an API key the way Anthropic's API and SDKs send it,
// as an alternative to Authorization: Bearer.
const APIKeyHeader = "X-Api-Key"

// credentialsOf extracts the credential of a request: a bearer key wins over
// an x-api-key key, which wins over the cookie. present is true when an
// Authorization or x-api-key header was given (even a malformed one, which
// then fails rather than falling back to the cookie). A key header, like a
// bearer key, cannot be sent by a page of another origin without the key,
// so the CSRF rule does not apply to it.
func credentialsOf(h http.Header) (kind Channel, raw string, present bool) {
	if authz := h.Get("Authorization"); authz != "" {
		scheme, tok, _ := strings.Cut(authz, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return ChannelAPIKey, "", true
		}
		return ChannelAPIKey, strings.TrimSpace(tok), true
	}
	if key := h.Get(APIKeyHeader); key != "" {
		return ChannelAPIKey, strings.TrimSpace(key), true
	}
	// Parsed by hand rather than with http.ParseCookie, which refuses a
	// whole line for one malformed cookie of some other application.
	for _, line := range h.Values("Cookie") {
		for part := range strings.SplitSeq(line, ";") {
			name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
			if ok && name == CookieName {
				return ChannelSession, strings.Trim(value, `"`), true
			}
		}
	}
	return 0, "", false
}

// SecureCookies reports whether cookies carry the Secure attribute (off
// only for plain-HTTP development).
func (a *Authenticator) SecureCookies() bool { return !a.cfg.InsecureCookies }
