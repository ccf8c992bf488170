package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// SignUpPolicy says who may create an account with AuthService.SignUp.
type SignUpPolicy string

// The policies.
const (
	// SignUpOpen lets anyone sign up (throttled). It is the default: the
	// embedded mode is a fresh clone on a laptop, where the first thing one
	// does is sign up in the browser, and there is no operator yet to hand
	// out codes. A public deployment should choose invite or closed.
	SignUpOpen SignUpPolicy = "open"
	// SignUpInvite lets only holders of an unused admin-issued invitation
	// code sign up; each sign-up takes one use of its code.
	SignUpInvite SignUpPolicy = "invite"
	// SignUpClosed refuses every sign-up: accounts are made by an operator
	// (parley admin create-user).
	SignUpClosed SignUpPolicy = "closed"
)

// String implements flag.Value.
func (p *SignUpPolicy) String() string {
	if p == nil || *p == "" {
		return string(SignUpOpen)
	}
	return string(*p)
}

// Set implements flag.Value: open, invite or closed.
func (p *SignUpPolicy) Set(s string) error {
	switch v := SignUpPolicy(strings.ToLower(strings.TrimSpace(s))); v {
	case SignUpOpen, SignUpInvite, SignUpClosed:
		*p = v
		return nil
	}
	return fmt.Errorf("%q is not a sign-up policy: want open, invite or closed", s)
}

// Invitation codes: "inv_" + base62(32 random bytes), zero-padded, like API
// keys; only their SHA-256 is stored.
const (
	// InvitationPrefix starts every invitation code.
	InvitationPrefix    = "inv_"
	invitationPrefixLen = len(InvitationPrefix) + 8
	// DefaultInvitationTTL is how long an invitation lives unless told.
	DefaultInvitationTTL = 7 * 24 * time.Hour
	// MaxInvitationTTL is the longest an invitation may live.
	MaxInvitationTTL = 365 * 24 * time.Hour
	// MaxInvitationUses is the most accounts one invitation may create.
	MaxInvitationUses = 10_000
	// MaxInvitationNote is the longest note, in characters.
	MaxInvitationNote = 200
	// maxCodeBytes bounds what is read of a sent code.
	maxCodeBytes = 128
)

// OrgInvitationPrefix starts an organisation's invitation code, made and
// read as a sign-up invitation's.
const OrgInvitationPrefix = "oinv_"

func newInvitationCode(prefix string) string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b)
	body := new(big.Int).SetBytes(b).Text(62)
	return prefix + strings.Repeat("0", keyBodyLen-len(body)) + body
}

// NewOrgInvitationCode makes an organisation's invitation code and returns
// it with its SHA-256 and the prefix shown in lists.
func NewOrgInvitationCode() (code string, hash []byte, shown string) {
	code = newInvitationCode(OrgInvitationPrefix)
	d, _ := parseInvitationCode(OrgInvitationPrefix, code)
	return code, d[:], code[:len(OrgInvitationPrefix)+8]
}

// ParseOrgInvitationCode checks an organisation's invitation code's shape
// and returns its SHA-256.
func ParseOrgInvitationCode(s string) ([]byte, bool) {
	d, ok := parseInvitationCode(OrgInvitationPrefix, s)
	return d[:], ok
}

// parseInvitationCode checks a code's shape and returns its digest.
func parseInvitationCode(prefix, s string) (digest, bool) {
	s = strings.TrimSpace(s)
	if len(s) != len(prefix)+keyBodyLen || !strings.HasPrefix(s, prefix) {
		return digest{}, false
	}
	for i := len(prefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return digest{}, false
		}
	}
	return sha256.Sum256([]byte(s)), true
}

// SignUpPolicy is the policy this Authenticator applies.
func (a *Authenticator) SignUpPolicy() SignUpPolicy { return a.cfg.SignUp }

// The policy's refusals. Each names the policy, so a client (the web app)
// and a person reading it know why and what would help.
func errSignUpClosed() *connect.Error {
	return apierr.PermissionDenied("sign-up is closed on this server (sign-up policy: closed); ask its operator for an account")
}

