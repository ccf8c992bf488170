package main

import (
	"context"
	"fmt"
	"sync"
)

// lifecycle is serve's background work in named phases, stopped in the order
// the phases were declared once the HTTP server has drained: each phase's
// context is cancelled, its goroutines are awaited, then its closers run (in
// the reverse of the order they were added). The phases' contexts are not
// the signal's: the work they hold (sweeps, the generations, the last API key
// uses) goes on while the server drains.
type lifecycle struct {
	order  []string
	phases map[string]*phase
}

type phase struct {
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closers []func()
}

// newLifecycle declares the phases, in the order they stop.
func newLifecycle(stopOrder ...string) *lifecycle {
	l := &lifecycle{order: stopOrder, phases: map[string]*phase{}}
	for _, name := range stopOrder {
		ctx, cancel := context.WithCancel(context.Background())
		l.phases[name] = &phase{ctx: ctx, cancel: cancel}
	}
	return l
}

func (l *lifecycle) phase(name string) *phase {
	p, ok := l.phases[name]
	if !ok {
		panic(fmt.Sprintf("lifecycle: no phase %q", name))
	}
	return p
}

// Go runs f in the phase until the phase stops (its context is cancelled).
func (l *lifecycle) Go(name string, f func(ctx context.Context)) {
	p := l.phase(name)
	p.wg.Go(func() { f(p.ctx) })
}

// Context is the phase's context, done when the phase stops.
func (l *lifecycle) Context(name string) context.Context { return l.phase(name).ctx }

// OnStop runs f when the phase stops, after its goroutines have returned.
func (l *lifecycle) OnStop(name string, f func()) {
	p := l.phase(name)
	p.closers = append(p.closers, f)
}

// Stop stops every phase, in the declared order.
func (l *lifecycle) Stop() {
	for _, name := range l.order {
		p := l.phases[name]
		p.cancel()
		p.wg.Wait()
		for i := len(p.closers) - 1; i >= 0; i-- {
			p.closers[i]()
		}
	}
}
