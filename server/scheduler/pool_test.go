package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// blocking makes f's generations wait until the returned release is called
// (each may be released once), reporting each start on started.
func blocking(f *fakeEngine) (started chan struct{}, release func()) {
	started = make(chan struct{}, 100)
	gate := make(chan struct{})
	var once sync.Once
	f.setGen(func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return llm.Result{FinishReason: llm.FinishCancelled}, nil
		}
		_ = emit(llm.Delta{Text: "ok", Tokens: 1})
		return llm.Result{FinishReason: llm.FinishStop}, nil
	})
	return started, func() { once.Do(func() { close(gate) }) }
}

// poolScheduler is a scheduler with pools "east" (primary) and "west", one
// fake worker each.
func poolScheduler(t *testing.T, cfg Config, east, west *fakeEngine) (*Scheduler, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.AddPoolWorker("east", "e1", east)
	s.AddPoolWorker("west", "w1", west)
	return s, reg
}

func spills(reg *prometheus.Registry, from, to, reason string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "parley_scheduler_pool_spills_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsAre(m, map[string]string{"from": from, "to": to, "reason": reason}) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func gauge(t *testing.T, reg *prometheus.Registry, name, pool string) float64 {
	t.Helper()
	return gaugeOf(t, reg, name, map[string]string{"pool": pool})
}

// The primary takes every job while it has room; the reserve none.
func TestPoolPrimaryFirst(t *testing.T) {
	east, west := newFake(4), newFake(4)
	s, reg := poolScheduler(t, Config{}, east, west)
	for range 50 {
		if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
			t.Fatal(err)
		}
	}
	if e, w := east.calls.Load(), west.calls.Load(); e != 50 || w != 0 {
		t.Errorf("east ran %d, west %d; want 50, 0", e, w)
	}
	var pm dto.Metric
	_ = s.metrics.poolPicks.WithLabelValues("east").Write(&pm)
	if v := pm.GetCounter().GetValue(); v != 50 {
		t.Errorf("east picks %v", v)
	}
	if up := gauge(t, reg, "parley_scheduler_pool_up", "west"); up != 1 {
		t.Errorf("west up = %v", up)
	}
	ws := s.Workers()
	if ws[0].Pool != "east" || ws[1].Pool != "west" {
		t.Errorf("pools in Workers: %q, %q", ws[0].Pool, ws[1].Pool)
	}
}

// A job waits SpillWait for a full primary, then runs on the reserve; while
// the primary counts as saturated the next job goes to the reserve at once;
// the primary still gets first pick when it has room, and after the hold
// jobs wait for it again.
func TestPoolSpillsWhenSaturated(t *testing.T) {
	east, west := newFake(1), newFake(4)
	startedEast, releaseEast := blocking(east)
	defer releaseEast()
	s, reg := poolScheduler(t, Config{SpillWait: 80 * time.Millisecond, SpillHold: 400 * time.Millisecond}, east, west)
	go s.Generate(context.Background(), new(job("", 0)), discard)
	<-startedEast
	start := time.Now()
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 80*time.Millisecond || d > time.Second {
		t.Errorf("spilled after %v, want about the 80ms spill wait", d)
	}
	if west.calls.Load() != 1 {
		t.Fatalf("west ran %d", west.calls.Load())
	}
	if v := spills(reg, "east", "west", "saturated"); v != 1 {
		t.Errorf("spills saturated = %v", v)
	}
	if v := gauge(t, reg, "parley_scheduler_pool_saturated", "east"); v != 1 {
		t.Errorf("east saturated gauge = %v", v)
	}
	// Saturated: straight to the reserve.
	start = time.Now()
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 60*time.Millisecond {
		t.Errorf("second spill took %v, want at once", d)
	}
	// The primary frees its slot: it is picked first again, saturated or not.
	releaseEast()
	eventually(t, "east free", func() bool { return s.Workers()[0].InFlight == 0 })
	east.setGen((*newFake(1).gen.Load()))
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
		t.Fatal(err)
	}
	if east.calls.Load() != 2 {
		t.Errorf("east ran %d, want its first pick back", east.calls.Load())
	}
	eventually(t, "hold over", func() bool { return gauge(t, reg, "parley_scheduler_pool_saturated", "east") == 0 })
}

