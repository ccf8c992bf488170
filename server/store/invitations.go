package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Invitation is an admin-issued sign-up code, for a server whose sign-up
// policy is invite, or (OrgID set) an organisation's invitation link, which
// makes a signed-in user a member. Only the SHA-256 of the code is stored,
// with a short display prefix, as for API keys.
type Invitation struct {
	// ID is the caller-made UUIDv7.
	ID string
	// CodeHash is SHA-256 of the code; it is unique.
	CodeHash []byte
	// Prefix is the first characters of the code, shown in lists.
	Prefix string
	// Note is the issuer's label (whom it is for); may be empty.
	Note string
	// CreatedBy is who issued it: an admin's user ID, or "cli".
	CreatedBy string
	// CreatedAt is when it was issued.
	CreatedAt time.Time
	// ExpiresAt is when it stops working.
	ExpiresAt time.Time
	// MaxUses is how many accounts it may create (at least 1).
	MaxUses int64
	// Uses is how many it has created.
	Uses int64
	// LastUsedAt is when it last created an account; zero if never.
	LastUsedAt time.Time
	// RevokedAt is when it was revoked; zero if it was not.
	RevokedAt time.Time

	// OrgID is the organisation an organisation's invitation joins; empty
	// for a sign-up invitation. The rest are an organisation's only.
	OrgID string
	// Role is the role it gives.
	Role OrgRole
	// TeamID is the team it adds to (empty: none), with TeamRole.
	TeamID   string
	TeamRole TeamRole
	// Email, when set, is the only address (as stored, lower case) that
	// may use it.
	Email string
}

// Unusable says why inv cannot create an account at now ("" when it can):
// revoked, expired or used up, checked in that order.
func (inv Invitation) Unusable(now time.Time) string {
	switch {
	case !inv.RevokedAt.IsZero():
		return InvitationRevoked
	case !now.Before(inv.ExpiresAt):
		return InvitationExpired
	case inv.Uses >= inv.MaxUses:
		return InvitationUsedUp
	}
	return ""
}

// The reasons of an InvitationUnusableError.
const (
	InvitationRevoked = "revoked"
	InvitationExpired = "expired"
	InvitationUsedUp  = "used up"
)

// ErrInvitationUnusable reports an invitation that exists but can create no
// more accounts. The concrete error is an *InvitationUnusableError.
var ErrInvitationUnusable = errors.New("store: invitation unusable")

// InvitationUnusableError is ErrInvitationUnusable with its reason.
type InvitationUnusableError struct {
	// Reason is InvitationRevoked, InvitationExpired or InvitationUsedUp.
	Reason string
}

// Error implements error.
func (e *InvitationUnusableError) Error() string {
	return fmt.Sprintf("store: invitation %s", e.Reason)
}

// Is makes errors.Is(err, ErrInvitationUnusable) true.
func (e *InvitationUnusableError) Is(target error) bool { return target == ErrInvitationUnusable }

// Invitations stores sign-up invitations. It is part of Accounts, since an
// invitation is consumed in the transaction that creates its user.
type Invitations interface {
	// CreateInvitation stores inv (Uses, LastUsedAt and RevokedAt are
	// ignored). It returns ErrConflict if the ID or code hash exists, and
	// ErrInvalidArgument for an empty code hash or MaxUses below 1.
	CreateInvitation(ctx context.Context, inv Invitation) error
	// ListInvitations lists every sign-up invitation, revoked and used
	// ones included, newest first.
	ListInvitations(ctx context.Context, page PageRequest) ([]Invitation, string, error)
	// ListOrgInvitations lists an organisation's invitations, newest
	// first, at most the 500 newest.
	ListOrgInvitations(ctx context.Context, orgID string) ([]Invitation, error)
	// GetInvitationByCode returns the invitation whose code hash is
	// codeHash, or ErrNotFound. (A sign-up checks it before the password
	// work; CreateUserWithInvitation checks again as it takes the use.)
	GetInvitationByCode(ctx context.Context, codeHash []byte) (Invitation, error)
	// RevokeInvitation revokes an invitation of orgID (empty: a sign-up
	// invitation) at the given time and returns it, or ErrNotFound.
	// Revoking a revoked invitation succeeds and keeps the first RevokedAt.
	RevokeInvitation(ctx context.Context, orgID, id string, at time.Time) (Invitation, error)
	// CreateUserWithInvitation creates u and takes one use of the
	// invitation whose code hash is codeHash, in one transaction: both
	// happen or neither does. It returns the invitation as used, or
	// ErrNotFound (no such code), an *InvitationUnusableError (revoked,
	// expired at now, or used up) or ErrConflict (u's ID or email taken),
	// leaving nothing written. Concurrent calls never take more than
	// MaxUses uses.
	CreateUserWithInvitation(ctx context.Context, u User, codeHash []byte, now time.Time) (Invitation, error)
	// AcceptOrgInvitation takes one use of the organisation's invitation
	// whose code hash is codeHash and makes userID a member with its role
	// (and a member of its team, if the team still exists), in one
	// transaction. It returns the invitation as used, or ErrNotFound, an
	// *InvitationUnusableError or ErrConflict (already a member), leaving
	// nothing written. Concurrent calls never take more than MaxUses.
	AcceptOrgInvitation(ctx context.Context, codeHash []byte, userID string, now time.Time) (Invitation, error)
}
