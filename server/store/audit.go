package store

import (
	"context"
	"time"
)

// Audit event kinds.
const (
	// AuditSignup records an account creation.
	AuditSignup = "signup"
	// AuditLoginSuccess records a successful login.
	AuditLoginSuccess = "login_success"
	// AuditLoginFailure records a failed login.
	AuditLoginFailure = "login_failure"
	// AuditLogout records a logout.
	AuditLogout = "logout"
	// AuditAPIKeyCreated records a new API key.
	AuditAPIKeyCreated = "api_key_created"
	// AuditAPIKeyRevoked records a revoked API key.
	AuditAPIKeyRevoked = "api_key_revoked"
	// AuditTierChanged records a tier change.
	AuditTierChanged = "tier_changed"
	// AuditAdminChanged records an admin flag granted or taken away.
	AuditAdminChanged = "admin_changed"
	// AuditBalanceAdjusted records an operator's top-up or correction of a
	// balance (Detail: delta_nanos, reason, by, balance_nanos).
	AuditBalanceAdjusted = "balance_adjusted"
	// AuditInvitationCreated records an admin issuing a sign-up invitation
	// (filed under the admin; Detail: invitation_id, prefix, max_uses, note).
	AuditInvitationCreated = "invitation_created"
	// AuditInvitationRevoked records an admin revoking one (Detail:
	// invitation_id, prefix).
	AuditInvitationRevoked = "invitation_revoked"
)

// AuditEvent is one security-relevant event. It never holds a secret.
type AuditEvent struct {
	// ID is the caller-made UUIDv7.
	ID string
	// UserID is the user concerned; empty when unknown (a login failure for
	// an unknown email).
	UserID string
	// Kind is one of the Audit* constants.
	Kind string
	// IP is the client address.
	IP string
	// UserAgent is the client's User-Agent.
	UserAgent string
	// Detail is a JSON object with kind-specific fields; may be empty.
	Detail string
	// At is when it happened.
	At time.Time
}

// Audit is the append-only audit log. Events outlive the users they mention.
type Audit interface {
	// Append stores e. Appending an existing ID is a no-op.
	Append(ctx context.Context, e AuditEvent) error
	// List returns a user's events, newest first.
	List(ctx context.Context, userID string, page PageRequest) ([]AuditEvent, string, error)
}
