package auth

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/store"
)

// NewSession is a session just started: the cookie token (secret, shown to
// the browser once) and its expiry.
type NewSession struct {
	Token     string
	ExpiresAt time.Time
}

// Login checks an email and password and starts a session. An unknown email
// and a wrong password take the same time and give the same error.
func (a *Authenticator) Login(ctx context.Context, email, password string, c Client) (store.User, NewSession, error) {
	if err := a.loginGate(ctx, email, c); err != nil {
		return store.User{}, NewSession{}, err
	}
	u, err := a.accounts.GetUserByEmail(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.User{}, NewSession{}, a.internal("looking up a user", err)
	}
	hash := u.PasswordHash
	if hash == "" {
		hash = a.dummy()
	}
	ok, verr := VerifyPassword(password, hash)
	if err != nil || verr != nil || !ok || u.PasswordHash == "" {
		reason := "wrong_password"
		if err != nil {
			reason = "unknown_email"
		}
		a.record(ctx, u.ID, store.AuditLoginFailure, c, map[string]string{"email": email, "reason": reason})
		a.loginFailed(ctx, email, c)
		return store.User{}, NewSession{}, apierr.Unauthenticated("wrong email or password")
	}
	a.loginSucceeded(ctx, email, c)
	a.record(ctx, u.ID, store.AuditLoginSuccess, c, nil)
	s, err := a.startSession(ctx, u, c)
	return u, s, err
}

// dummy returns a hash of the current cost that no password matches, so a
// login for an unknown email still pays for one verification.
func (a *Authenticator) dummy() string {
	a.dummyOnce.Do(func() {
		h, err := HashPassword(newID(), a.cfg.Password)
		if err != nil {
			panic(err)
		}
		a.dummyHash = h
	})
	return a.dummyHash
}

func (a *Authenticator) startSession(ctx context.Context, u store.User, c Client) (NewSession, error) {
	obs.NoteCaller(ctx, u.ID, "") // the request line of a sign-up or login names the user
	token, d := newSessionToken()
	now := a.now().UTC()
	s := store.Session{
		TokenHash: d[:], UserID: u.ID, IP: c.IP, UserAgent: c.UserAgent,
		CreatedAt: now, ExpiresAt: now.Add(a.cfg.SessionTTL),
	}
	if err := a.accounts.CreateSession(ctx, s); err != nil {
		return NewSession{}, a.internal("creating a session", err)
	}
	return NewSession{Token: token, ExpiresAt: s.ExpiresAt}, nil
}

// Logout ends the session that authenticated ctx, in the store and in this
// process's cache (other gateways drop it when the broadcast reaches them, or
// within the cache TTL without one). With an API
// key it does nothing. It reports whether a session was ended.
func (a *Authenticator) Logout(ctx context.Context, c Client) (bool, error) {
	cred, ok := ctx.Value(credentialKey{}).(credential)
	if !ok {
		return false, errNoCredentials()
	}
	if cred.entry.principal.Channel != ChannelSession {
		return false, nil
	}
	if err := a.accounts.DeleteSession(ctx, cred.digest[:]); err != nil {
		return false, a.internal("deleting a session", err)
	}
	a.broadcast(ctx, Eviction{Session: hex.EncodeToString(cred.digest[:])})
	a.record(ctx, cred.entry.user.ID, store.AuditLogout, c, nil)
	return true, nil
}

// Me returns the user who authenticated ctx, as cached: no store round trip.
func (a *Authenticator) Me(ctx context.Context) (store.User, Principal, error) {
	cred, ok := ctx.Value(credentialKey{}).(credential)
	if !ok {
		return store.User{}, Principal{}, errNoCredentials()
	}
	return cred.entry.user, cred.entry.principal, nil
}

// CreateAPIKey makes a key for p's user living ttl (0: MaxAPIKeyTTL) with
// its response cache default, and returns it with its secret, which exists
// nowhere else.
func (a *Authenticator) CreateAPIKey(ctx context.Context, p Principal, name string, ttl time.Duration, cache store.ResponseCacheMode, c Client) (store.APIKey, string, error) {
	if !cache.Valid() {
		return store.APIKey{}, "", apierr.InvalidArgument("response_cache", "must be on, off or unset")
	}
	k, secret, err := a.IssueAPIKey(ctx, store.APIKey{UserID: p.UserID, Name: name, ResponseCache: cache}, ttl)
	if err != nil {
		return store.APIKey{}, "", err
	}
	a.record(ctx, p.UserID, store.AuditAPIKeyCreated, c, map[string]string{"key_id": k.ID, "prefix": k.Prefix})
	return k, secret, nil
}

// IssueAPIKey stores k, given its owner, name and scope, with a new id and
// secret, living ttl (0: MaxAPIKeyTTL), and returns it with the secret,
// which exists nowhere else. The caller records it in the audit log.
func (a *Authenticator) IssueAPIKey(ctx context.Context, k store.APIKey, ttl time.Duration) (store.APIKey, string, error) {
	switch {
	case ttl == 0:
		ttl = MaxAPIKeyTTL
	case ttl < 0:
		return store.APIKey{}, "", apierr.InvalidArgument("ttl", "must be positive")
	case ttl > MaxAPIKeyTTL:
		return store.APIKey{}, "", apierr.InvalidArgument("ttl", "must be at most 30 days (720h)")
	}
	secret := newAPIKeySecret()
	d, _ := parseAPIKeySecret(secret)
	now := a.now().UTC()
	k.ID, k.Prefix, k.SecretHash, k.CreatedAt, k.ExpiresAt = newID(), secret[:keyPrefixLen], d[:], now, now.Add(ttl)
	if err := a.accounts.CreateAPIKey(ctx, k); err != nil {
		return store.APIKey{}, "", a.internal("creating an API key", err)
	}
	return k, secret, nil
}

