package auth

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// Federated is a person as an identity provider vouches for them after a
// verified sign-in: the provider's account (issuer, subject) and the
// address it gives.
type Federated struct {
	Issuer, Subject string
	// Email is the address the provider gives, normalised (NormalizeEmail).
	Email string
	// EmailVerified is the provider's email_verified claim.
	EmailVerified bool
	// Name is the provider's display name for the person, if any.
	Name string
}

// AuditIdentityLinked records a provider account linked to a user.
const AuditIdentityLinked = "identity_linked"

// SignInFederated starts a session for the user the provider's account is
// linked to. An account seen for the first time is linked to the user
// with its address, if the provider verified that address, or to a new
// user (no password: it signs in through the provider only) when mayCreate
// (the address's domain belongs to an organisation) or the sign-up policy
// is open. The session is the one a password login gives.
func (a *Authenticator) SignInFederated(ctx context.Context, f Federated, mayCreate bool, c Client) (store.User, NewSession, error) {
	u, err := a.accounts.GetUserByIdentity(ctx, f.Issuer, f.Subject)
	if errors.Is(err, store.ErrNotFound) {
		u, err = a.linkFederated(ctx, f, mayCreate, c)
	}
	if err != nil {
		if ce := new(connect.Error); errors.As(err, &ce) {
			return store.User{}, NewSession{}, err
		}
		return store.User{}, NewSession{}, a.internal("signing in through an identity provider", err)
	}
	a.record(ctx, u.ID, store.AuditLoginSuccess, c, map[string]string{"method": "oidc", "issuer": f.Issuer})
	s, err := a.startSession(ctx, u, c)
	return u, s, err
}

// linkFederated finds or makes the user of a provider account seen for
// the first time, and links the two.
func (a *Authenticator) linkFederated(ctx context.Context, f Federated, mayCreate bool, c Client) (store.User, error) {
	if !f.EmailVerified {
		return store.User{}, apierr.PermissionDenied("the identity provider has not verified this email address, so it cannot be linked to an account here")
	}
	now := a.now().UTC()
	u, err := a.accounts.GetUserByEmail(ctx, f.Email)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if !mayCreate && a.cfg.SignUp != SignUpOpen {
			return store.User{}, apierr.PermissionDenied("there is no account for " + f.Email + " here and sign-up is " + string(a.cfg.SignUp) + "; ask an administrator")
		}
		u = store.User{ID: newID(), Email: f.Email, DisplayName: displayName(f.Name, f.Email), Tier: store.TierFree, CreatedAt: now}
		if err := a.accounts.CreateUser(ctx, u); errors.Is(err, store.ErrConflict) {
			// A sign-in of the same address at the same moment made it.
			if u, err = a.accounts.GetUserByEmail(ctx, f.Email); err != nil {
				return store.User{}, err
			}
		} else if err != nil {
			return store.User{}, err
		} else {
			a.record(ctx, u.ID, store.AuditSignup, c, map[string]string{"method": "oidc", "issuer": f.Issuer})
		}
	case err != nil:
		return store.User{}, err
	}
	err = a.accounts.LinkIdentity(ctx, store.Identity{Issuer: f.Issuer, Subject: f.Subject, UserID: u.ID, CreatedAt: now})
	if errors.Is(err, store.ErrConflict) {
		// Linked by a concurrent first sign-in: whoever won names the user.
		return a.accounts.GetUserByIdentity(ctx, f.Issuer, f.Subject)
	}
	if err != nil {
		return store.User{}, err
	}
	a.record(ctx, u.ID, AuditIdentityLinked, c, map[string]string{"issuer": f.Issuer, "subject": f.Subject})
	return u, nil
}

// displayName is the provider's name for a person, printable and at most
// 100 characters (sign-up's bound), or the address when it gives none.
func displayName(name, email string) string {
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		return r
	}, strings.TrimSpace(name))
	if name == "" {
		return email
	}
	if r := []rune(name); len(r) > 100 {
		name = string(r[:100])
	}
	return name
}
