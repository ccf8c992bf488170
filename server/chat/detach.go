package chat

import (
	"context"
	"errors"
	"time"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// Detached work (a background response) runs after the request that starts
// it has returned, under the same registry as the web's generations
// (Core.Generations, keyed here by the work's own id): its events go to a
// log any gateway can follow, any gateway can cancel it (Core.Cancel), its
// claim is renewed while it runs so that a gateway that dies leaves it
// reading as stopped, and shutdown waits for it (Core.Wait).

// priorityKey carries a scheduling priority for an API request.
type priorityKey struct{}

// WithPriority returns ctx running its API request at priority instead of
// the API channel's (a background response's).
func WithPriority(ctx context.Context, priority int) context.Context {
	return context.WithValue(ctx, priorityKey{}, priority)
}

// Detach runs fn as the principal of ctx, outliving ctx: fn's context is
// the server's (cancelled at shutdown, or by Cancel(key) from any
// gateway), and publish appends an event to key's log. It fails with
// failed_precondition when key is running already.
func (c *Core) Detach(ctx context.Context, key string, fn func(ctx context.Context, publish Emit)) error {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return apierr.Unauthenticated("no credentials")
	}
	if err := c.Generations.Start(ctx, key); errors.Is(err, store.ErrConflict) {
		return apierr.FailedPrecondition("it is running already")
	} else if err != nil {
		return apierr.Unavailable("generations are unavailable", 2*time.Second)
	}
	work, cancel := context.WithCancel(auth.WithPrincipal(c.background(ctx), p))
	if pr, ok := ctx.Value(priorityKey{}).(int); ok {
		work = WithPriority(work, pr)
	}
	c.owned.add(key, cancel)
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		stopKeeping := c.keepClaim(work, key)
		defer func() {
			stopKeeping()
			c.owned.remove(key)
			cancel()
			if err := c.Generations.Finish(context.WithoutCancel(work), key, linger); err != nil {
				c.Logger.Error("finishing detached work's log", "key", key, "err", err)
			}
		}()
		fn(work, c.publisher(context.WithoutCancel(work), key))
	}()
	return nil
}

// keepClaim renews key's claim in Generations every keepEvery, however
// long its generation waits for a worker, until the returned stop (which
// waits for the renewals to end): if this gateway dies the claim lapses
// soon, and the generation reads as stopped.
func (c *Core) keepClaim(ctx context.Context, key string) (stop func()) {
	keepCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		tick := time.NewTicker(keepEvery)
		defer tick.Stop()
		for {
			select {
			case <-keepCtx.Done():
				return
			case <-tick.C:
				if err := c.Generations.Keep(keepCtx, key); err != nil && keepCtx.Err() == nil {
					c.Logger.ErrorContext(keepCtx, "renewing a generation's claim", "key", key, "err", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-kept
	}
}
