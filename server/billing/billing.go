// Package billing is the API channel's usage-based billing over the Ledger:
// hold the most a request can cost before it is scheduled, settle the actual
// cost after, and sweep holds that a crashed gateway left behind.
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// Billing holds and settles money for requests.
type Billing struct {
	ledger  store.Ledger
	now     func() time.Time
	holdTTL time.Duration
	logger  *slog.Logger

	// OnRecord, if set, is called after each settle that stored a usage
	// record (the usage relay ships the outbox at once).
	OnRecord func()
	// Holds, if set, counts the holds this process made and has not yet
	// settled (summed over the gateways: the money held by requests in
	// flight; a crashed gateway's holds leave with it, for the sweeper).
	Holds prometheus.Gauge
}

// New returns billing over ledger. holdTTL is how long a hold lives unsettled
// before the sweeper releases it: longer than the longest generation.
func New(ledger store.Ledger, now func() time.Time, holdTTL time.Duration, logger *slog.Logger) *Billing {
	return &Billing{ledger: ledger, now: now, holdTTL: holdTTL, logger: logger}
}

// Hold is money reserved for one request.
type Hold struct {
	// ID is the reservation's id.
	ID string
	// AmountNanos is the amount held.
	AmountNanos int64
}

// Reserve holds amount from the user's balance, atomically: if the balance
// does not cover it, nothing is held and the error is resource_exhausted
// with the balance and the amount required.
func (b *Billing) Reserve(ctx context.Context, userID string, amountNanos int64) (Hold, error) {
	return b.ReserveAs(ctx, "", userID, amountNanos)
}

// ReserveAs is Reserve under a hold id of the caller's (a new one when id
// is ""). A hold of that id taken already — by an earlier attempt at the
// same work, whose gateway died — is returned as it is: settling it then
// charges the work once, however often it was attempted (Settle is
// idempotent).
func (b *Billing) ReserveAs(ctx context.Context, id, userID string, amountNanos int64) (Hold, error) {
	return b.ReserveScoped(ctx, id, userID, store.BudgetScopes{}, amountNanos)
}

// ReserveScoped is ReserveAs for a request of an organisation's key: the
// hold is also taken against every budget of scopes, in the same
// transaction, or refused (resource_exhausted naming the budget and when
// it resets).
func (b *Billing) ReserveScoped(ctx context.Context, id, userID string, scopes store.BudgetScopes, amountNanos int64) (Hold, error) {
	if amountNanos <= 0 {
		return Hold{}, nil // a free model: nothing to hold
	}
	now := b.now()
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	h := Hold{ID: id, AmountNanos: amountNanos}
	_, err := b.ledger.Reserve(ctx, store.Reservation{
		ID: h.ID, UserID: userID, AmountNanos: amountNanos, CreatedAt: now, ExpiresAt: now.Add(b.holdTTL), Budgets: scopes,
	})
	var over *store.BudgetExceededError
	if errors.As(err, &over) {
		bu := over.Budget
		return Hold{}, apierr.BudgetExceeded(string(bu.Scope), bu.ScopeID, bu.LimitNanos, bu.SpentNanos+bu.ReservedNanos, over.RequiredNanos, bu.ResetsAt, now)
	}
	if errors.Is(err, store.ErrConflict) {
		b.logger.WarnContext(ctx, "a hold taken by an earlier attempt is settled by this one", "reservation", id)
		if b.Holds != nil {
			b.Holds.Inc()
		}
		return h, nil
	}
	var short *store.InsufficientFundsError
	if errors.As(err, &short) {
		return Hold{}, apierr.InsufficientBalance(short.AvailableNanos, short.RequiredNanos)
	}
	if err != nil && ctx.Err() != nil {
		// The request was cancelled (its client left, or a background
		// response was cancelled) while the hold was being taken: that is
		// the error, not the store's health.
		return Hold{}, connect.NewError(connect.CodeCanceled, context.Cause(ctx))
	}
	if err != nil {
		b.logger.ErrorContext(ctx, "holding money", "err", err)
		return Hold{}, apierr.Unavailable("billing is unavailable", 2*time.Second)
	}
	if b.Holds != nil {
		b.Holds.Inc()
	}
	return h, nil
}

// Settle charges cost against the hold (at most the amount held), returns
// the rest to the balance and stores the request's usage record, all in one
// write (Ledger.Settle): no charge is ever without its record. The record is
// stored with the cost charged. A zero Hold (nothing held: a free model, a
// web-channel generation) stores the record alone, at no cost; a nil record
// fits a request that never ran, whose hold is released (cost 0).
//
// It runs to the end even when ctx is cancelled — a client that went away
// is still charged for what it used — retrying a failing store for up to
// ten seconds, and is idempotent, so a retry never charges or records
// twice. If it fails, nothing was charged or recorded and the sweeper
// releases the hold.
func (b *Billing) Settle(ctx context.Context, h Hold, costNanos int64, record *store.UsageRecord) (store.Settlement, error) {
	if h.ID != "" && b.Holds != nil {
		defer b.Holds.Dec() // settled, or left to the sweeper: no longer this request's
	}
	if h.ID == "" {
		if record == nil {
			return store.Settlement{}, nil // nothing was held or used
		}
		costNanos = 0 // nothing can be charged without a hold
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var s store.Settlement
	var err error
	for attempt := 0; ; attempt++ {
		if s, err = b.ledger.Settle(ctx, h.ID, costNanos, b.now(), record); err == nil {
			if s.Late {
				b.logger.WarnContext(ctx, "settled after the hold was swept", "reservation", h.ID, "charged_nanos", s.ChargedNanos)
			}
			if record != nil && b.OnRecord != nil {
				b.OnRecord()
			}
			return s, nil
		}
		if permanent(err) || !sleep(ctx, min(time.Duration(50<<min(attempt, 4))*time.Millisecond, time.Second)) {
			break
		}
	}
	b.logger.ErrorContext(ctx, "settle failed: nothing charged or recorded; the sweeper will release the hold",
		"reservation", h.ID, "cost_nanos", costNanos, "err", err)
	return s, err
}

// sleep waits d, or until ctx is done (it then returns false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// permanent reports errors a retry cannot cure.
func permanent(err error) bool {
	return errors.Is(err, store.ErrInvalidArgument) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound)
}

// Adjust changes a user's balance by delta (a top-up, or a deduction that
// may not take it below zero) and returns the new available balance.
func (b *Billing) Adjust(ctx context.Context, userID string, deltaNanos int64, reason string) (int64, error) {
	balance, err := b.ledger.Adjust(ctx, store.Adjustment{UserID: userID, DeltaNanos: deltaNanos, Reason: reason, At: b.now()})
	var short *store.InsufficientFundsError
	if errors.As(err, &short) {
		return 0, apierr.FailedPrecondition(fmt.Sprintf("the balance is %s; deducting %s would take it below zero",
			apierr.USD(short.AvailableNanos), apierr.USD(-deltaNanos)))
	}
	return balance, err
}

// Balance returns the user's available and reserved money.
func (b *Billing) Balance(ctx context.Context, userID string) (store.Balance, error) {
	return b.ledger.Account(ctx, userID)
}

// Sweep releases expired holds every interval until ctx is done.
func (b *Billing) Sweep(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := b.ledger.ReleaseExpired(ctx, b.now()); err != nil {
			if ctx.Err() == nil {
				b.logger.Error("sweeping expired holds", "err", err)
			}
		} else if n > 0 {
			b.logger.Info("released expired holds", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
