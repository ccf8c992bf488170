package main

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// TestLifecycleOrder: phases stop in the declared order; in each, the
// goroutines see their context end and return before the closers run, and
// the closers run last added first.
func TestLifecycleOrder(t *testing.T) {
	var mu sync.Mutex
	var log []string
	note := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	l := newLifecycle("first", "second")
	l.OnStop("second", func() { note("second closer") })
	l.Go("second", func(ctx context.Context) { <-ctx.Done(); note("second goroutine") })
	l.OnStop("first", func() { note("first closer a") })
	l.OnStop("first", func() { note("first closer b") })
	l.Go("first", func(ctx context.Context) { <-ctx.Done(); note("first goroutine") })
	if l.Context("second").Err() != nil {
		t.Fatal("a phase's context is done before it stops")
	}
	l.Stop()
	want := []string{"first goroutine", "first closer b", "first closer a", "second goroutine", "second closer"}
	if !slices.Equal(log, want) {
		t.Errorf("stopped in order %q, want %q", log, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("an undeclared phase does not panic")
		}
	}()
	l.OnStop("third", func() {})
}