func errInvitationRequired() *connect.Error {
	return apierr.PermissionDeniedField("invitation_code", "sign-up on this server is by invitation (sign-up policy: invite): invitation_code is required")
}

func errInvitation(why string) *connect.Error {
	return apierr.PermissionDeniedField("invitation_code", "invitation_code: "+why+" (sign-up policy: invite)")
}

// SignUp creates a free-tier user and starts a session for it, if the
// sign-up policy lets it: closed refuses, invite needs an invitation code
// with a use left, which is taken in the transaction that creates the user.
// A refused sign-up writes nothing. email must be normalised
// (NormalizeEmail) and the inputs validated by the caller. Under open, a
// code is ignored.
func (a *Authenticator) SignUp(ctx context.Context, email, password, displayName, invitationCode string, c Client) (store.User, NewSession, error) {
	var code digest
	switch a.cfg.SignUp {
	case SignUpClosed:
		return store.User{}, NewSession{}, errSignUpClosed()
	case SignUpInvite:
		if strings.TrimSpace(invitationCode) == "" {
			return store.User{}, NewSession{}, errInvitationRequired()
		}
		var ok bool
		if code, ok = parseInvitationCode(InvitationPrefix, invitationCode); !ok {
			return store.User{}, NewSession{}, errInvitation("no such invitation")
		}
	}
	if err := a.throttleSignUp(ctx, email, c); err != nil {
		return store.User{}, NewSession{}, err
	}
	if a.cfg.SignUp == SignUpInvite {
		// Refuse a code that cannot pass before the password work, so bad
		// codes (whose sign-ups give their global take back) cost a read,
		// not a hash. The transaction below checks again.
		if err := a.checkInvitation(ctx, code); err != nil {
			a.refundSignUp(ctx)
			return store.User{}, NewSession{}, err
		}
	}
	hash, err := HashPassword(password, a.cfg.Password)
	if err != nil {
		return store.User{}, NewSession{}, a.internal("hashing a password", err)
	}
	now := a.now().UTC()
	u := store.User{
		ID: newID(), Email: email, DisplayName: displayName, PasswordHash: hash,
		Tier: store.TierFree, CreatedAt: now,
	}
	var detail map[string]string
	if a.cfg.SignUp == SignUpInvite {
		var inv store.Invitation
		inv, err = a.accounts.CreateUserWithInvitation(ctx, u, code[:], now)
		detail = map[string]string{"invitation_id": inv.ID}
	} else {
		err = a.accounts.CreateUser(ctx, u)
	}
	if err != nil {
		// Nothing was made: the global sign-up rate counts accounts, not
		// refusals, so a stream of bad codes does not shut sign-up.
		a.refundSignUp(ctx)
		var unusable *store.InvitationUnusableError
		switch {
		case errors.As(err, &unusable):
			return store.User{}, NewSession{}, errInvitation("this invitation is " + unusable.Reason)
		case errors.Is(err, store.ErrNotFound) && a.cfg.SignUp == SignUpInvite:
			return store.User{}, NewSession{}, errInvitation("no such invitation")
		case errors.Is(err, store.ErrConflict):
			// apierr has no already_exists maker yet; this is its one use.
			return store.User{}, NewSession{}, connect.NewError(connect.CodeAlreadyExists, errors.New("email: already registered"))
		}
		return store.User{}, NewSession{}, a.internal("creating a user", err)
	}
	a.record(ctx, u.ID, store.AuditSignup, c, detail)
	s, err := a.startSession(ctx, u, c)
	return u, s, err
}

// checkInvitation refuses a code with no use left at now.
func (a *Authenticator) checkInvitation(ctx context.Context, code digest) error {
	inv, err := a.accounts.GetInvitationByCode(ctx, code[:])
	if errors.Is(err, store.ErrNotFound) {
		return errInvitation("no such invitation")
	}
	if err != nil {
		return a.internal("reading an invitation", err)
	}
	if why := inv.Unusable(a.now()); why != "" {
		return errInvitation("this invitation is " + why)
	}
	return nil
}

