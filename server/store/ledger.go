package store

import (
	"context"
	"fmt"
	"time"
)

// Balance is a user's money, in nano-USD.
type Balance struct {
	// AvailableNanos can be reserved or spent; never negative.
	AvailableNanos int64
	// ReservedNanos is held by unsettled reservations.
	ReservedNanos int64
}

// Adjustment is a manual change to a balance: a top-up, a refund or a
// correction.
type Adjustment struct {
	// UserID is the account.
	UserID string
	// DeltaNanos is added to the available balance; negative to deduct.
	DeltaNanos int64
	// Reason is recorded with the adjustment.
	Reason string
	// At is when it happened.
	At time.Time
}

// Reservation holds money for one request until it is settled or expires.
type Reservation struct {
	// ID is the caller-made reservation ID (the request ID works).
	ID string
	// UserID is the account charged.
	UserID string
	// AmountNanos is the most the request may cost; must be positive.
	AmountNanos int64
	// CreatedAt is when it was made.
	CreatedAt time.Time
	// ExpiresAt is when ReleaseExpired may return the money to the user, if
	// the request never settled (for example, its gateway died).
	ExpiresAt time.Time
	// Budgets names the organisation scopes the request falls under: the
	// hold is taken against every budget set on them, in the same
	// transaction as the balance, or not at all (*BudgetExceededError).
	Budgets BudgetScopes
}

// Settlement is the outcome of settling a reservation.
type Settlement struct {
	// ChargedNanos is what the user paid.
	ChargedNanos int64
	// RefundedNanos is what was returned to the available balance.
	RefundedNanos int64
	// Late is true when the sweeper had already released the reservation:
	// the charge was then taken from the available balance, at most what it
	// holds, and nothing was refunded.
	Late bool
}

// Ledger keeps balances and reservations. The available balance never goes
// below zero, whatever the concurrency, and money is conserved: available +
// reserved + charged changes only through Adjust.
type Ledger interface {
	// Account returns a user's balance; a user without an account has a
	// zero balance (not ErrNotFound).
	Account(ctx context.Context, userID string) (Balance, error)
	// Adjust adds a.DeltaNanos to the available balance, creating the account
	// if needed, and returns the new available balance. A deduction past zero
	// fails with *InsufficientFundsError and changes nothing. The ledger
	// does not know users (it may live on a cluster of its own):
	// callers resolve the user first; a backend that holds the users too may
	// refuse an unknown one with ErrNotFound.
	Adjust(ctx context.Context, a Adjustment) (int64, error)
	// Reserve moves r.AmountNanos from available to reserved, atomically and
	// only if available covers it; otherwise it fails with
	// *InsufficientFundsError. It returns the balance afterwards, or
	// ErrConflict if the reservation ID exists (whatever the balance).
	Reserve(ctx context.Context, r Reservation) (Balance, error)
	// Settle charges min(costNanos, amount) and returns the rest of the
	// reservation to available, and stores the request's usage record in
	// the same transaction: the charge and its record commit together or
	// not at all, so no charge is ever without its record, whatever crashes
	// (docs/architecture.md, Data). The record is stored with CostNanos set to what was
	// charged and UserID to the reservation's user, into the Usage store's
	// table when it lives in the ledger's database, else into the
	// UsageOutbox.
	//
	// Settle is idempotent: a second call returns the first call's
	// Settlement and changes nothing (its record is not stored again).
	// Settling a reservation the sweeper released charges
	// min(costNanos, amount, available) from the available balance
	// (Settlement.Late). Unknown IDs give ErrNotFound.
	//
	// reservationID "" settles a request that held nothing (a free model, a
	// web-channel generation): nothing is charged and the record is stored
	// alone, skipped if its RequestID is already stored. record may be nil
	// only when nothing is charged (costNanos 0: a request that never ran
	// releases its hold); a positive cost without a record is
	// ErrInvalidArgument. With a reservation, a record whose RequestID is
	// already stored fails with ErrConflict and charges nothing.
	Settle(ctx context.Context, reservationID string, costNanos int64, now time.Time, record *UsageRecord) (Settlement, error)
	// ReleaseExpired returns every unsettled reservation expired at now
	// (ExpiresAt <= now) to its available balance in full, and returns how
	// many it released.
	ReleaseExpired(ctx context.Context, now time.Time) (int64, error)
}

// CheckSettle refuses the Settle arguments every Ledger refuses before
// touching its data: a negative cost, a charge without its usage record, a
// record without a request ID.
func CheckSettle(reservationID string, costNanos int64, record *UsageRecord) error {
	switch {
	case costNanos < 0:
		return fmt.Errorf("%w: negative cost %d", ErrInvalidArgument, costNanos)
	case record == nil && costNanos > 0 && reservationID != "":
		return fmt.Errorf("%w: a charge of %d without its usage record", ErrInvalidArgument, costNanos)
	case record != nil && record.RequestID == "":
		return fmt.Errorf("%w: a usage record without a request ID", ErrInvalidArgument)
	}
	return nil
}

// Forgettable reports whether a settle of costNanos with record releases a
// hold whose work never ran (nothing charged, nothing recorded): the
// ledgers then forget the reservation, so that a later attempt at the same
// work under the same id holds anew (a batch line tried again after "no
// idle capacity" would otherwise be settled as the first attempt was:
// served free and unrecorded).
func Forgettable(costNanos int64, record *UsageRecord) bool { return costNanos == 0 && record == nil }
