package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// ledger keeps balances in billing_accounts and holds in reservations. Every
// change is a conditional UPDATE inside one write transaction: the condition
// (available >= amount, status = 'held') is evaluated by SQLite on the row it
// changes, never by Go on a value read earlier.
//
// Settle stores the request's usage record in the same transaction, into
// usage_records (this database's Usage) or, when the Usage store is
// elsewhere, into usage_outbox for the relay.
type ledger struct {
	db     *DB
	outbox bool // records go to usage_outbox, not usage_records
}

// recordTable is where Settle writes usage records.
func (l ledger) recordTable() string {
	if l.outbox {
		return "usage_outbox"
	}
	return "usage_records"
}

// insertRecord stores r (its cost and user as settled) in the transaction.
// A RequestID already stored fails with a constraint error unless
// skipExisting.
func (l ledger) insertRecord(ctx context.Context, tx *txn, r *store.UsageRecord, skipExisting bool) error {
	q := `INSERT INTO ` + l.recordTable() + ` (request_id, user_id, api_key_id, channel, model,
		prompt_tokens, completion_tokens, cached_tokens, estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if skipExisting {
		q += ` ON CONFLICT (request_id) DO NOTHING`
	}
	_, err := tx.ExecContext(ctx, q, r.RequestID, r.UserID, r.APIKeyID, r.Channel, r.Model,
		r.PromptTokens, r.CompletionTokens, r.CachedTokens, boolInt(r.Estimated), r.CostNanos, r.FinishReason, ts(r.CreatedAt), r.EndUser, boolInt(r.CacheHit), r.RequestedModel)
	return err
}

func (l ledger) Account(ctx context.Context, userID string) (store.Balance, error) {
	var b store.Balance
	err := l.db.r.QueryRowContext(ctx, `SELECT available_nanos, reserved_nanos FROM billing_accounts WHERE user_id = ?`, userID).
		Scan(&b.AvailableNanos, &b.ReservedNanos)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Balance{}, nil
	}
	return b, err
}

// availableTx reads the available balance inside tx, for error reports only.
func availableTx(ctx context.Context, tx *txn, userID string) (int64, error) {
	var avail int64
	err := tx.QueryRowContext(ctx, `SELECT available_nanos FROM billing_accounts WHERE user_id = ?`, userID).Scan(&avail)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return avail, err
}

func (l ledger) Adjust(ctx context.Context, a store.Adjustment) (int64, error) {
	var avail int64
	err := l.db.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO billing_accounts (user_id, available_nanos, reserved_nanos)
			VALUES (?, 0, 0) ON CONFLICT (user_id) DO NOTHING`, a.UserID); err != nil {
			return err
		}
		// The bound keeps the sum in int64: SQLite would otherwise turn an
		// overflow into a REAL (which the STRICT table then refuses).
		err := tx.QueryRowContext(ctx, `UPDATE billing_accounts SET available_nanos = available_nanos + ?1
			WHERE user_id = ?2 AND available_nanos + ?1 >= 0 AND (?1 <= 0 OR available_nanos <= 9223372036854775807 - ?1)
			RETURNING available_nanos`, a.DeltaNanos, a.UserID).Scan(&avail)
		if errors.Is(err, sql.ErrNoRows) {
			cur, rerr := availableTx(ctx, tx, a.UserID)
			if rerr != nil {
				return rerr
			}
			if a.DeltaNanos > 0 {
				return fmt.Errorf("%w: balance would overflow", store.ErrInvalidArgument)
			}
			return &store.InsufficientFundsError{AvailableNanos: cur, RequiredNanos: -a.DeltaNanos}
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO ledger_adjustments (user_id, delta_nanos, reason, at) VALUES (?, ?, ?, ?)`,
			a.UserID, a.DeltaNanos, a.Reason, ts(a.At))
		return err
	})
	if err != nil {
		return 0, mapErr(err)
	}
	return avail, nil
}

func (l ledger) Reserve(ctx context.Context, r store.Reservation) (store.Balance, error) {
	if r.AmountNanos <= 0 {
		return store.Balance{}, fmt.Errorf("%w: reservation amount %d is not positive", store.ErrInvalidArgument, r.AmountNanos)
	}
	// Committed with the other writes arriving at the same time (group.go).
	var b store.Balance
	err := l.db.group.do(ctx, l.db, func(ctx context.Context, tx *txn) (err error) {
		b, err = reserveTx(ctx, tx, r)
		return err
	})
	if err != nil {
		return store.Balance{}, err
	}
	return b, nil
}

func (l ledger) Settle(ctx context.Context, reservationID string, costNanos int64, now time.Time, record *store.UsageRecord) (store.Settlement, error) {
	if err := store.CheckSettle(reservationID, costNanos, record); err != nil {
		return store.Settlement{}, err
	}
	var rec store.UsageRecord
	if record != nil {
		rec = *record
	}
	if reservationID == "" {
		if record == nil {
			return store.Settlement{}, nil
		}
		// Nothing held, nothing charged: the record alone, once.
		rec.CostNanos = 0
		return store.Settlement{}, l.db.group.do(ctx, l.db, func(ctx context.Context, tx *txn) error { return l.insertRecord(ctx, tx, &rec, true) })
	}
	var s store.Settlement
	// record stores the usage record of a charge just made in tx.
	recordCharge := func(ctx context.Context, tx *txn, userID string) error {
		if record == nil {
			return nil
		}
		rec.UserID, rec.CostNanos = userID, s.ChargedNanos
		return l.insertRecord(ctx, tx, &rec, false)
	}
	// Committed with the other writes arriving at the same time (group.go).
	err := l.db.group.do(ctx, l.db, func(ctx context.Context, tx *txn) error {
		// The normal case: close a held reservation.
		var userID string
		var amount int64
		err := tx.QueryRowContext(ctx, `UPDATE reservations
			SET status = 'settled', charged_nanos = min(?1, amount_nanos), refunded_nanos = amount_nanos - min(?1, amount_nanos), closed_at = ?2
			WHERE id = ?3 AND status = 'held'
			RETURNING user_id, amount_nanos, charged_nanos, refunded_nanos`, costNanos, ts(now), reservationID).
			Scan(&userID, &amount, &s.ChargedNanos, &s.RefundedNanos)
		if err == nil {
			res, err := tx.ExecContext(ctx, `UPDATE billing_accounts
				SET reserved_nanos = reserved_nanos - ?1, available_nanos = available_nanos + ?2
				WHERE user_id = ?3`, amount, s.RefundedNanos, userID)
			if err != nil {
				return err
			}
			if err := affectedOne(res, "billing account"); err != nil {
				return err
			}
			if err := settleBudgets(ctx, tx, reservationID, s.ChargedNanos, true); err != nil {
				return err
			}
			if store.Forgettable(costNanos, record) {
				// Nothing ran: forgotten, so that a later attempt at the
				// same work under the same id (a batch line tried again)
				// holds anew instead of being settled as this one was.
				_, err := tx.ExecContext(ctx, `DELETE FROM reservations WHERE id = ?`, reservationID)
				return err
			}
			return recordCharge(ctx, tx, userID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}

		// A released reservation: charge what the balance allows, once.
		err = tx.QueryRowContext(ctx, `UPDATE reservations
			SET status = 'settled', late = 1, refunded_nanos = 0, closed_at = ?2,
			    charged_nanos = min(?1, amount_nanos, (SELECT available_nanos FROM billing_accounts b WHERE b.user_id = reservations.user_id))
			WHERE id = ?3 AND status = 'released'
			RETURNING user_id, charged_nanos`, costNanos, ts(now), reservationID).Scan(&userID, &s.ChargedNanos)
		if err == nil {
			s.Late = true
			res, err := tx.ExecContext(ctx, `UPDATE billing_accounts SET available_nanos = available_nanos - ?1
				WHERE user_id = ?2 AND available_nanos >= ?1`, s.ChargedNanos, userID)
			if err != nil {
				return err
			}
			if err := affectedOne(res, "billing account"); err != nil {
				return err
			}
			if err := settleBudgets(ctx, tx, reservationID, s.ChargedNanos, false); err != nil {
				return err
			}
			return recordCharge(ctx, tx, userID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}

		// Already settled: report the first settlement.
		err = tx.QueryRowContext(ctx, `SELECT charged_nanos, refunded_nanos, late FROM reservations WHERE id = ? AND status = 'settled'`,
			reservationID).Scan(&s.ChargedNanos, &s.RefundedNanos, &s.Late)
		if errors.Is(err, sql.ErrNoRows) && store.Forgettable(costNanos, record) {
			return nil // released and forgotten already (a retried call)
		}
		return notFound(err, "reservation")
	})
	if err != nil {
		return store.Settlement{}, err
	}
	return s, nil
}

func (l ledger) ReleaseExpired(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := l.db.write(ctx, func(tx *txn) error {
		// The budgets the released holds were taken against hold them no
		// more; a late settle still counts its charge as spent.
		if _, err := tx.ExecContext(ctx, `UPDATE budgets SET reserved_nanos = budgets.reserved_nanos - x.total
			FROM (SELECT rb.budget_id, rb.window_start, sum(rb.amount_nanos) AS total FROM reservation_budgets rb JOIN reservations r ON r.id = rb.reservation_id
			      WHERE r.status = 'held' AND r.expires_at <= ?1 GROUP BY rb.budget_id, rb.window_start) AS x
			WHERE budgets.id = x.budget_id AND budgets.window_start = x.window_start`, ts(now)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE billing_accounts AS b
			SET available_nanos = b.available_nanos + x.total, reserved_nanos = b.reserved_nanos - x.total
			FROM (SELECT user_id, sum(amount_nanos) AS total FROM reservations
			      WHERE status = 'held' AND expires_at <= ?1 GROUP BY user_id) AS x
			WHERE b.user_id = x.user_id`, ts(now)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE reservations SET status = 'released', closed_at = ?1
			WHERE status = 'held' AND expires_at <= ?1`, ts(now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, mapErr(err)
}

// reserveTx moves r.AmountNanos from available to reserved and records the
// hold, or reports the shortfall.
func reserveTx(ctx context.Context, tx *txn, r store.Reservation) (store.Balance, error) {
	var b store.Balance
	err := tx.QueryRowContext(ctx, `UPDATE billing_accounts
			SET available_nanos = available_nanos - ?1, reserved_nanos = reserved_nanos + ?1
			WHERE user_id = ?2 AND available_nanos >= ?1
			RETURNING available_nanos, reserved_nanos`, r.AmountNanos, r.UserID).Scan(&b.AvailableNanos, &b.ReservedNanos)
	if errors.Is(err, sql.ErrNoRows) {
		// An ID taken is a conflict whatever the balance: a retry of work
		// whose hold exists finds it (billing.ReserveAs).
		var taken bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM reservations WHERE id = ?)`, r.ID).Scan(&taken); err != nil {
			return store.Balance{}, err
		}
		if taken {
			return store.Balance{}, fmt.Errorf("%w: reservation %s exists", store.ErrConflict, r.ID)
		}
		cur, rerr := availableTx(ctx, tx, r.UserID)
		if rerr != nil {
			return store.Balance{}, rerr
		}
		return store.Balance{}, &store.InsufficientFundsError{AvailableNanos: cur, RequiredNanos: r.AmountNanos}
	}
	if err != nil {
		return store.Balance{}, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO reservations (id, user_id, amount_nanos, status, created_at, expires_at)
		VALUES (?, ?, ?, 'held', ?, ?)`, r.ID, r.UserID, r.AmountNanos, ts(r.CreatedAt), ts(r.ExpiresAt))
	if err != nil {
		return store.Balance{}, err
	}
	return b, holdBudgets(ctx, tx, r)
}

// holdBudgets takes r's hold against every budget of its scopes, in the
// window holding r.CreatedAt (rolling an ended window on the way), or fails
// with *BudgetExceededError; the caller's transaction then rolls back the
// balance's part too.
func holdBudgets(ctx context.Context, tx *txn, r store.Reservation) error {
	sc := r.Budgets
	if sc.IsZero() {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+budgetCols+` FROM budgets b JOIN organizations o ON o.id = b.org_id
		WHERE b.org_id = ?1 AND ((b.scope = 'organization' AND b.scope_id = ?1) OR (b.scope = 'team' AND b.scope_id = ?2)
			OR (b.scope = 'key' AND b.scope_id = ?3) OR (b.scope = 'member' AND b.scope_id = ?4))
		ORDER BY b.id`, sc.OrgID, sc.TeamID, sc.KeyID, sc.MemberID)
	if err != nil {
		return err
	}
	budgets, err := collect(rows, func(r2 *sql.Rows) (store.Budget, error) { return scanBudget(r2, r.CreatedAt) })
	if err != nil {
		return err
	}
	for _, b := range budgets {
		if b.SpentNanos+b.ReservedNanos+r.AmountNanos > b.LimitNanos {
			return &store.BudgetExceededError{Budget: b, RequiredNanos: r.AmountNanos}
		}
	}
	for _, b := range budgets {
		if _, err := tx.ExecContext(ctx, `UPDATE budgets SET window_start = ?, spent_nanos = ?, reserved_nanos = ? WHERE id = ?`,
			ts(b.WindowStart), b.SpentNanos, b.ReservedNanos+r.AmountNanos, b.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reservation_budgets (reservation_id, budget_id, amount_nanos, window_start) VALUES (?, ?, ?, ?)`,
			r.ID, b.ID, r.AmountNanos, ts(b.WindowStart)); err != nil {
			return err
		}
	}
	return nil
}

// settleBudgets closes a reservation's holds on its budgets: in the window
// each was taken in, charged counts as spent and, unless the sweeper
// already released it (held false), the hold leaves reserved; a window
// that has ended since counts nothing (a charge is never counted in a
// later period; its holds were dropped when it rolled).
func settleBudgets(ctx context.Context, tx *txn, reservationID string, charged int64, held bool) error {
	release := "rb.amount_nanos"
	if !held {
		release = "0"
	}
	res, err := tx.ExecContext(ctx, `UPDATE budgets SET reserved_nanos = budgets.reserved_nanos - CASE WHEN budgets.window_start = rb.window_start THEN `+release+` ELSE 0 END,
			spent_nanos = budgets.spent_nanos + CASE WHEN budgets.window_start = rb.window_start THEN ?1 ELSE 0 END
		FROM reservation_budgets rb WHERE rb.reservation_id = ?2 AND budgets.id = rb.budget_id`, charged, reservationID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM reservation_budgets WHERE reservation_id = ?`, reservationID)
	return err
}
