package sqlite

import (
	"context"
	"sync"
)

// writeGroup commits the ledger's per-request writes together (group
// commit): every Reserve and Settle that arrives while a commit is under way
// waits for the next one, which writes all of them in one transaction — one
// WAL commit where there were as many as requests. A write that finds no
// commit under way starts one at once, so none waits longer than it would
// have for the single writer connection anyway. Each write keeps its own
// guarantees: it runs under a savepoint of its own, in arrival order (a
// reservation's balance check sees every write before it: no overdraft,
// whatever the concurrency), one that fails is rolled back alone, and each
// is reported done only once committed (it survives kill -9).
type writeGroup struct {
	mu      sync.Mutex
	queue   []*groupCall
	leading bool // a goroutine is committing batches
}

// maxGroupBatch bounds one commit's writes.
const maxGroupBatch = 128

// groupCall is one queued write: fn runs inside the shared transaction
// (with the commit's context, not the caller's) and leaves its results in
// its closure; err is what the caller hears.
type groupCall struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *txn) error
	err  error
	done chan struct{}
}

// do queues fn for the next commit and waits for it. The commits run on a
// goroutine of their own, which also keeps SQLite's deep stack off the
// caller's (a request that goes on to stream for minutes keeps its stack as
// long). fn does not run when ctx has ended before its turn (its error is
// then ctx's); once it ran, the result is the committed truth the caller
// must hear, so the wait is not abandoned when ctx ends.
func (g *writeGroup) do(ctx context.Context, db *DB, fn func(ctx context.Context, tx *txn) error) error {
	c := &groupCall{ctx: ctx, fn: fn, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if !g.leading {
		g.leading = true
		go g.lead(db)
	}
	g.mu.Unlock()
	<-c.done
	return c.err
}

// lead commits what is queued, batch after batch, until nothing is.
func (g *writeGroup) lead(db *DB) {
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxGroupBatch)
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
		db.commitGroup(batch)
		for _, c := range batch {
			close(c.done)
		}
	}
}

// commitGroup writes batch in one transaction, each write under a savepoint
// of its own when there are several, so one that fails leaves the others in.
//
// Its context has no deadline, on purpose: for a statement under a context
// that can end, the SQLite driver starts a goroutine to interrupt it, so a
// request's hold and settle started a dozen goroutines between them, and
// their wake-ups were a tenth of the relay's CPU at 20 ms between tokens.
// What could hang is bounded anyway: a lock held by another process by the
// busy timeout, and the statements are the ledger's own, each a few rows.
func (db *DB) commitGroup(batch []*groupCall) {
	ctx := context.Background()
	several := len(batch) > 1
	err := db.write(ctx, func(tx *txn) error {
		for _, c := range batch {
			if err := c.ctx.Err(); err != nil {
				c.err = err
				continue
			}
			if several {
				if _, err := tx.Tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
					return err
				}
			}
			c.err = c.fn(ctx, tx)
			if !several {
				continue
			}
			if c.err != nil {
				if _, err := tx.Tx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
					return err
				}
			}
			if _, err := tx.Tx.ExecContext(ctx, "RELEASE w"); err != nil {
				return err
			}
		}
		if !several && batch[0].err != nil {
			return batch[0].err // alone: its failure rolls back, as a lone write always did
		}
		return nil
	})
	for _, c := range batch {
		switch {
		case err != nil && (c.err == nil || !several):
			// The transaction failed: nothing of it was kept.
			c.err = mapErr(err)
		case c.err != nil:
			c.err = mapErr(c.err)
		}
	}
}
