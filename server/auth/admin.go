package auth

import (
	"context"
	"errors"
	"strconv"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// SetUserAdmin grants or takes away a user's admin flag on behalf of the
// admin p, audited, and drops the user's cached credentials so the change
// applies to the next request. An admin cannot take away their own flag
// (there would be no one left to give it back from the browser).
func (a *Authenticator) SetUserAdmin(ctx context.Context, p Principal, userID string, admin bool, c Client) (store.User, error) {
	if userID == p.UserID && !admin {
		return store.User{}, apierr.FailedPrecondition("an admin cannot take away their own admin flag")
	}
	before, err := a.UserByID(ctx, userID)
	if err != nil {
		return store.User{}, err
	}
	u, err := a.accounts.SetUserAdmin(ctx, userID, admin)
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, apierr.NotFound("user")
	}
	if err != nil {
		return store.User{}, a.internal("setting the admin flag", err)
	}
	a.broadcast(ctx, Eviction{UserID: userID})
	a.record(ctx, userID, store.AuditAdminChanged, c, map[string]string{
		"from": strconv.FormatBool(before.Admin), "to": strconv.FormatBool(admin), "by": p.UserID,
	})
	return u, nil
}

// RecordBalanceAdjusted writes an operator's change of a user's balance to
// the audit log: by whom (an admin's user ID, or "cli"), how much, why, and
// the balance after. The RPC and the command line both record through it.
func (a *Authenticator) RecordBalanceAdjusted(ctx context.Context, userID, by string, deltaNanos, balanceNanos int64, reason string, c Client) {
	a.record(ctx, userID, store.AuditBalanceAdjusted, c, map[string]string{
		"delta_nanos": strconv.FormatInt(deltaNanos, 10), "reason": reason, "by": by,
		"balance_nanos": strconv.FormatInt(balanceNanos, 10),
	})
}

// SearchUsers lists the users whose email starts with prefix, by email.
func (a *Authenticator) SearchUsers(ctx context.Context, prefix string, page store.PageRequest) ([]store.User, string, error) {
	return a.accounts.SearchUsers(ctx, prefix, page)
}
