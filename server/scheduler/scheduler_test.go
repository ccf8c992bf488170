package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

func TestAffinityHoldsWhileLoadAllows(t *testing.T) {
	ws := []*fakeEngine{newFake(8), newFake(8), newFake(8), newFake(8)}
	s := newScheduler(t, Config{}, ws...)
	key := keyFor(t, s, "c")
	// The target carries some load, within the bound: affinity holds.
	ws[2].update(func(l *worker.LoadReport) { l.Running = 3 })
	for range 20 {
		if _, err := s.Generate(context.Background(), new(job(key, 0)), discard); err != nil {
			t.Fatal(err)
		}
	}
	if n := ws[2].calls.Load(); n != 20 {
		t.Errorf("target ran %d of 20", n)
	}
	// Different keys spread over the workers.
	for i := range 200 {
		if _, err := s.Generate(context.Background(), new(job(fmt.Sprint("k", i), 0)), discard); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range ws {
		if w.calls.Load() < 20 {
			t.Errorf("worker %d ran only %d of 200 keys", i, w.calls.Load())
		}
	}
}

func TestAffinitySpillsWhenLoaded(t *testing.T) {
	ws := []*fakeEngine{newFake(16), newFake(16), newFake(16)}
	reg := prometheus.NewRegistry()
	s := newScheduler(t, Config{Registerer: reg}, ws...)
	key := keyFor(t, s, "a")
	// 10 running against 0 elsewhere: past both bounds (abs 8, rel 2).
	ws[0].update(func(l *worker.LoadReport) { l.Running = 10 })
	eventually(t, "load seen", func() bool { return s.Workers()[0].Load.Running == 10 })
	for range 20 {
		if _, err := s.Generate(context.Background(), new(job(key, 0)), discard); err != nil {
			t.Fatal(err)
		}
	}
	if n := ws[0].calls.Load(); n != 0 {
		t.Errorf("overloaded target still ran %d", n)
	}
	if ws[1].calls.Load() == 0 || ws[2].calls.Load() == 0 {
		t.Errorf("spill went to one worker only: %d, %d", ws[1].calls.Load(), ws[2].calls.Load())
	}
	var spills dto.Metric
	_ = s.metrics.picks[reasonSpill].Write(&spills)
	if got := spills.GetCounter().GetValue(); got != 20 {
		t.Errorf("spill picks = %v, want 20", got)
	}
	if fams, err := reg.Gather(); err != nil || len(fams) == 0 {
		t.Errorf("metrics not registered: %v", err)
	}
	// Back within bounds: affinity again.
	ws[0].update(func(l *worker.LoadReport) { l.Running = 2 })
	eventually(t, "load seen", func() bool { return s.Workers()[0].Load.Running == 2 })
	if _, err := s.Generate(context.Background(), new(job(key, 0)), discard); err != nil {
		t.Fatal(err)
	}
	if ws[0].calls.Load() != 1 {
		t.Error("affinity did not come back once the target's load fell")
	}
}

// blocker makes a fake's generations wait until released, and records the
// order they ran in.
type blocker struct {
	mu      sync.Mutex
	order   []int
	release chan struct{}
	started chan struct{}
}

func newBlocker(f *fakeEngine) *blocker {
	b := &blocker{release: make(chan struct{}), started: make(chan struct{}, 100)}
	f.setGen(func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		b.mu.Lock()
		b.order = append(b.order, int(*req.Seed))
		b.mu.Unlock()
		b.started <- struct{}{}
		select {
		case <-b.release:
		case <-ctx.Done():
			return llm.Result{FinishReason: llm.FinishCancelled}, nil
		}
		_ = emit(llm.Delta{Text: "x", Tokens: 1})
		return llm.Result{FinishReason: llm.FinishStop}, nil
	})
	return b
}

func seeded(priority int, tag int64) llm.Job {
	j := job("", priority)
	j.Request.Seed = &tag
	return j
}