// RevokeOwnedAPIKey revokes the key keyID of the account ownerID (an
// organisation's billing user) and has every gateway drop it from its
// cache. The caller records it in the audit log.
func (a *Authenticator) RevokeOwnedAPIKey(ctx context.Context, ownerID, keyID string) error {
	err := a.accounts.RevokeAPIKey(ctx, ownerID, keyID, a.now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("API key")
	}
	if err != nil {
		return a.internal("revoking an API key", err)
	}
	a.broadcast(ctx, Eviction{KeyID: keyID})
	return nil
}

// ListAPIKeys lists p's keys, newest first.
func (a *Authenticator) ListAPIKeys(ctx context.Context, p Principal, page store.PageRequest) ([]store.APIKey, string, error) {
	keys, next, err := a.accounts.ListAPIKeys(ctx, p.UserID, page)
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, "", apierr.InvalidArgument("page_token", "is not a token this server gave")
	}
	if err != nil {
		return nil, "", a.internal("listing API keys", err)
	}
	return keys, next, nil
}

// RevokeAPIKey revokes one of p's keys and drops it from this process's
// cache; other gateways refuse it within the cache TTL. It returns the key as
// revoked.
func (a *Authenticator) RevokeAPIKey(ctx context.Context, p Principal, keyID string, c Client) (store.APIKey, error) {
	err := a.accounts.RevokeAPIKey(ctx, p.UserID, keyID, a.now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return store.APIKey{}, apierr.NotFound("API key")
	}
	if err != nil {
		return store.APIKey{}, a.internal("revoking an API key", err)
	}
	a.broadcast(ctx, Eviction{KeyID: keyID})
	a.record(ctx, p.UserID, store.AuditAPIKeyRevoked, c, map[string]string{"key_id": keyID})
	// The store has no get-by-id; a user's keys are few.
	page := store.PageRequest{Size: store.MaxPageSize}
	for {
		keys, next, err := a.accounts.ListAPIKeys(ctx, p.UserID, page)
		if err != nil {
			return store.APIKey{}, a.internal("reading a revoked API key", err)
		}
		for _, k := range keys {
			if k.ID == keyID {
				return k, nil
			}
		}
		if next == "" {
			return store.APIKey{}, apierr.NotFound("API key")
		}
		page.Cursor = next
	}
}

// SetUserTier changes a user's tier on behalf of the admin p and drops the
// user's cached credentials so the new tier applies to the next request.
func (a *Authenticator) SetUserTier(ctx context.Context, p Principal, userID string, tier store.Tier, c Client) (store.User, error) {
	before, err := a.accounts.GetUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, apierr.NotFound("user")
	}
	if err != nil {
		return store.User{}, a.internal("reading a user", err)
	}
	u, err := a.accounts.SetUserTier(ctx, userID, tier)
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, apierr.NotFound("user")
	}
	if err != nil {
		return store.User{}, a.internal("setting a tier", err)
	}
	a.broadcast(ctx, Eviction{UserID: userID})
	a.record(ctx, userID, store.AuditTierChanged, c, map[string]string{
		"from": string(before.Tier), "to": string(tier), "by": p.UserID,
	})
	return u, nil
}

// UserByID returns the user with id, or not_found.
func (a *Authenticator) UserByID(ctx context.Context, id string) (store.User, error) {
	u, err := a.accounts.GetUser(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, apierr.NotFound("user")
	}
	if err != nil {
		return store.User{}, a.internal("reading a user", err)
	}
	return u, nil
}

// UserByEmail returns the user with the normalised email, or not_found.
func (a *Authenticator) UserByEmail(ctx context.Context, email string) (store.User, error) {
	u, err := a.accounts.GetUserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, apierr.NotFound("user")
	}
	if err != nil {
		return store.User{}, a.internal("reading a user", err)
	}
	return u, nil
}

// record appends an audit event; a failure is logged, not returned, since
// the action it records has already happened.
func (a *Authenticator) record(ctx context.Context, userID, kind string, c Client, detail map[string]string) {
	e := store.AuditEvent{ID: newID(), UserID: userID, Kind: kind, IP: c.IP, UserAgent: c.UserAgent, At: a.now().UTC()}
	if len(detail) > 0 {
		b, _ := json.Marshal(detail)
		e.Detail = string(b)
	}
	if err := a.audit.Append(context.WithoutCancel(ctx), e); err != nil {
		a.log.Error("auth: audit append failed", "kind", kind, "user_id", userID, "err", err)
	}
}

func (a *Authenticator) internal(what string, err error) error {
	a.log.Error("auth: "+what, "err", err)
	return apierr.Internal()
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }
