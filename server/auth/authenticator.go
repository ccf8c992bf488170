package auth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// Defaults of Config.
const (
	// DefaultSessionTTL is how long a session lives.
	DefaultSessionTTL = 30 * 24 * time.Hour
	// MaxAPIKeyTTL is the longest an API key may live, and its default.
	MaxAPIKeyTTL = 30 * 24 * time.Hour
	// DefaultCacheTTL is how long a resolved credential is trusted without
	// asking the store; it bounds how late another gateway sees a revocation.
	DefaultCacheTTL = 5 * time.Second
	// DefaultLoginRate is how many Login or SignUp attempts a client IP (and
	// SignUp attempts an email) may make per minute.
	DefaultLoginRate = 10
	// DefaultSignUpRateGlobal is how many sign-ups the whole server (every
	// gateway sharing the limiter) takes per minute: on top of the
	// per-address limit, it bounds how fast someone holding many addresses
	// can make accounts, each with the free tier's allowance.
	DefaultSignUpRateGlobal = 60
	// DefaultLoginFreeFailures is how many wrong passwords for one account
	// from one address are free before the back-off starts (see throttle.go).
	DefaultLoginFreeFailures = 5
	// DefaultLoginAccountFreeFailures is the same for one account from all
	// addresses together: far more, so a stranger cannot lock the owner out.
	DefaultLoginAccountFreeFailures = 100
	// DefaultLoginBackoffMax is the longest back-off after a failure.
	DefaultLoginBackoffMax = 15 * time.Minute
	// DefaultTouchInterval is how often API keys' last use is written.
	DefaultTouchInterval = 30 * time.Second
)

// Config tunes an Authenticator. Zero fields take the defaults above.
type Config struct {
	// InsecureCookies drops the Secure attribute, for plain-HTTP development.
	InsecureCookies bool
	// WebOrigins are the browser origins, besides the server's own, whose
	// cookie-authenticated calls are accepted (scheme://host[:port]).
	WebOrigins []string
	// SessionTTL is a session's life.
	SessionTTL time.Duration
	// CacheTTL is the credential cache's life, at most DefaultCacheTTL.
	CacheTTL time.Duration
	// LoginRate is the pre-auth limit per minute on Login and SignUp per
	// client IP, and on SignUp per email.
	LoginRate int64
	// SignUp is the sign-up policy; "" is SignUpOpen.
	SignUp SignUpPolicy
	// SignUpRateGlobal is the limit per minute on sign-ups from every
	// address together.
	SignUpRateGlobal int64
	// LoginFreeFailures, LoginAccountFreeFailures and LoginBackoffMax shape
	// the login back-off per (account, address) and per account (see
	// throttle.go).
	LoginFreeFailures, LoginAccountFreeFailures int
	LoginBackoffMax                             time.Duration
	// TouchInterval is how often last_used_at of API keys is flushed.
	TouchInterval time.Duration
	// Password is the argon2id cost of new hashes; zero: DefaultPasswordParams.
	Password PasswordParams
	// Logger receives store failures; nil discards them.
	Logger *slog.Logger
	// Broadcast, if set, tells the other gateways about logouts, revoked
	// keys and tier changes (see Eviction).
	Broadcast Broadcaster
}

// Authenticator turns credentials into Principals and owns sign-up, login,
// sessions and API keys. It is safe for concurrent use.
type Authenticator struct {
	accounts store.Accounts
	audit    store.Audit
	limiter  store.Limiter
	now      func() time.Time
	cfg      Config
	origins  map[string]bool
	log      *slog.Logger

	cache     sync.Map // cacheKey → *cached
	cacheSize atomic.Int64

	touchMu sync.Mutex
	touched map[string]time.Time // key id → last use, not yet written

	dummyOnce sync.Once
	dummyHash string
}

// New returns an Authenticator over the accounts, audit log and limiter
// stores, reading time from clock.
func New(accounts store.Accounts, audit store.Audit, limiter store.Limiter, clock func() time.Time, cfg Config) *Authenticator {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.CacheTTL <= 0 || cfg.CacheTTL > DefaultCacheTTL {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.LoginRate <= 0 {
		cfg.LoginRate = DefaultLoginRate
	}
	if cfg.SignUp == "" {
		cfg.SignUp = SignUpOpen
	}
	if cfg.SignUpRateGlobal <= 0 {
		cfg.SignUpRateGlobal = DefaultSignUpRateGlobal
	}
	if cfg.LoginFreeFailures <= 0 {
		cfg.LoginFreeFailures = DefaultLoginFreeFailures
	}
	if cfg.LoginAccountFreeFailures <= 0 {
		cfg.LoginAccountFreeFailures = DefaultLoginAccountFreeFailures
	}
	if cfg.LoginBackoffMax < time.Second {
		cfg.LoginBackoffMax = DefaultLoginBackoffMax
	}
	if cfg.TouchInterval <= 0 {
		cfg.TouchInterval = DefaultTouchInterval
	}
	if cfg.Password == (PasswordParams{}) {
		cfg.Password = DefaultPasswordParams
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	origins := make(map[string]bool, len(cfg.WebOrigins))
	for _, o := range cfg.WebOrigins {
		origins[normalizeOrigin(o)] = true
	}
	a := &Authenticator{
		accounts: accounts, audit: audit, limiter: limiter, now: clock, cfg: cfg,
		origins: origins, log: log, touched: map[string]time.Time{},
	}
	a.dummy() // so the first login for an unknown email costs no more than others
	return a
}

// cacheKey names a cached credential: its channel and digest.
type cacheKey struct {
	ch Channel
	d  digest
}

// cached is a resolved credential.
type cached struct {
	user       store.User // without the password hash
	principal  Principal
	validUntil time.Time    // the credential's own expiry
	freshUntil time.Time    // when the store must be asked again
	lastTouch  atomic.Int64 // unix nanos of the last recorded use (keys)
}

// maxCacheEntries bounds the cache; past it new entries are not cached.
const maxCacheEntries = 1 << 17

// The unauthenticated errors; made per call because a *connect.Error carries
// mutable metadata.
func errNoCredentials() *connect.Error {
	return apierr.Unauthenticated("no credentials: send the Session_id cookie, Authorization: Bearer <API key> or x-api-key: <API key>")
}

func errBadSession() *connect.Error { return apierr.Unauthenticated("invalid or expired session") }

func errBadKey() *connect.Error { return apierr.Unauthenticated("invalid, expired or revoked API key") }

// authenticate resolves a raw credential of the channel ch. The errors are unauthenticated,
// or internal when the store fails.
func (a *Authenticator) authenticate(ctx context.Context, ch Channel, raw string) (*cached, digest, error) {
	fail := errBadSession
	var d digest
	var ok bool
	switch ch {
	case ChannelSession:
		d, ok = parseSessionToken(raw)
	case ChannelAPIKey:
		fail = errBadKey
		d, ok = parseAPIKeySecret(raw)
	}
	if !ok {
		return nil, d, fail()
	}
	now := a.now()
	key := cacheKey{ch, d}
	if v, hit := a.cache.Load(key); hit {
		c := v.(*cached)
		if now.Before(c.freshUntil) {
			if !now.Before(c.validUntil) {
				return nil, d, fail()
			}
			a.noteUse(c, now)
			return c, d, nil
		}
		a.evict(key)
	}
	c := &cached{}
	switch ch {
	case ChannelSession:
		s, u, err := a.accounts.GetSession(ctx, d[:])
		if err != nil {
			return nil, d, a.storeErr(err, fail)
		}
		if s.Expired(now) {
			return nil, d, fail()
		}
		c.user, c.validUntil = u, s.ExpiresAt
		c.principal = principalOf(u, ChannelSession, store.APIKey{})
	case ChannelAPIKey:
		k, u, err := a.accounts.GetAPIKeyByHash(ctx, d[:])
		if err != nil {
			return nil, d, a.storeErr(err, fail)
		}
		if !k.Usable(now) {
			return nil, d, fail()
		}
		c.user, c.validUntil = u, k.ExpiresAt
		c.principal = principalOf(u, ChannelAPIKey, k)
	}
	c.user.PasswordHash = ""
	c.freshUntil = now.Add(a.cfg.CacheTTL)
	if a.cacheSize.Load() < maxCacheEntries {
		if _, loaded := a.cache.Swap(key, c); !loaded {
			a.cacheSize.Add(1)
		}
	}
	a.noteUse(c, now)
	return c, d, nil
}

// storeErr maps a store failure while resolving a credential.
func (a *Authenticator) storeErr(err error, notFound func() *connect.Error) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound()
	}
	a.log.Error("auth: store lookup failed", "err", err)
	return apierr.Internal()
}