func TestTierOrderUnderSaturation(t *testing.T) {
	w := newFake(1)
	b := newBlocker(w)
	s := newScheduler(t, Config{}, w)
	var wg sync.WaitGroup
	run := func(j llm.Job) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Generate(context.Background(), &j, discard); err != nil {
				t.Error(err)
			}
		}()
	}
	run(seeded(llm.PriorityFree, 100)) // takes the only slot
	<-b.started
	// Arrivals: Free, Plus, Max, Pro, Free, Max — each queued before the next.
	arrivals := []struct{ p, tag int }{{llm.PriorityFree, 1}, {llm.PriorityPlus, 2}, {llm.PriorityMax, 3}, {llm.PriorityPro, 4}, {llm.PriorityFree, 5}, {llm.PriorityMax, 6}}
	for i, a := range arrivals {
		run(seeded(a.p, int64(a.tag)))
		eventually(t, "queued", func() bool { return s.queued("m") == i+1 })
	}
	close(b.release)
	wg.Wait()
	want := []int{100, 3, 6, 4, 2, 1, 5}
	if fmt.Sprint(b.order) != fmt.Sprint(want) {
		t.Errorf("order = %v, want %v (Max, Pro, Plus, Free; first come within a tier)", b.order, want)
	}
}

func TestRejectPastQueueBound(t *testing.T) {
	w := newFake(1)
	b := newBlocker(w)
	s := newScheduler(t, Config{QueueLimit: 2, RetryAfter: 3 * time.Second}, w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 10)
	run := func(j llm.Job) {
		go func() {
			_, err := s.Generate(ctx, &j, discard)
			errs <- err
		}()
	}
	run(seeded(llm.PriorityFree, 0))
	<-b.started
	run(seeded(llm.PriorityFree, 1))
	run(seeded(llm.PriorityPro, 2))
	eventually(t, "queue full", func() bool { return s.queued("m") == 2 })

	_, err := s.Generate(ctx, new(seeded(llm.PriorityFree, 3)), discard)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("past the bound: %v, want unavailable", err)
	}
	if d, ok := apierr.RetryAfter(err); !ok || d != 3*time.Second {
		t.Errorf("retry-after = %v, %v; want 3s", d, ok)
	}
	// A higher tier pushes the lowest, latest waiter out rather than being refused.
	run(seeded(llm.PriorityMax, 4))
	if err := <-errs; connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("pushed-out Free job: %v, want unavailable", err)
	}
	if s.queued("m") != 2 {
		t.Errorf("queued = %d, want 2", s.queued("m"))
	}
	close(b.release)
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if fmt.Sprint(b.order) != "[0 4 2]" {
		t.Errorf("order = %v, want [0 4 2]", b.order)
	}
}

func TestQueueWaitBound(t *testing.T) {
	w := newFake(1)
	b := newBlocker(w)
	s := newScheduler(t, Config{MaxQueueWait: 20 * time.Millisecond}, w)
	go func() { _, _ = s.Generate(context.Background(), new(seeded(0, 0)), discard) }()
	<-b.started
	start := time.Now()
	_, err := s.Generate(context.Background(), new(seeded(0, 1)), discard)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("waited %v", d)
	}
	if s.queued("m") != 0 {
		t.Error("timed-out job left in the queue")
	}
	close(b.release)
}

func TestFailoverBeforeFirstToken(t *testing.T) {
	ws := []*fakeEngine{newFake(8), newFake(8)}
	ws[0].setGen(func(context.Context, *llm.Request, llm.Emit) (llm.Result, error) {
		return llm.Result{}, errors.New("connection refused")
	})
	s := newScheduler(t, Config{}, ws...)
	var text string
	res, err := s.Generate(context.Background(), new(job(keyFor(t, s, "a"), 0)), func(d llm.Delta) error { text += d.Text; return nil })
	if err != nil || res.FinishReason != llm.FinishStop || text != "ok" {
		t.Fatalf("got %+v, %v, %q; want the second worker's answer", res, err, text)
	}
	if ws[0].calls.Load() != 1 || ws[1].calls.Load() != 1 {
		t.Errorf("calls = %d, %d", ws[0].calls.Load(), ws[1].calls.Load())
	}
	st := s.Workers()[0]
	if st.State != StateEjected || st.ConsecutiveFailures != 1 || st.EjectedUntil.IsZero() || st.InFlight != 0 {
		t.Errorf("failed worker = %+v, want ejected once, nothing in flight", st)
	}

	// The caller's own fault is not retried and ejects nobody.
	ws[1].setGen(func(context.Context, *llm.Request, llm.Emit) (llm.Result, error) {
		return llm.Result{}, fmt.Errorf("%w: no messages", llm.ErrInvalidRequest)
	})
	_, err = s.Generate(context.Background(), new(job("", 0)), discard)
	if !errors.Is(err, llm.ErrInvalidRequest) || ws[1].calls.Load() != 2 || s.Workers()[1].State != StateReady {
		t.Errorf("invalid request: %v after %d calls, state %s", err, ws[1].calls.Load(), s.Workers()[1].State)
	}
}

