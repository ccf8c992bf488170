// Package memlive is the in-process store.Generations of the embedded mode:
// one gateway, its generations' logs in memory.
package memlive

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// Generations keeps the logs in memory.
type Generations struct {
	mu      sync.Mutex
	logs    map[string]*log
	cancels chan string
}

var _ store.Generations = (*Generations)(nil)

// New returns an empty set of logs.
func New() *Generations {
	return &Generations{logs: map[string]*log{}, cancels: make(chan string, 64)}
}

type log struct {
	events [][]byte
	done   bool
	wake   chan struct{} // closed and replaced at every change
	timer  *time.Timer
}

func (g *Generations) get(id string) (*log, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.logs[id]
	return l, ok
}

// Start implements store.Generations.
func (g *Generations) Start(_ context.Context, id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l, ok := g.logs[id]; ok {
		if !l.done {
			return fmt.Errorf("%w: a generation is running", store.ErrConflict)
		}
		if l.timer != nil {
			l.timer.Stop()
		}
	}
	g.logs[id] = &log{wake: make(chan struct{})}
	return nil
}

// Append implements store.Generations.
func (g *Generations) Append(_ context.Context, id string, seq uint64, event []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.logs[id]
	if !ok || l.done {
		return fmt.Errorf("%w: no running generation", store.ErrNotFound)
	}
	if seq != uint64(len(l.events))+1 {
		return fmt.Errorf("%w: event %d after %d", store.ErrInvalidArgument, seq, len(l.events))
	}
	l.events = append(l.events, event)
	close(l.wake)
	l.wake = make(chan struct{})
	return nil
}

// Finish implements store.Generations.
func (g *Generations) Finish(_ context.Context, id string, linger time.Duration) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.logs[id]
	if !ok {
		return nil
	}
	l.done = true
	close(l.wake)
	l.wake = make(chan struct{})
	l.timer = time.AfterFunc(linger, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.logs[id] == l {
			delete(g.logs, id)
		}
	})
	return nil
}

// Abandon implements store.Generations.
func (g *Generations) Abandon(_ context.Context, id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l, ok := g.logs[id]; ok && len(l.events) == 0 {
		delete(g.logs, id)
	}
	return nil
}

// Follow implements store.Generations.
func (g *Generations) Follow(ctx context.Context, id string, afterSeq uint64, fn func(uint64, []byte) error) error {
	l, ok := g.get(id)
	if !ok {
		return fmt.Errorf("%w: no generation", store.ErrNotFound)
	}
	next := afterSeq // events[i] has seq i+1
	for {
		g.mu.Lock()
		var pending [][]byte
		if next < uint64(len(l.events)) {
			pending = l.events[next:]
		}
		done, wake := l.done, l.wake
		g.mu.Unlock()
		for _, ev := range pending {
			next++
			if err := fn(next, ev); err != nil {
				return err
			}
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

// Running implements store.Generations.
func (g *Generations) Running(_ context.Context, id string) (bool, error) {
	l, ok := g.get(id)
	if !ok {
		return false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return !l.done, nil
}

// Keep implements store.Generations: a claim in process ends with the
// process.
func (g *Generations) Keep(context.Context, string) error { return nil }

// Cancel implements store.Generations.
func (g *Generations) Cancel(ctx context.Context, id string) (bool, error) {
	running, _ := g.Running(ctx, id)
	if !running {
		return false, nil
	}
	select {
	case g.cancels <- id:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return true, nil
}

// Cancels implements store.Generations. There is one gateway, so one reader.
func (g *Generations) Cancels(ctx context.Context) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case id := <-g.cancels:
				select {
				case out <- id:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