// CreateInvitation issues an invitation on behalf of by (an admin's user
// ID, or "cli"): at most maxUses accounts (0: one), living ttl (0:
// DefaultInvitationTTL). It returns the invitation and its code, which
// exists nowhere else.
func (a *Authenticator) CreateInvitation(ctx context.Context, by, note string, maxUses int64, ttl time.Duration, c Client) (store.Invitation, string, error) {
	switch {
	case maxUses == 0:
		maxUses = 1
	case maxUses < 0 || maxUses > MaxInvitationUses:
		return store.Invitation{}, "", apierr.InvalidArgument("max_uses", "must be 1–"+strconv.Itoa(MaxInvitationUses))
	}
	switch {
	case ttl == 0:
		ttl = DefaultInvitationTTL
	case ttl < 0:
		return store.Invitation{}, "", apierr.InvalidArgument("ttl", "must be positive")
	case ttl > MaxInvitationTTL:
		return store.Invitation{}, "", apierr.InvalidArgument("ttl", "must be at most 365 days (8760h)")
	}
	if !utf8.ValidString(note) {
		return store.Invitation{}, "", apierr.InvalidArgument("note", "is not valid UTF-8")
	}
	if utf8.RuneCountInString(note) > MaxInvitationNote {
		return store.Invitation{}, "", apierr.InvalidArgument("note", "is longer than 200 characters")
	}
	code := newInvitationCode(InvitationPrefix)
	d, _ := parseInvitationCode(InvitationPrefix, code)
	now := a.now().UTC()
	inv := store.Invitation{
		ID: newID(), CodeHash: d[:], Prefix: code[:invitationPrefixLen], Note: note, CreatedBy: by,
		CreatedAt: now, ExpiresAt: now.Add(ttl), MaxUses: maxUses,
	}
	if err := a.accounts.CreateInvitation(ctx, inv); err != nil {
		return store.Invitation{}, "", a.internal("creating an invitation", err)
	}
	a.recordBy(ctx, by, store.AuditInvitationCreated, c, map[string]string{
		"invitation_id": inv.ID, "prefix": inv.Prefix, "max_uses": strconv.FormatInt(maxUses, 10), "note": note,
	})
	return inv, code, nil
}

// ListInvitations lists every invitation, newest first.
func (a *Authenticator) ListInvitations(ctx context.Context, page store.PageRequest) ([]store.Invitation, string, error) {
	list, next, err := a.accounts.ListInvitations(ctx, page)
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, "", apierr.InvalidArgument("page_token", "is not a token this server gave")
	}
	if err != nil {
		return nil, "", a.internal("listing invitations", err)
	}
	return list, next, nil
}

// RevokeInvitation revokes an invitation on behalf of by; the accounts it
// made stay. Revoking twice succeeds.
func (a *Authenticator) RevokeInvitation(ctx context.Context, by, id string, c Client) (store.Invitation, error) {
	inv, err := a.accounts.RevokeInvitation(ctx, "", id, a.now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return store.Invitation{}, apierr.NotFound("invitation")
	}
	if err != nil {
		return store.Invitation{}, a.internal("revoking an invitation", err)
	}
	a.recordBy(ctx, by, store.AuditInvitationRevoked, c, map[string]string{"invitation_id": inv.ID, "prefix": inv.Prefix})
	return inv, nil
}

// recordBy records an operator's action in the audit log under the admin
// who did it; the command line's ("cli") has no user to file it under and is
// logged instead.
func (a *Authenticator) recordBy(ctx context.Context, by, kind string, c Client, detail map[string]string) {
	if by == "" || by == "cli" {
		a.log.Info("auth: "+kind, "by", "cli", "detail", detail)
		return
	}
	a.record(ctx, by, kind, c, detail)
}