func (a *Authenticator) evict(key cacheKey) {
	if _, loaded := a.cache.LoadAndDelete(key); loaded {
		a.cacheSize.Add(-1)
	}
}

// evictWhere drops every cached credential matching keep == false.
func (a *Authenticator) evictWhere(match func(*cached) bool) {
	a.cache.Range(func(k, v any) bool {
		if match(v.(*cached)) {
			a.evict(k.(cacheKey))
		}
		return true
	})
}

// sweep drops cache entries that are no longer fresh.
func (a *Authenticator) sweep(now time.Time) {
	a.evictWhere(func(c *cached) bool { return !now.Before(c.freshUntil) })
}

// noteUse records an API key's use for the next batch, at most once a
// second per key so the hot path rarely takes the lock.
func (a *Authenticator) noteUse(c *cached, now time.Time) {
	if c.principal.Channel != ChannelAPIKey {
		return
	}
	last := c.lastTouch.Load()
	if now.UnixNano()-last < int64(time.Second) || !c.lastTouch.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	a.touchMu.Lock()
	if now.After(a.touched[c.principal.KeyID]) {
		a.touched[c.principal.KeyID] = now
	}
	a.touchMu.Unlock()
}

// Flush writes the pending last-use times of API keys in one batch. On
// failure they are kept for the next try.
func (a *Authenticator) Flush(ctx context.Context) error {
	a.touchMu.Lock()
	batch := a.touched
	a.touched = map[string]time.Time{}
	a.touchMu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := a.accounts.TouchAPIKeys(ctx, batch); err != nil {
		a.touchMu.Lock()
		for id, t := range batch {
			if t.After(a.touched[id]) {
				a.touched[id] = t
			}
		}
		a.touchMu.Unlock()
		return err
	}
	return nil
}

// Run flushes last-use times every TouchInterval and sweeps the cache until
// ctx is done, then flushes once more.
func (a *Authenticator) Run(ctx context.Context) {
	flush := time.NewTicker(a.cfg.TouchInterval)
	defer flush.Stop()
	sweep := time.NewTicker(a.cfg.CacheTTL)
	defer sweep.Stop()
	expired := time.NewTicker(time.Hour)
	defer expired.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := a.Flush(fctx); err != nil {
				a.log.Error("auth: flushing API key use", "err", err)
			}
			return
		case <-flush.C:
			if err := a.Flush(ctx); err != nil {
				a.log.Error("auth: flushing API key use", "err", err)
			}
		case <-sweep.C:
			a.sweep(a.now())
		case <-expired.C:
			// Expired sessions are refused anyway; this keeps the table small.
			if n, err := a.accounts.DeleteExpiredSessions(ctx, a.now()); err != nil {
				a.log.Error("auth: deleting expired sessions", "err", err)
			} else if n > 0 {
				a.log.Info("auth: deleted expired sessions", "count", n)
			}
		}
	}
}
