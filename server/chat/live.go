package chat

import (
	"context"
	"sync"
	"time"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
)

// Live holds the web generations in progress, one per conversation, so a
// generation outlives the connection that started it: any number of
// followers replay its events from a seq and follow it to the end, and any
// connection can cancel it. A finished generation stays for Linger so a
// client that reconnects just after the end still gets it.
//
// This is the in-process hub of one gateway; with several gateways the
// Redis backend fans the same events out (DESIGN.md §5).
type Live struct {
	Linger time.Duration

	mu   sync.Mutex
	gens map[string]*Generation
}

// NewLive returns an empty hub.
func NewLive(linger time.Duration) *Live {
	return &Live{Linger: linger, gens: map[string]*Generation{}}
}

// Generation is one web generation's event log.
type Generation struct {
	cancel context.CancelFunc

	mu     sync.Mutex
	events []*parleyv1.GenerationEvent
	done   bool
	wake   chan struct{} // closed and replaced at every change
}

// Start registers a generation for the conversation, or fails with
// failed_precondition while one is still running there.
func (l *Live) Start(conversationID string, cancel context.CancelFunc) (*Generation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g, ok := l.gens[conversationID]; ok && !g.finished() {
		return nil, apierr.FailedPrecondition("a generation is already running in this conversation; wait for it or cancel it")
	}
	g := &Generation{cancel: cancel, wake: make(chan struct{})}
	l.gens[conversationID] = g
	return g, nil
}

// Abandon removes a generation that never started (refused before scheduling).
func (l *Live) Abandon(conversationID string, g *Generation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gens[conversationID] == g {
		delete(l.gens, conversationID)
	}
}

// Get returns the conversation's current or recently finished generation.
func (l *Live) Get(conversationID string) (*Generation, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g, ok := l.gens[conversationID]
	return g, ok
}

// Running reports whether a generation is running in the conversation.
func (l *Live) Running(conversationID string) bool {
	g, ok := l.Get(conversationID)
	return ok && !g.finished()
}

// Cancel stops the conversation's running generation; it reports whether
// there was one.
func (l *Live) Cancel(conversationID string) bool {
	g, ok := l.Get(conversationID)
	if !ok || g.finished() {
		return false
	}
	g.cancel()
	return true
}

// Finish marks g done and forgets it after Linger.
func (l *Live) Finish(conversationID string, g *Generation) {
	g.mu.Lock()
	g.done = true
	close(g.wake)
	g.wake = make(chan struct{})
	g.mu.Unlock()
	time.AfterFunc(l.Linger, func() { l.Abandon(conversationID, g) })
}

// Publish appends an event and wakes the followers. It never blocks on them.
func (g *Generation) Publish(ev *parleyv1.GenerationEvent) {
	g.mu.Lock()
	g.events = append(g.events, ev)
	close(g.wake)
	g.wake = make(chan struct{})
	g.mu.Unlock()
}

func (g *Generation) finished() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.done
}

// Follow sends every event after afterSeq, then each new one as it comes,
// until the generation ends (nil), send fails or ctx is done (their error).
// A slow follower never holds up the generation: it reads the log at its
// own pace.
func (g *Generation) Follow(ctx context.Context, afterSeq uint64, send func(*parleyv1.GenerationEvent) error) error {
	next := int(afterSeq) // events[i] has seq i+1
	for {
		g.mu.Lock()
		pending := g.events[min(next, len(g.events)):]
		done, wake := g.done, g.wake
		g.mu.Unlock()
		for _, ev := range pending {
			if err := send(ev); err != nil {
				return err
			}
			next++
		}
		if len(pending) > 0 {
			continue
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}
