package store

import (
	"context"
	"time"
)

// Tier is a user's subscription tier; it selects the web channel's limits and
// the scheduler's priority.
type Tier string

// The tiers, lowest first.
const (
	// TierFree is the tier every new user starts on.
	TierFree Tier = "free"
	// TierPlus is the first paid tier.
	TierPlus Tier = "plus"
	// TierPro is the second paid tier.
	TierPro Tier = "pro"
	// TierMax is the highest tier.
	TierMax Tier = "max"
)

// Valid reports whether t is one of the known tiers.
func (t Tier) Valid() bool {
	switch t {
	case TierFree, TierPlus, TierPro, TierMax:
		return true
	}
	return false
}

// ResponseCacheMode is an API key's own default for the response cache,
// used when a request does not say (the Parley-Cache header) and overriding
// the operator's --response-cache default.
type ResponseCacheMode string

// The modes.
const (
	// ResponseCacheDefault follows the operator's default.
	ResponseCacheDefault ResponseCacheMode = ""
	// ResponseCacheOn caches the key's deterministic requests.
	ResponseCacheOn ResponseCacheMode = "on"
	// ResponseCacheOff caches none of the key's requests.
	ResponseCacheOff ResponseCacheMode = "off"
)

// Valid reports whether m is one of the known modes.
func (m ResponseCacheMode) Valid() bool {
	switch m {
	case ResponseCacheDefault, ResponseCacheOn, ResponseCacheOff:
		return true
	}
	return false
}

// User is an account holder.
type User struct {
	// ID is the caller-made UUIDv7.
	ID string
	// Email is the login name, normalised by the caller. Stores also treat it
	// case-insensitively for uniqueness and lookup.
	Email string
	// DisplayName is shown in the UI.
	DisplayName string
	// PasswordHash is the encoded argon2id hash with its parameters; empty
	// for users who cannot log in with a password.
	PasswordHash string
	// Tier is the subscription tier.
	Tier Tier
	// Admin grants the AdminService.
	Admin bool
	// CreatedAt is when the account was made.
	CreatedAt time.Time
}

// Session is a browser login. Only the SHA-256 of the cookie's token is
// stored, so a leaked database does not leak sessions.
type Session struct {
	// TokenHash is SHA-256 of the cookie token; it is the session's key.
	TokenHash []byte
	// UserID is the owner.
	UserID string
	// IP is the client address at login.
	IP string
	// UserAgent is the client's User-Agent at login.
	UserAgent string
	// CreatedAt is the login time.
	CreatedAt time.Time
	// ExpiresAt is when the session stops being valid. Stores return expired
	// sessions; the caller compares with its clock (see Expired).
	ExpiresAt time.Time
}

// Expired reports whether s is no longer valid at now.
func (s Session) Expired(now time.Time) bool { return !now.Before(s.ExpiresAt) }

// APIKey is a bearer credential for the API channel. Only the SHA-256 of the
// secret is stored, with a short display prefix.
type APIKey struct {
	// ID is the caller-made UUIDv7.
	ID string
	// UserID is the owner.
	UserID string
	// Name is the user's label for the key.
	Name string
	// Prefix is the first characters of the secret, shown in lists.
	Prefix string
	// SecretHash is SHA-256 of the secret; it is unique.
	SecretHash []byte
	// CreatedAt is when the key was made.
	CreatedAt time.Time
	// ExpiresAt is when the key stops working. Stores return expired keys;
	// the caller compares with its clock (see Usable).
	ExpiresAt time.Time
	// LastUsedAt is the latest use recorded by TouchAPIKeys; zero if never.
	LastUsedAt time.Time
	// RevokedAt is when the key was revoked; zero if it was not.
	RevokedAt time.Time
	// ResponseCache is the key's response cache default.
	ResponseCache ResponseCacheMode
	// OrgID is the organisation of an organisation's key ("" for a
	// person's): UserID is then the organisation's billing user, CreatedBy
	// the member who made it, and TeamID its team ("" for a member's own
	// key in the organisation).
	OrgID, TeamID, CreatedBy string
	// Models lists the models the key may use (their ids or aliases; all
	// when empty).
	Models []string
	// AllowedIPs lists the client addresses (CIDR prefixes) the key works
	// from (any when empty).
	AllowedIPs []string
	// RPM and TPM bound the key's requests and tokens (input and output)
	// a minute; 0 is no bound.
	RPM, TPM int64
}