func TestAtMostTwoRetries(t *testing.T) {
	ws := []*fakeEngine{newFake(8), newFake(8), newFake(8), newFake(8)}
	for _, w := range ws {
		w.setGen(func(context.Context, *llm.Request, llm.Emit) (llm.Result, error) {
			return llm.Result{}, errors.New("boom")
		})
	}
	s := newScheduler(t, Config{}, ws...)
	_, err := s.Generate(context.Background(), new(job("k", 0)), discard)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("err = %v, want unavailable", err)
	}
	total := 0
	for _, w := range ws {
		total += int(w.calls.Load())
	}
	if total != 3 {
		t.Errorf("tried %d workers, want 3 (one try, two retries)", total)
	}
}

func TestNoRetryAfterFirstToken(t *testing.T) {
	ws := []*fakeEngine{newFake(8), newFake(8)}
	s := newScheduler(t, Config{}, ws...)
	ws[0].setGen(func(ctx context.Context, _ *llm.Request, emit llm.Emit) (llm.Result, error) {
		_ = emit(llm.Delta{Text: "half", Tokens: 1})
		return llm.Result{FinishReason: llm.FinishError, Usage: llm.Usage{PromptTokens: 5, CompletionTokens: 1}, Err: errors.New("gpu fell off the bus")}, nil
	})
	res, err := s.Generate(context.Background(), new(job(keyFor(t, s, "a"), 0)), discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != llm.FinishError || res.Usage.CompletionTokens != 1 || res.Err == nil {
		t.Errorf("result = %+v, want finish error with the usage so far", res)
	}
	if ws[1].calls.Load() != 0 {
		t.Error("retried after the first token")
	}
	if s.Workers()[0].State != StateEjected {
		t.Error("the worker that failed midway was not ejected")
	}
}

func TestEjectionBackoff(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	w := newFake(8)
	fail := true
	var fmu sync.Mutex
	w.setGen(func(_ context.Context, _ *llm.Request, emit llm.Emit) (llm.Result, error) {
		fmu.Lock()
		defer fmu.Unlock()
		if fail {
			return llm.Result{}, errors.New("down")
		}
		_ = emit(llm.Delta{Text: "ok", Tokens: 1})
		return llm.Result{FinishReason: llm.FinishStop}, nil
	})
	s := newScheduler(t, Config{Now: clock, EjectBase: time.Second, EjectMax: 3 * time.Second, MaxQueueWait: time.Millisecond}, w)

	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err == nil {
			t.Fatal("want an error")
		}
		st := s.Workers()[0]
		if st.State != StateEjected || st.EjectedUntil.Sub(clock()) != want || st.ConsecutiveFailures != i+1 {
			t.Fatalf("failure %d: %+v, want ejected for %v", i+1, st, want)
		}
		// While ejected, the worker is not tried.
		calls := w.calls.Load()
		if _, err := s.Generate(context.Background(), new(job("", 0)), discard); connect.CodeOf(err) != connect.CodeUnavailable || w.calls.Load() != calls {
			t.Fatalf("ejected worker was tried (%v)", err)
		}
		advance(want)
	}
	fmu.Lock()
	fail = false
	fmu.Unlock()
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
		t.Fatal(err)
	}
	if st := s.Workers()[0]; st.State != StateReady || st.ConsecutiveFailures != 0 {
		t.Errorf("after a success: %+v", st)
	}
}

func TestDisconnectedWorkerIsSkipped(t *testing.T) {
	ws := []*fakeEngine{newFake(8), newFake(8)}
	s := newScheduler(t, Config{}, ws...)
	ws[0].setDead(true)
	eventually(t, "connecting", func() bool { return s.Workers()[0].State == StateConnecting })
	for range 10 {
		if _, err := s.Generate(context.Background(), new(job(fmt.Sprint(time.Now().UnixNano()), 0)), discard); err != nil {
			t.Fatal(err)
		}
	}
	if ws[0].calls.Load() != 0 {
		t.Error("a disconnected worker was picked")
	}
	if err := s.Ready(context.Background()); err != nil {
		t.Errorf("ready with one worker up: %v", err)
	}
	ws[1].setDead(true)
	eventually(t, "not ready", func() bool { return s.Ready(context.Background()) != nil })
}

