package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// reserveGroup commits reservations together (group commit): every
// Reserve that arrives while a commit is under way waits for the next one,
// which writes all of them in one transaction — one WAL commit where there
// were as many as requests. A reservation that finds no commit under way
// starts one at once, so none waits longer than it would have for the
// single writer connection anyway. Each reservation keeps its own
// guarantees: its balance check and hold are one savepoint, applied in
// arrival order (no overdraft, whatever the concurrency), and it is
// reported done only once committed (it survives kill -9).
type reserveGroup struct {
	mu      sync.Mutex
	queue   []*reserveCall
	leading bool // a goroutine is committing batches
}

// maxReserveBatch bounds one commit's reservations.
const maxReserveBatch = 128

type reserveCall struct {
	ctx  context.Context
	r    store.Reservation
	b    store.Balance
	err  error
	done chan struct{}
}

// reserve queues r for the next commit and waits for it. The commits run
// on a goroutine of their own, which also keeps SQLite's deep stack off
// the caller's (a request that goes on to stream for minutes keeps its
// stack as long).
func (g *reserveGroup) reserve(ctx context.Context, db *DB, r store.Reservation) (store.Balance, error) {
	c := &reserveCall{ctx: ctx, r: r, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if !g.leading {
		g.leading = true
		go g.lead(db)
	}
	g.mu.Unlock()
	// Not abandoned when ctx ends: once its statements ran, the result is
	// the committed truth the caller must hear (a cancelled caller settles
	// the hold at once).
	<-c.done
	return c.b, c.err
}

// lead commits what is queued, batch after batch, until nothing is.
func (g *reserveGroup) lead(db *DB) {
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxReserveBatch)
		if n == 0 {
			g.leading = false
			g.mu.Unlock()
			return
		}
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		if len(g.queue) == 0 {
			g.queue = nil
		}
		g.mu.Unlock()
		db.commitReserves(batch)
		for _, c := range batch {
			close(c.done)
		}
	}
}

// commitReserves writes batch in one transaction, each reservation under a
// savepoint of its own when there are several, so one that fails leaves the
// others in.
func (db *DB) commitReserves(batch []*reserveCall) {
	ctx, cancel := context.WithTimeout(context.Background(), BusyTimeout+10*time.Second)
	defer cancel()
	several := len(batch) > 1
	err := db.write(ctx, func(tx *txn) error {
		for _, c := range batch {
			if err := c.ctx.Err(); err != nil {
				c.err = err
				continue
			}
			if several {
				if _, err := tx.Tx.ExecContext(ctx, "SAVEPOINT reserve"); err != nil {
					return err
				}
			}
			c.b, c.err = reserveTx(ctx, tx, c.r)
			if !several {
				continue
			}
			if c.err != nil {
				if _, err := tx.Tx.ExecContext(ctx, "ROLLBACK TO reserve"); err != nil {
					return err
				}
			}
			if _, err := tx.Tx.ExecContext(ctx, "RELEASE reserve"); err != nil {
				return err
			}
		}
		if !several && batch[0].err != nil {
			return batch[0].err // alone: its failure rolls back, as a lone Reserve always did
		}
		return nil
	})
	for _, c := range batch {
		switch {
		case err != nil && (c.err == nil || !several):
			// The transaction failed: nothing of it was kept.
			c.b, c.err = store.Balance{}, mapErr(err)
		case c.err != nil:
			c.b, c.err = store.Balance{}, mapErr(c.err)
		}
	}
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
	return b, err
}
