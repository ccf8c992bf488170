package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/llm"
)

// wantFastUnavailable runs one job and checks that it is refused with
// unavailable and a retry-after well before the queue wait (30 s) is over.
func wantFastUnavailable(t *testing.T, s *Scheduler, what string) {
	t.Helper()
	start := time.Now()
	_, err := s.Generate(context.Background(), new(job("k", 0)), discard)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("%s: %v, want unavailable", what, err)
	}
	if d, ok := apierr.RetryAfter(err); !ok || d != 2*time.Second {
		t.Errorf("%s: retry-after %v, %v; want 2s", what, d, ok)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("%s: refused after %v, want at once", what, d)
	}
}

// With the only worker disconnected, a job is refused at once rather than
// waiting out the queue wait; once it is back, jobs run again.
func TestFailFastWhenTheOnlyWorkerIsDown(t *testing.T) {
	w := newFake(8)
	s := newScheduler(t, Config{}, w)
	if _, err := s.Generate(context.Background(), new(job("k", 0)), discard); err != nil {
		t.Fatal(err)
	}
	w.setDead(true)
	eventually(t, "disconnected", func() bool { return s.Workers()[0].State == StateConnecting })
	wantFastUnavailable(t, s, "worker down")
	if s.queued("m") != 0 {
		t.Error("a refused job was left in the queue")
	}
	w.setDead(false)
	eventually(t, "reconnected", func() bool { return s.Workers()[0].State == StateReady })
	if _, err := s.Generate(context.Background(), new(job("k", 0)), discard); err != nil {
		t.Fatal(err)
	}
}

// A job whose only worker fails before the first token (and is ejected)
// fails at once instead of waiting for the ejection to end.
func TestFailFastWhenTheOnlyWorkerIsEjected(t *testing.T) {
	w := newFake(8)
	w.setGen(func(context.Context, *llm.Request, llm.Emit) (llm.Result, error) {
		return llm.Result{}, errors.New("connection refused")
	})
	s := newScheduler(t, Config{EjectBase: time.Minute}, w)
	wantFastUnavailable(t, s, "the worker fails")
	if st := s.Workers()[0]; st.State != StateEjected {
		t.Fatalf("worker %+v, want ejected", st)
	}
	calls := w.calls.Load()
	wantFastUnavailable(t, s, "the worker is ejected")
	if w.calls.Load() != calls {
		t.Error("an ejected worker was tried")
	}
}

// Jobs waiting for a busy worker are refused as soon as that worker goes
// away, not at the end of their wait; jobs for a busy, healthy worker keep
// waiting.
func TestQueuedJobsFailWhenTheLastWorkerGoes(t *testing.T) {
	w := newFake(1)
	b := newBlocker(w)
	s := newScheduler(t, Config{}, w)
	go func() { _, _ = s.Generate(context.Background(), new(seeded(0, 0)), discard) }()
	<-b.started
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := s.Generate(context.Background(), new(seeded(0, int64(i+1))), discard)
			errs <- err
		}()
	}
	eventually(t, "queued behind the busy worker", func() bool { return s.queued("m") == 3 })
	// Busy is not down: they stay queued.
	time.Sleep(50 * time.Millisecond)
	if s.queued("m") != 3 {
		t.Fatalf("queued = %d while the worker is merely busy, want 3", s.queued("m"))
	}
	start := time.Now()
	w.setDead(true)
	for range 3 {
		if err := <-errs; connect.CodeOf(err) != connect.CodeUnavailable {
			t.Errorf("queued job: %v, want unavailable", err)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("queued jobs refused %v after the worker went, want at once", d)
	}
	if s.queued("m") != 0 {
		t.Error("queue not empty")
	}
	close(b.release)
}

// A worker that has never connected is waited for during ConnectGrace (a
// gateway just started), then no longer: jobs queued for it are refused
// when the grace ends, and new ones at once.
func TestNeverConnectedWorkerAfterGrace(t *testing.T) {
	w := newFake(8)
	w.setDead(true)
	s := newScheduler(t, Config{ConnectGrace: 200 * time.Millisecond}, w)
	start := time.Now()
	_, err := s.Generate(context.Background(), new(job("k", 0)), discard)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("refused after %v, want at the end of the 200 ms grace", d)
	}
	wantFastUnavailable(t, s, "after the grace")
}

// With a second worker that is up but busy, a job whose first worker is
// down waits for the busy one rather than failing.
func TestBusyWorkerStillQueues(t *testing.T) {
	down, busy := newFake(8), newFake(1)
	b := newBlocker(busy)
	s := newScheduler(t, Config{}, down, busy)
	down.setDead(true)
	eventually(t, "one down", func() bool { return s.Workers()[0].State == StateConnecting })
	go func() { _, _ = s.Generate(context.Background(), new(seeded(0, 0)), discard) }()
	<-b.started
	done := make(chan error, 1)
	go func() {
		_, err := s.Generate(context.Background(), new(seeded(0, 1)), discard)
		done <- err
	}()
	eventually(t, "queued", func() bool { return s.queued("m") == 1 })
	close(b.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
