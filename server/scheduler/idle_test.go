package scheduler

import (
	"context"
	"errors"
	"testing"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/llm"
)

// Work on idle capacity takes a worker only past its reserve (an eighth of
// 16 slots: 2), never while a job of its model waits, and is refused at
// once instead of queueing.
func TestIdleWorkTakesOnlySpareSlots(t *testing.T) {
	w := newFake(16)
	b := newBlocker(w)
	s := newScheduler(t, Config{}, w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 32)
	run := func(j llm.Job) {
		go func() {
			_, err := s.Generate(ctx, j, discard)
			errs <- err
		}()
	}
	// 14 idle jobs fit (16 slots less the reserve of 2); the 15th is refused at once.
	for i := range 14 {
		run(seeded(llm.PriorityIdle, int64(i)))
		<-b.started
	}
	_, err := s.Generate(ctx, seeded(llm.PriorityIdle, 99), discard)
	if !errors.Is(err, llm.ErrNoIdleCapacity) || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("idle job past the reserve: %v, want ErrNoIdleCapacity (unavailable)", err)
	}
	if s.queued("m") != 0 {
		t.Fatal("an idle job queued")
	}
	// The reserve is interactive traffic's: two Free jobs start at once.
	for i := range 2 {
		run(seeded(llm.PriorityFree, int64(100+i)))
		<-b.started
	}
	// Full: a third waits in the queue, and an idle job is refused even
	// when a slot frees, since a job of its model is waiting.
	run(seeded(llm.PriorityFree, 102))
	eventually(t, "queued", func() bool { return s.queued("m") == 1 })
	if _, err := s.Generate(ctx, seeded(llm.PriorityIdle, 98), discard); !errors.Is(err, llm.ErrNoIdleCapacity) {
		t.Fatalf("idle job while one waits: %v", err)
	}
	close(b.release)
	for range 17 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
