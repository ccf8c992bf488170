package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

// ledger keeps balances in billing_accounts and holds in reservations. The
// hot path (Reserve, Settle) is one statement each: a conditional UPDATE …
// RETURNING whose condition (available >= amount, status = 'held') PostgreSQL
// evaluates on the row it has locked, and a data-modifying CTE for the other
// table, so the pair is atomic without a transaction round trip, a
// read-modify-write or a SERIALIZABLE retry loop. Gateways sharing the
// database therefore cannot overshoot a balance.
type ledger struct{ db *DB }

func (l ledger) Account(ctx context.Context, userID string) (store.Balance, error) {
	var b store.Balance
	err := l.db.pool.QueryRow(ctx, `SELECT available_nanos, reserved_nanos FROM billing_accounts WHERE user_id = $1`, userID).
		Scan(&b.AvailableNanos, &b.ReservedNanos)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Balance{}, nil
	}
	return b, err
}

func (l ledger) Adjust(ctx context.Context, a store.Adjustment) (int64, error) {
	var avail int64
	err := pgx.BeginFunc(ctx, l.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO billing_accounts (user_id, available_nanos, reserved_nanos)
			VALUES ($1, 0, 0) ON CONFLICT (user_id) DO NOTHING`, a.UserID); err != nil {
			return err
		}
		// The CASE keeps the arithmetic in range: PostgreSQL would raise an
		// overflow error rather than store a wrong sum, but a clear refusal
		// is better.
		err := tx.QueryRow(ctx, `WITH b AS (
				UPDATE billing_accounts SET available_nanos = available_nanos + $1
				WHERE user_id = $2 AND CASE WHEN $1::bigint < 0 THEN available_nanos + $1 >= 0
				                            ELSE available_nanos <= 9223372036854775807 - $1 END
				RETURNING available_nanos),
			adj AS (INSERT INTO ledger_adjustments (user_id, delta_nanos, reason, at)
				SELECT $2, $1, $3, $4 FROM b)
			SELECT available_nanos FROM b`, a.DeltaNanos, a.UserID, a.Reason, ts(a.At)).Scan(&avail)
		if errors.Is(err, pgx.ErrNoRows) {
			if a.DeltaNanos > 0 {
				return fmt.Errorf("%w: balance would overflow", store.ErrInvalidArgument)
			}
			var cur int64
			if err := tx.QueryRow(ctx, `SELECT available_nanos FROM billing_accounts WHERE user_id = $1`, a.UserID).Scan(&cur); err != nil {
				return err
			}
			return &store.InsufficientFundsError{AvailableNanos: cur, RequiredNanos: -a.DeltaNanos}
		}
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
	var b store.Balance
	// One statement: the balance moves and the reservation row appears
	// together, or (insufficient funds, duplicate ID) neither happens.
	err := l.db.pool.QueryRow(ctx, `WITH b AS (
			UPDATE billing_accounts
			SET available_nanos = available_nanos - $1, reserved_nanos = reserved_nanos + $1
			WHERE user_id = $2 AND available_nanos >= $1
			RETURNING user_id, available_nanos, reserved_nanos),
		r AS (INSERT INTO reservations (id, user_id, amount_nanos, status, created_at, expires_at)
			SELECT $3, user_id, $1, 'held', $4, $5 FROM b)
		SELECT available_nanos, reserved_nanos FROM b`,
		r.AmountNanos, r.UserID, r.ID, ts(r.CreatedAt), ts(r.ExpiresAt)).Scan(&b.AvailableNanos, &b.ReservedNanos)
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := l.Account(ctx, r.UserID)
		if err != nil {
			return store.Balance{}, err
		}
		return store.Balance{}, &store.InsufficientFundsError{AvailableNanos: cur.AvailableNanos, RequiredNanos: r.AmountNanos}
	}
	if err != nil {
		return store.Balance{}, mapErr(err)
	}
	return b, nil
}

func (l ledger) Settle(ctx context.Context, reservationID string, costNanos int64, now time.Time) (store.Settlement, error) {
	if costNanos < 0 {
		return store.Settlement{}, fmt.Errorf("%w: negative cost %d", store.ErrInvalidArgument, costNanos)
	}
	var s store.Settlement
	// The normal case, one statement: close a held reservation and return
	// the unspent part to the balance.
	err := l.db.pool.QueryRow(ctx, `WITH r AS (
			UPDATE reservations
			SET status = 'settled', charged_nanos = least($1, amount_nanos), refunded_nanos = amount_nanos - least($1, amount_nanos), closed_at = $2
			WHERE id = $3 AND status = 'held'
			RETURNING user_id, amount_nanos, charged_nanos, refunded_nanos),
		b AS (UPDATE billing_accounts ba
			SET reserved_nanos = ba.reserved_nanos - r.amount_nanos, available_nanos = ba.available_nanos + r.refunded_nanos
			FROM r WHERE ba.user_id = r.user_id)
		SELECT charged_nanos, refunded_nanos FROM r`, costNanos, ts(now), reservationID).Scan(&s.ChargedNanos, &s.RefundedNanos)
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.Settlement{}, mapErr(err)
	}
	// Rare paths: a reservation the sweeper released (charge what the
	// balance allows, once), or one already settled (report it).
	err = pgx.BeginFunc(ctx, l.db.pool, func(tx pgx.Tx) error {
		var userID, status string
		err := tx.QueryRow(ctx, `SELECT user_id, status, charged_nanos, refunded_nanos, late FROM reservations WHERE id = $1 FOR UPDATE`,
			reservationID).Scan(&userID, &status, &s.ChargedNanos, &s.RefundedNanos, &s.Late)
		if err != nil {
			return notFound(err, "reservation")
		}
		switch status {
		case "settled":
			return nil
		case "held":
			return errRetry
		}
		var avail int64
		if err := tx.QueryRow(ctx, `SELECT available_nanos FROM billing_accounts WHERE user_id = $1 FOR UPDATE`, userID).Scan(&avail); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `UPDATE reservations
			SET status = 'settled', late = true, refunded_nanos = 0, closed_at = $2, charged_nanos = least($1, amount_nanos, $4::bigint)
			WHERE id = $3 RETURNING charged_nanos`, costNanos, ts(now), reservationID, avail).Scan(&s.ChargedNanos)
		if err != nil {
			return err
		}
		s.RefundedNanos, s.Late = 0, true
		_, err = tx.Exec(ctx, `UPDATE billing_accounts SET available_nanos = available_nanos - $1 WHERE user_id = $2`, s.ChargedNanos, userID)
		return err
	})
	if errors.Is(err, errRetry) {
		// Held again cannot happen (held is only ever left), but a row
		// committed between the two statements can: settle it normally.
		return l.Settle(ctx, reservationID, costNanos, now)
	}
	if err != nil {
		return store.Settlement{}, mapErr(err)
	}
	return s, nil
}

var errRetry = errors.New("postgres: reservation still held")

func (l ledger) ReleaseExpired(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := l.db.pool.QueryRow(ctx, `WITH r AS (
			UPDATE reservations SET status = 'released', closed_at = $1
			WHERE status = 'held' AND expires_at <= $1
			RETURNING user_id, amount_nanos),
		s AS (SELECT user_id, sum(amount_nanos)::bigint AS total, count(*) AS n FROM r GROUP BY user_id),
		b AS (UPDATE billing_accounts ba
			SET available_nanos = ba.available_nanos + s.total, reserved_nanos = ba.reserved_nanos - s.total
			FROM s WHERE ba.user_id = s.user_id)
		SELECT coalesce(sum(n), 0)::bigint FROM s`, ts(now)).Scan(&n)
	return n, mapErr(err)
}