// Usable reports whether k authenticates requests at now: not revoked and not
// expired.
func (k APIKey) Usable(now time.Time) bool {
	return k.RevokedAt.IsZero() && now.Before(k.ExpiresAt)
}

// Identity links an account at an OpenID Connect provider (its issuer and
// the subject it names the person by) to a user.
type Identity struct {
	Issuer, Subject, UserID string
	CreatedAt               time.Time
}

// Accounts stores users, browser sessions, API keys, identity provider
// accounts and sign-up invitations.
type Accounts interface {
	Invitations

	// CreateUser stores u. It returns ErrConflict if the ID or the email
	// (compared case-insensitively) is taken.
	CreateUser(ctx context.Context, u User) error
	// GetUser returns the user with the ID, or ErrNotFound.
	GetUser(ctx context.Context, id string) (User, error)
	// GetUserByEmail returns the user with the email, compared
	// case-insensitively, or ErrNotFound.
	GetUserByEmail(ctx context.Context, email string) (User, error)
	// SetUserTier changes a user's tier and returns the updated user, or
	// ErrNotFound.
	SetUserTier(ctx context.Context, id string, tier Tier) (User, error)
	// SetUserAdmin sets a user's admin flag and returns the updated user, or
	// ErrNotFound.
	SetUserAdmin(ctx context.Context, id string, admin bool) (User, error)
	// SearchUsers returns the users whose lower-cased email starts with
	// prefix (every user when it is ""), by lower-cased email. The cursor
	// is the last email's.
	SearchUsers(ctx context.Context, prefix string, page PageRequest) ([]User, string, error)

	// CreateSession stores s. It returns ErrConflict if the token hash
	// exists, ErrNotFound if the user does not.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns the session with the token hash and its user, or
	// ErrNotFound. Expired sessions are returned: the caller checks
	// Session.Expired with its own clock.
	GetSession(ctx context.Context, tokenHash []byte) (Session, User, error)
	// DeleteSession removes a session (logout). Deleting a missing session is
	// not an error, so logout is idempotent.
	DeleteSession(ctx context.Context, tokenHash []byte) error
	// DeleteExpiredSessions removes sessions expired at now and returns how
	// many it removed.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int64, error)

	// CreateAPIKey stores k (LastUsedAt and RevokedAt are ignored). It returns
	// ErrConflict if the ID or secret hash exists, ErrNotFound if the user
	// does not.
	CreateAPIKey(ctx context.Context, k APIKey) error
	// GetAPIKeyByHash returns the key with the secret hash and its user.
	// Revoked keys are reported as ErrNotFound, since nothing may
	// authenticate with them; expired keys are returned and the caller checks
	// APIKey.Usable with its own clock.
	GetAPIKeyByHash(ctx context.Context, secretHash []byte) (APIKey, User, error)
	// GetAPIKey returns the key with the id, revoked or not, or
	// ErrNotFound (work a key started later, such as a batch, reads its
	// scope).
	GetAPIKey(ctx context.Context, id string) (APIKey, error)
	// ListAPIKeys lists a user's keys, revoked ones included (with
	// RevokedAt), newest first.
	ListAPIKeys(ctx context.Context, userID string, page PageRequest) ([]APIKey, string, error)
	// RevokeAPIKey revokes the user's key at the given time. It returns
	// ErrNotFound if the key does not exist or belongs to another user.
	// Revoking a revoked key succeeds and keeps the first RevokedAt, so
	// retries are safe.
	RevokeAPIKey(ctx context.Context, userID, keyID string, at time.Time) error
	// GetUserByIdentity returns the user an identity provider's account
	// (issuer, subject) is linked to, or ErrNotFound.
	GetUserByIdentity(ctx context.Context, issuer, subject string) (User, error)
	// LinkIdentity links the provider's account to a user; ErrConflict if
	// it is linked already.
	LinkIdentity(ctx context.Context, id Identity) error
	// TouchAPIKeys records last use times in one batch, keyed by key ID. A
	// time older than the stored one is ignored, as are unknown IDs.
	TouchAPIKeys(ctx context.Context, lastUsed map[string]time.Time) error
}