func TestQueuedJobRunsWhenWorkerConnects(t *testing.T) {
	w := newFake(8)
	w.setDead(true)
	s := newScheduler(t, Config{}, w)
	done := make(chan error, 1)
	go func() {
		_, err := s.Generate(context.Background(), new(job("", 0)), discard)
		done <- err
	}()
	eventually(t, "queued", func() bool { return s.queued("m") == 1 })
	w.setDead(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Generate(context.Background(), new(llm.Job{Request: llm.Request{Model: "other"}}), discard); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("unserved model: %v, want unavailable at once", err)
	}
}

func TestDNSReresolution(t *testing.T) {
	var mu sync.Mutex
	ips := []string{"10.0.0.1"}
	engines := map[string]*fakeEngine{}
	s, err := New(Config{
		Workers:         []string{"workers.parley.svc:7000", "10.0.1.9:7000"},
		ResolveInterval: 5 * time.Millisecond,
		Resolve: func(_ context.Context, host string) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			if host != "workers.parley.svc" {
				return nil, fmt.Errorf("unknown host %s", host)
			}
			return append([]string(nil), ips...), nil
		},
		Dial: func(addr string) worker.Engine {
			mu.Lock()
			defer mu.Unlock()
			f := newFake(4)
			engines[addr] = f
			return f
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addrs := func() string {
		var out []string
		for _, w := range s.Workers() {
			out = append(out, w.Address)
		}
		return fmt.Sprint(out)
	}
	if got := addrs(); got != "[10.0.0.1:7000 10.0.1.9:7000]" {
		t.Fatalf("workers = %s", got)
	}
	mu.Lock()
	ips = []string{"10.0.0.1", "10.0.0.2"}
	mu.Unlock()
	eventually(t, "the new worker", func() bool { return addrs() == "[10.0.0.1:7000 10.0.1.9:7000 10.0.0.2:7000]" })

	mu.Lock()
	ips = []string{"10.0.0.2"}
	gone := engines["10.0.0.1:7000"]
	mu.Unlock()
	eventually(t, "the old worker gone", func() bool { return addrs() == "[10.0.1.9:7000 10.0.0.2:7000]" })
	// It leaves the list first; its connection is closed just after.
	eventually(t, "the removed worker's connection closed", func() bool {
		gone.mu.Lock()
		defer gone.mu.Unlock()
		return gone.closed
	})
	if _, err := s.Generate(context.Background(), new(job("x", 0)), discard); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := New(Config{Workers: []string{"no-port"}}, nil); err == nil {
		t.Error("address without a port accepted")
	}
	if _, err := New(Config{Policy: "random"}, nil); err == nil {
		t.Error("unknown policy accepted")
	}
}

// A worker that reports no batch size is not capped at a guess: it takes
// every job while its engine queues nothing, and once the engine reports
// requests waiting, jobs wait in the gateway instead.
func TestUnknownCapacityAdmitsByMeasuredQueueing(t *testing.T) {
	w := newFake(0)
	started := make(chan struct{}, 1000)
	release := make(chan struct{})
	w.setGen(func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return llm.Result{FinishReason: llm.FinishStop}, nil
	})
	s := newScheduler(t, Config{QueueLimit: 10}, w)
	const n = 300 // past the old fixed cap of 64
	errs := make(chan error, n+1)
	for i := range n {
		go func() {
			_, err := s.Generate(context.Background(), new(job(fmt.Sprint("k", i), 0)), discard)
			errs <- err
		}()
	}
	for range n {
		<-started
	}
	// The engine now says it runs 300 and queues 5: it is full.
	w.update(func(l *worker.LoadReport) { l.Running, l.Waiting = n, 5 })
	eventually(t, "report seen", func() bool { return s.Workers()[0].Load.Waiting == 5 })
	go func() {
		_, err := s.Generate(context.Background(), new(job("more", 0)), discard)
		errs <- err
	}()
	eventually(t, "job queued in the gateway", func() bool { return s.queued("m") == 1 })
	// Its queue drains: the waiting job goes to it.
	w.update(func(l *worker.LoadReport) { l.Waiting = 0 })
	<-started
	close(release)
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
