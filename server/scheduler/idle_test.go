package scheduler

import (
	"context"
	"errors"
	"testing"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/llm"
)

// Work on idle capacity takes a worker only past its reserve (a quarter of
// 16 slots: 4), never while a job of its model waits, and is refused at
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
			_, err := s.Generate(ctx, &j, discard)
			errs <- err
		}()
	}
	// 12 idle jobs fit (16 slots less the reserve of 4); the 13th is refused at once.
	for i := range 12 {
		run(seeded(llm.PriorityIdle, int64(i)))
		<-b.started
	}
	_, err := s.Generate(ctx, new(seeded(llm.PriorityIdle, 99)), discard)
	if !errors.Is(err, llm.ErrNoIdleCapacity) || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("idle job past the reserve: %v, want ErrNoIdleCapacity (unavailable)", err)
	}
	if s.queued("m") != 0 {
		t.Fatal("an idle job queued")
	}
	// The reserve is interactive traffic's: four Free jobs start at once.
	for i := range 4 {
		run(seeded(llm.PriorityFree, int64(100+i)))
		<-b.started
	}
	// Full: a third waits in the queue, and an idle job is refused even
	// when a slot frees, since a job of its model is waiting.
	run(seeded(llm.PriorityFree, 104))
	eventually(t, "queued", func() bool { return s.queued("m") == 1 })
	if _, err := s.Generate(ctx, new(seeded(llm.PriorityIdle, 98)), discard); !errors.Is(err, llm.ErrNoIdleCapacity) {
		t.Fatalf("idle job while one waits: %v", err)
	}
	close(b.release)
	for range 17 { // 12 idle, 5 Free
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// The places a worker queues past its batch (WorkerQueue) are not idle
// capacity: an idle job queued there would hold up an interactive one.
func TestIdleWorkNeverTakesWorkerQueuePlaces(t *testing.T) {
	w := newFake(8)
	b := newBlocker(w)
	s := newScheduler(t, Config{WorkerQueue: 8}, w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 16)
	for i := range 6 { // 8 slots less the reserve of 2
		go func() { _, err := s.Generate(ctx, new(seeded(llm.PriorityIdle, int64(i))), discard); errs <- err }()
		<-b.started
	}
	if _, err := s.Generate(ctx, new(seeded(llm.PriorityIdle, 50)), discard); !errors.Is(err, llm.ErrNoIdleCapacity) {
		t.Fatalf("an idle job past the slots, with worker queue places free: %v", err)
	}
	close(b.release)
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// IdleSlots counts what idle work may take now: the slots past the
// reserve, none while a job of the model waits.
func TestIdleSlots(t *testing.T) {
	w := newFake(8)
	b := newBlocker(w)
	s := newScheduler(t, Config{WorkerQueue: 8}, w)
	eventually(t, "connected", func() bool { return s.IdleSlots("m") == 6 }) // 8 slots less a reserve of 2
	if n := s.IdleSlots("other-model"); n != 0 {
		t.Fatalf("a model no worker serves: %d", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 16)
	for i := range 4 {
		go func() { _, err := s.Generate(ctx, new(seeded(llm.PriorityFree, int64(i))), discard); errs <- err }()
		<-b.started
	}
	if n := s.IdleSlots("m"); n != 2 {
		t.Fatalf("with 4 running: %d, want 2", n)
	}
	close(b.release)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
