package chat

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// Web generations outlive the connection that started them (docs/architecture.md):
// the gateway that runs one appends its events to the conversation's log in
// Core.Generations (in memory embedded; Redis when gateways share), and any
// connection on any gateway replays and follows it, or asks for it to stop.

// linger is how long a finished generation's log stays readable, so a
// client that reconnects just after the end still gets all of it.
const linger = 5 * time.Minute

// owned is the cancel functions of the generations this gateway runs.
type owned struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
}

func (o *owned) add(conversationID string, cancel context.CancelFunc) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancels == nil {
		o.cancels = map[string]context.CancelFunc{}
	}
	o.cancels[conversationID] = cancel
}

func (o *owned) remove(conversationID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.cancels, conversationID)
}

func (o *owned) cancel(conversationID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cancel, ok := o.cancels[conversationID]; ok {
		cancel()
	}
}

// Follow sends the conversation's generation events after afterSeq, then
// each new one, until it ends (nil), send fails or ctx ends. No generation
// to follow is not_found.
func (c *Core) Follow(ctx context.Context, conversationID string, afterSeq uint64, send func(*parleyv1.GenerationEvent) error) error {
	err := c.Generations.Follow(ctx, conversationID, afterSeq, func(_ uint64, b []byte) error {
		ev := new(parleyv1.GenerationEvent)
		if err := proto.Unmarshal(b, ev); err != nil {
			return err
		}
		return send(ev)
	})
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("generation")
	}
	return err
}

// Cancel stops the conversation's running generation, on whichever gateway
// runs it, and reports whether there was one.
func (c *Core) Cancel(ctx context.Context, conversationID string) (bool, error) {
	ok, err := c.Generations.Cancel(ctx, conversationID)
	if err != nil {
		return false, apierr.Unavailable("generations are unavailable", 2*time.Second)
	}
	return ok, nil
}

// Generating reports whether a generation is running in the conversation.
func (c *Core) Generating(ctx context.Context, conversationID string) bool {
	ok, _ := c.Generations.Running(ctx, conversationID)
	return ok
}

// ListenForCancels stops the generations this gateway runs when anyone, on
// any gateway, asks; it returns when ctx ends.
func (c *Core) ListenForCancels(ctx context.Context) {
	for id := range c.Generations.Cancels(ctx) {
		c.owned.cancel(id)
	}
}

// publisher appends a generation's events to its shared log.
func (c *Core) publisher(ctx context.Context, conversationID string) Emit {
	return func(ev *parleyv1.GenerationEvent) error {
		b, err := proto.Marshal(ev)
		if err == nil {
			err = c.Generations.Append(ctx, conversationID, ev.GetSeq(), b)
		}
		if err != nil {
			// The answer is still generated and stored; followers miss it live.
			c.Logger.ErrorContext(ctx, "publishing a generation event", "conversation", conversationID, "err", err)
		}
		return nil
	}
}