// With the primary down, jobs go to the reserve at once; the jobs queued
// for it move there as it goes; when it is back, jobs return to it.
func TestPoolFailoverWhenPrimaryDown(t *testing.T) {
	east, west := newFake(1), newFake(8)
	startedEast, releaseEast := blocking(east)
	defer releaseEast()
	s, reg := poolScheduler(t, Config{SpillWait: time.Minute}, east, west)
	go s.Generate(context.Background(), new(job("", 0)), discard)
	<-startedEast
	// Two jobs wait for the busy primary (the spill wait is a minute).
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := s.Generate(context.Background(), new(job("", 0)), discard); errs <- err }()
	}
	eventually(t, "two queued", func() bool { return s.queued("m") == 2 })
	if d := gauge(t, reg, "parley_scheduler_pool_queue_depth", "east"); d != 2 {
		t.Errorf("east queue depth %v", d)
	}
	east.setDead(true)
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Second):
			t.Fatal("queued jobs did not move to the reserve within a second")
		}
	}
	start := time.Now()
	for range 10 {
		if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("10 jobs with the primary down took %v", d)
	}
	if w := west.calls.Load(); w != 12 {
		t.Errorf("west ran %d, want 12", w)
	}
	if v := spills(reg, "east", "west", "unhealthy"); v != 12 {
		t.Errorf("spills unhealthy = %v, want 12", v)
	}
	if up := gauge(t, reg, "parley_scheduler_pool_up", "east"); up != 0 {
		t.Errorf("east up = %v", up)
	}
	releaseEast()
	east.setGen((*newFake(1).gen.Load()))
	east.setDead(false)
	eventually(t, "east back", func() bool { return s.Workers()[0].State == StateReady })
	for range 5 {
		if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
			t.Fatal(err)
		}
	}
	if w := west.calls.Load(); w != 12 {
		t.Errorf("west ran %d after the primary came back, want still 12", w)
	}
}

// A job that fails on the primary before its first token is retried on the
// reserve.
func TestPoolRetryGoesToReserve(t *testing.T) {
	east, west := newFake(4), newFake(4)
	east.setGen(func(context.Context, *llm.Request, llm.Emit) (llm.Result, error) {
		return llm.Result{}, context.DeadlineExceeded
	})
	s, _ := poolScheduler(t, Config{}, east, west)
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
		t.Fatal(err)
	}
	if east.calls.Load() != 1 || west.calls.Load() != 1 {
		t.Errorf("east %d, west %d", east.calls.Load(), west.calls.Load())
	}
}

// With every pool down a job is refused at once with unavailable and a
// retry-after, and readiness names each pool.
func TestAllPoolsDown(t *testing.T) {
	east, west := newFake(4), newFake(4)
	s, _ := poolScheduler(t, Config{}, east, west)
	east.setDead(true)
	west.setDead(true)
	eventually(t, "both down", func() bool {
		ws := s.Workers()
		return ws[0].State == StateConnecting && ws[1].State == StateConnecting
	})
	wantFastUnavailable(t, s, "every pool down")
	err := s.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "east: 0 of 1 workers up") || !strings.Contains(err.Error(), "west: 0 of 1") {
		t.Errorf("Ready = %v", err)
	}
	west.setDead(false)
	eventually(t, "west back", func() bool { return s.Ready(context.Background()) == nil })
}

// Pools that serve different models are not spills for each other.
func TestPoolServingOtherModelIsNoSpill(t *testing.T) {
	east, west := newFake(4, "other"), newFake(4)
	s, reg := poolScheduler(t, Config{}, east, west)
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
		t.Fatal(err)
	}
	if v := spills(reg, "east", "west", "unhealthy") + spills(reg, "east", "west", "saturated"); v != 0 {
		t.Errorf("counted %v spills", v)
	}
}

func TestPoolConfig(t *testing.T) {
	for _, bad := range []Config{
		{Workers: []string{"a:1"}, Pools: []Pool{{Name: "x", Workers: []string{"b:1"}}}},
		{Pools: []Pool{{Name: "x", Workers: []string{"a:1"}}, {Name: "y", Workers: []string{"a:1"}}}},
		{Pools: []Pool{{Name: "x", Workers: []string{"a:1"}}, {Name: "x", Workers: []string{"b:1"}}}},
		{Pools: []Pool{{Name: "x", Workers: []string{"nope"}}}},
	} {
		if s, err := New(bad, nil); err == nil {
			s.Close()
			t.Errorf("%+v accepted", bad)
		}
	}
	p, err := ParsePool("us-east= 127.0.0.1:9000,127.0.0.2:9000")
	if err != nil || p.Name != "us-east" || len(p.Workers) != 2 || p.Workers[1] != "127.0.0.2:9000" {
		t.Errorf("ParsePool = %+v, %v", p, err)
	}
	for _, bad := range []string{"", "us-east", "=a:1", "us-east=", "a b=c:1"} {
		if _, err := ParsePool(bad); err == nil {
			t.Errorf("ParsePool(%q) accepted", bad)
		}
	}
}

// The workers of a configured pool are dialed and listed with their pool.
func TestPoolWorkersFromConfig(t *testing.T) {
	dialed := map[string]*fakeEngine{}
	var mu sync.Mutex
	s, err := New(Config{
		Pools: []Pool{{Name: "us-east", Workers: []string{"127.0.0.1:1", "127.0.0.2:1"}}, {Name: "us-west", Workers: []string{"127.0.0.3:1"}}},
		Dial: func(addr string) worker.Engine {
			mu.Lock()
			defer mu.Unlock()
			f := newFake(4)
			dialed[addr] = f
			return f
		},
	}, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := map[string]string{}
	for _, w := range s.Workers() {
		got[w.Address] = w.Pool
	}
	if got["127.0.0.1:1"] != "us-east" || got["127.0.0.2:1"] != "us-east" || got["127.0.0.3:1"] != "us-west" {
		t.Errorf("pools = %v", got)
	}
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if dialed["127.0.0.3:1"].calls.Load() != 0 {
		t.Error("the reserve ran a job while the primary was idle")
	}
}
