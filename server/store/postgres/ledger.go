package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/parleyhq/parley/server/store"
)

// ledger keeps balances in billing_accounts and holds in reservations. The
// hot path (Reserve, Settle) is one statement each: a conditional UPDATE …
// RETURNING whose condition (available >= amount, status = 'held') PostgreSQL
// evaluates on the row it has locked, and a data-modifying CTE for the other
// table, so the pair is atomic without a transaction round trip, a
// read-modify-write or a SERIALIZABLE retry loop. Gateways sharing the
// database therefore cannot overshoot a balance.
//
// Settle stores the request's usage record in the same statement or
// transaction, into usage_records (this database's Usage) or, when the
// Usage store is elsewhere (ClickHouse), into usage_outbox for the relay.
type ledger struct {
	db     *DB
	outbox bool // records go to usage_outbox, not usage_records
	// q, when set, is what the statements run on instead of the pool: a
	// sharded ledger's fencedConn (shards.go).
	q ledgerConn
}

// ledgerConn is what the ledger's statements run on: the pool, or a
// fencedConn.
type ledgerConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// querier is a ledgerConn that also reads many rows: the pool or a
// transaction (pgx.BeginFunc on a transaction makes a savepoint).
type querier interface {
	ledgerConn
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// conn is the ledger's connection.
func (l ledger) conn() ledgerConn {
	if l.q != nil {
		return l.q
	}
	return l.db.pool
}

// exec runs a statement on conn, its error mapped.
func (l ledger) exec(ctx context.Context, q string, args ...any) (pgconn.CommandTag, error) {
	tag, err := l.conn().Exec(ctx, q, args...)
	return tag, mapErr(err)
}

// recordTable is where Settle writes usage records.
func (l ledger) recordTable() string {
	if l.outbox {
		return "usage_outbox"
	}
	return "usage_records"
}

// recordColumns are the columns Settle writes, in the order of recordArgs.
const recordColumns = `request_id, user_id, api_key_id, channel, model, prompt_tokens, completion_tokens,
	cached_tokens, estimated, cost_nanos, finish_reason, created_at, end_user, cache_hit, requested_model`

// recordArgs are r's fields but its user and cost, which the statements
// take from the settled reservation: $N+0 … $N+12 are request_id, api_key_id,
// channel, model, prompt_tokens, completion_tokens, cached_tokens,
// estimated, finish_reason, created_at, end_user, cache_hit, requested_model.
func recordArgs(r *store.UsageRecord) []any {
	return []any{r.RequestID, r.APIKeyID, r.Channel, r.Model, r.PromptTokens, r.CompletionTokens,
		r.CachedTokens, r.Estimated, r.FinishReason, ts(r.CreatedAt), r.EndUser, r.CacheHit, r.RequestedModel}
}

// recordValues is the SELECT list that inserts a record whose arguments
// start at $n, with user and cost from the given expressions.
func recordValues(n int, user, cost string) string {
	p := func(i int) string { return fmt.Sprintf("$%d", n+i) }
	return strings.Join([]string{p(0), user, p(1), p(2), p(3), p(4) + "::bigint", p(5) + "::bigint", p(6) + "::bigint",
		p(7) + "::boolean", cost, p(8), p(9) + "::bigint", p(10), p(11) + "::boolean", p(12) + "::text"}, ", ")
}

func (l ledger) Account(ctx context.Context, userID string) (store.Balance, error) {
	var b store.Balance
	err := l.conn().QueryRow(ctx, `SELECT available_nanos, reserved_nanos FROM billing_accounts WHERE user_id = $1`, userID).
		Scan(&b.AvailableNanos, &b.ReservedNanos)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Balance{}, nil
	}
	return b, err
}

func (l ledger) Adjust(ctx context.Context, a store.Adjustment) (int64, error) {
	var avail int64
	err := pgx.BeginFunc(ctx, l.conn(), func(tx pgx.Tx) error {
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
	const q = `WITH b AS (
			UPDATE billing_accounts
			SET available_nanos = available_nanos - $1, reserved_nanos = reserved_nanos + $1
			WHERE user_id = $2 AND available_nanos >= $1
			RETURNING user_id, available_nanos, reserved_nanos),
		r AS (INSERT INTO reservations (id, user_id, amount_nanos, status, created_at, expires_at)
			SELECT $3, user_id, $1, 'held', $4, $5 FROM b)
		SELECT available_nanos, reserved_nanos FROM b`
	args := []any{r.AmountNanos, r.UserID, r.ID, ts(r.CreatedAt), ts(r.ExpiresAt)}
	var err error
	if r.Budgets.IsZero() {
		err = l.conn().QueryRow(ctx, q, args...).Scan(&b.AvailableNanos, &b.ReservedNanos)
	} else {
		// An organisation's request: the balance first (its row orders the
		// organisation's holds), then its budgets, in one transaction.
		err = pgx.BeginFunc(ctx, l.conn(), func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, q, args...).Scan(&b.AvailableNanos, &b.ReservedNanos); err != nil {
				return err
			}
			return holdBudgets(ctx, tx, r)
		})
	}
	var over *store.BudgetExceededError
	if errors.As(err, &over) {
		return store.Balance{}, over
	}
	if errors.Is(err, pgx.ErrNoRows) {
		// An ID taken is a conflict whatever the balance: a retry of work
		// whose hold exists finds it (billing.ReserveAs).
		var taken bool
		if err := l.conn().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM reservations WHERE id = $1)`, r.ID).Scan(&taken); err != nil {
			return store.Balance{}, mapErr(err)
		}
		if taken {
			return store.Balance{}, fmt.Errorf("%w: reservation %s exists", store.ErrConflict, r.ID)
		}
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

func (l ledger) Settle(ctx context.Context, reservationID string, costNanos int64, now time.Time, record *store.UsageRecord) (store.Settlement, error) {
	if err := store.CheckSettle(reservationID, costNanos, record); err != nil {
		return store.Settlement{}, err
	}
	if reservationID == "" {
		if record == nil {
			return store.Settlement{}, nil
		}
		// Nothing held, nothing charged: the record alone, once.
		_, err := l.exec(ctx, `INSERT INTO `+l.recordTable()+` (`+recordColumns+`)
			SELECT `+recordValues(2, "$1", "0")+` ON CONFLICT (request_id) DO NOTHING`,
			append([]any{record.UserID}, recordArgs(record)...)...)
		return store.Settlement{}, err
	}
	var s store.Settlement
	// The normal case, one statement: close a held reservation, return the
	// unspent part to the balance and store the usage record with what was
	// charged. A failing insert (a request ID already stored) fails the
	// statement, so nothing is charged.
	q := `WITH r AS (
			UPDATE reservations
			SET status = 'settled', charged_nanos = least($1, amount_nanos), refunded_nanos = amount_nanos - least($1, amount_nanos), closed_at = $2
			WHERE id = $3 AND status = 'held'
			RETURNING user_id, amount_nanos, charged_nanos, refunded_nanos),
		b AS (UPDATE billing_accounts ba
			SET reserved_nanos = ba.reserved_nanos - r.amount_nanos, available_nanos = ba.available_nanos + r.refunded_nanos
			FROM r WHERE ba.user_id = r.user_id RETURNING ba.user_id),
		bb AS (UPDATE budgets bu
			SET reserved_nanos = bu.reserved_nanos - CASE WHEN bu.window_start = rb.window_start THEN rb.amount_nanos ELSE 0 END,
				spent_nanos = bu.spent_nanos + CASE WHEN bu.window_start = rb.window_start THEN r.charged_nanos ELSE 0 END
			FROM reservation_budgets rb, r, b WHERE rb.reservation_id = $3 AND bu.id = rb.budget_id),
		rbd AS (DELETE FROM reservation_budgets rb USING r WHERE rb.reservation_id = $3)`
	// bb reads b, so the balance's row is locked before the budgets' (as
	// Reserve takes them): no deadlock between a reserve and a settle. rbd
	// deletes only with r (a released reservation keeps its rows for a
	// late settle).
	args := []any{costNanos, ts(now), reservationID}
	if record != nil {
		q += `,
		u AS (INSERT INTO ` + l.recordTable() + ` (` + recordColumns + `)
			SELECT ` + recordValues(4, "r.user_id", "r.charged_nanos") + ` FROM r)`
		args = append(args, recordArgs(record)...)
	}
	err := l.conn().QueryRow(ctx, q+`
		SELECT charged_nanos, refunded_nanos FROM r`, args...).Scan(&s.ChargedNanos, &s.RefundedNanos)
	if err == nil {
		if store.Forgettable(costNanos, record) {
			// Nothing ran: forgotten, so that a later attempt at the same
			// work under the same id (a batch line tried again) holds anew
			// instead of being settled as this one was. (Left, it only
			// keeps the old behaviour.)
			_, _ = l.exec(ctx, `DELETE FROM reservations WHERE id = $1 AND status = 'settled' AND charged_nanos = 0`, reservationID)
		}
		return s, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.Settlement{}, mapErr(err)
	}
	// Rare paths: a reservation the sweeper released (charge what the
	// balance allows, once, with its record), or one already settled
	// (report it).
	err = pgx.BeginFunc(ctx, l.conn(), func(tx pgx.Tx) error {
		var userID, status string
		err := tx.QueryRow(ctx, `SELECT user_id, status, charged_nanos, refunded_nanos, late FROM reservations WHERE id = $1 FOR UPDATE`,
			reservationID).Scan(&userID, &status, &s.ChargedNanos, &s.RefundedNanos, &s.Late)
		if errors.Is(err, pgx.ErrNoRows) && store.Forgettable(costNanos, record) {
			return nil // released and forgotten already (a retried call)
		}
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
		if _, err = tx.Exec(ctx, `UPDATE billing_accounts SET available_nanos = available_nanos - $1 WHERE user_id = $2`, s.ChargedNanos, userID); err != nil {
			return err
		}
		// The sweeper released the budgets' holds; the charge still counts
		// as spent in the window it was held in.
		if _, err = tx.Exec(ctx, `WITH bb AS (UPDATE budgets bu
				SET spent_nanos = bu.spent_nanos + CASE WHEN bu.window_start = rb.window_start THEN $1 ELSE 0 END
				FROM reservation_budgets rb WHERE rb.reservation_id = $2 AND bu.id = rb.budget_id)
			DELETE FROM reservation_budgets WHERE reservation_id = $2`, s.ChargedNanos, reservationID); err != nil {
			return err
		}
		if record == nil {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+l.recordTable()+` (`+recordColumns+`)
			SELECT `+recordValues(3, "$1", "$2::bigint"), append([]any{userID, s.ChargedNanos}, recordArgs(record)...)...)
		return err
	})
	if errors.Is(err, errRetry) {
		// Held again cannot happen (held is only ever left), but a row
		// committed between the two statements can: settle it normally.
		return l.Settle(ctx, reservationID, costNanos, now, record)
	}
	if err != nil {
		return store.Settlement{}, mapErr(err)
	}
	return s, nil
}

var errRetry = errors.New("postgres: reservation still held")

func (l ledger) ReleaseExpired(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := l.conn().QueryRow(ctx, `WITH r AS (
			UPDATE reservations SET status = 'released', closed_at = $1
			WHERE status = 'held' AND expires_at <= $1
			RETURNING id, user_id, amount_nanos),
		s AS (SELECT user_id, sum(amount_nanos)::bigint AS total, count(*) AS n FROM r GROUP BY user_id),
		b AS (UPDATE billing_accounts ba
			SET available_nanos = ba.available_nanos + s.total, reserved_nanos = ba.reserved_nanos - s.total
			FROM s WHERE ba.user_id = s.user_id RETURNING ba.user_id),
		bb AS (UPDATE budgets bu SET reserved_nanos = bu.reserved_nanos - x.total
			FROM (SELECT rb.budget_id, rb.window_start, sum(rb.amount_nanos)::bigint AS total FROM reservation_budgets rb JOIN r ON r.id = rb.reservation_id
			      WHERE (SELECT count(*) FROM b) >= 0 GROUP BY rb.budget_id, rb.window_start) x
			WHERE bu.id = x.budget_id AND bu.window_start = x.window_start)
		SELECT coalesce(sum(n), 0)::bigint FROM s`, ts(now)).Scan(&n)
	return n, mapErr(err)
}

// holdBudgets takes r's hold against every budget of its scopes, locked in
// id order, in the window holding r.CreatedAt (rolling an ended window on
// the way), or fails with *BudgetExceededError and the transaction rolls
// back the balance's part too.
func holdBudgets(ctx context.Context, tx pgx.Tx, r store.Reservation) error {
	sc := r.Budgets
	rows, err := tx.Query(ctx, `SELECT `+budgetCols+` FROM budgets b
		WHERE b.org_id = $1 AND ((b.scope = 'organization' AND b.scope_id = $1) OR (b.scope = 'team' AND b.scope_id = $2)
			OR (b.scope = 'key' AND b.scope_id = $3) OR (b.scope = 'member' AND b.scope_id = $4))
		ORDER BY b.id FOR UPDATE OF b`, sc.OrgID, sc.TeamID, sc.KeyID, sc.MemberID)
	if err != nil {
		return err
	}
	budgets, err := collectRows(rows, func(row pgx.Rows) (store.Budget, error) { return scanBudget(row, r.CreatedAt) })
	if err != nil {
		return err
	}
	for _, b := range budgets {
		if b.SpentNanos+b.ReservedNanos+r.AmountNanos > b.LimitNanos {
			return &store.BudgetExceededError{Budget: b, RequiredNanos: r.AmountNanos}
		}
	}
	for _, b := range budgets {
		if _, err := tx.Exec(ctx, `WITH u AS (UPDATE budgets SET window_start = $1, spent_nanos = $2, reserved_nanos = $6 WHERE id = $4)
			INSERT INTO reservation_budgets (reservation_id, budget_id, amount_nanos, window_start) VALUES ($5, $4, $3, $1)`,
			ts(b.WindowStart), b.SpentNanos, r.AmountNanos, b.ID, r.ID, b.ReservedNanos+r.AmountNanos); err != nil {
			return err
		}
	}
	return nil
}
