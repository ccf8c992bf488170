package scheduler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fakeClock is a settable Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestWaitWindowP95(t *testing.T) {
	const slot = int64(5 * time.Second)
	now := int64(1_000 * time.Second)
	var w waitWindow
	for range 94 {
		w.record(now, slot, 0)
	}
	for range 6 {
		w.record(now, slot, 6) // over 5 s: the 7.5 s bucket
	}
	if v, n := w.p95(now, slot); v != 7.5 || n != 100 {
		t.Errorf("6 of 100 at 6 s: p95 %v of %d, want 7.5 of 100", v, n)
	}
	var w2 waitWindow
	for range 96 {
		w2.record(now, slot, 0)
	}
	for range 4 {
		w2.record(now, slot, 6)
	}
	if v, _ := w2.p95(now, slot); v != 0 {
		t.Errorf("4 of 100 at 6 s: p95 %v, want 0", v)
	}
	w2.record(now, slot, 1e9)
	// Spread over the window, then past it.
	later := now + 11*slot
	if _, n := w2.p95(later, slot); n != 101 {
		t.Errorf("11 slots on: %d samples, want all 101", n)
	}
	if _, n := w2.p95(now+waitSlots*slot, slot); n != 0 {
		t.Errorf("a window on: %d samples, want none", n)
	}
	// An over-long wait reads as the last finite bound.
	var w3 waitWindow
	w3.record(now, slot, 1e9)
	if v, _ := w3.p95(now, slot); v != 120 {
		t.Errorf("one huge wait reads %v, want 120", v)
	}
}

// The scaling rule (docs/scaling.md) on one pool of two one-slot workers, on a fake clock:
// busy then idle for a window → one fewer; a job waiting past 5 s → one
// more, until that wait leaves the window; the metrics say the same.
func TestScaleRecommendation(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	reg := prometheus.NewRegistry()
	s, err := New(Config{Now: clock.Now, Registerer: reg, ScaleWindow: time.Minute, ScaleUpWait: 5 * time.Second, ScaleDownWait: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	a, b := newFake(1), newFake(1)
	s.AddPoolWorker("gpu", "a", a)
	s.AddPoolWorker("gpu", "b", b)
	rec := func() ScaleSignal {
		t.Helper()
		sigs := s.ScaleSignals()
		if len(sigs) != 1 || sigs[0].Pool != "gpu" {
			t.Fatalf("signals %+v", sigs)
		}
		return sigs[0]
	}
	eventually(t, "both ready", func() bool { return rec().Ready == 2 })
	if sig := rec(); sig.Recommended != 2 || sig.Idle != 0 {
		t.Errorf("just started: %+v, want 2 recommended, none idle yet", sig)
	}
	// A job at once: a zero wait.
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
		t.Fatal(err)
	}
	if sig := rec(); sig.Wait["m"] != 0 || sig.Recommended != 2 {
		t.Errorf("after a job placed at once: %+v", sig)
	}
	clock.Advance(61 * time.Second)
	if sig := rec(); sig.Recommended != 1 || sig.Idle != 2 {
		t.Errorf("idle for a window: %+v, want 1 recommended, 2 idle", sig)
	}

	// Both busy, a third job waits 6 s.
	startedA, releaseA := blocking(a)
	startedB, releaseB := blocking(b)
	defer releaseA()
	defer releaseB()
	done := make(chan error, 3)
	for range 2 {
		go func() { _, err := s.Generate(context.Background(), new(job("", 0)), discard); done <- err }()
	}
	<-startedA
	<-startedB
	go func() { _, err := s.Generate(context.Background(), new(job("", 0)), discard); done <- err }()
	eventually(t, "a job queued", func() bool { return s.queued("m") == 1 })
	if sig := rec(); sig.Recommended != 2 {
		t.Errorf("busy, a job just queued: %+v, want 2", sig)
	}
	clock.Advance(6 * time.Second)
	if sig := rec(); sig.Wait["m"] < 6*time.Second || sig.Recommended != 3 || sig.Idle != 0 {
		t.Errorf("a job waiting 6 s: %+v, want 3 recommended", sig)
	}
	if v := gaugeOf(t, reg, "parley_scheduler_pool_workers_recommended", map[string]string{"pool": "gpu"}); v != 3 {
		t.Errorf("recommended gauge %v", v)
	}
	if v := gaugeOf(t, reg, "parley_scheduler_queue_wait_recent_seconds", map[string]string{"pool": "gpu", "model": "m"}); v < 6 {
		t.Errorf("recent wait gauge %v, want ≥ 6", v)
	}
	releaseA()
	releaseB()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// The 6 s wait stays in the window: still one more.
	if sig := rec(); sig.Recommended != 3 || sig.Wait["m"] != 7500*time.Millisecond {
		t.Errorf("the long wait served: %+v, want 3 recommended, the 7.5 s bucket", sig)
	}
	clock.Advance(30 * time.Second)
	if sig := rec(); sig.Recommended != 3 {
		t.Errorf("half a window on: %+v", sig)
	}
	clock.Advance(31 * time.Second)
	if sig := rec(); sig.Recommended != 1 || len(sig.Wait) != 0 {
		t.Errorf("a quiet window on: %+v, want 1", sig)
	}
}

// A job refused because the queue is full counts as a wait past the
// scale-up bound.
func TestScaleRefusalCountsAsLongWait(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	s, err := New(Config{Now: clock.Now, QueueLimit: 1, MaxQueueWait: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	a := newFake(1)
	started, release := blocking(a)
	defer release()
	s.AddPoolWorker("gpu", "a", a)
	go s.Generate(context.Background(), new(job("", 0)), discard)
	<-started
	go s.Generate(context.Background(), new(job("", 0)), discard)
	eventually(t, "a job queued", func() bool { return s.queued("m") == 1 })
	if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err == nil {
		t.Fatal("a third job got in past a queue of one")
	}
	sig := s.ScaleSignals()[0]
	if sig.Wait["m"] < 10*time.Second || sig.Recommended != 2 {
		t.Errorf("after a queue_full refusal (MaxQueueWait 1 s): %+v, want a wait ≥ 2×5 s and 2 recommended", sig)
	}
}

// gaugeOf reads the gauge name with exactly labels from reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsAre(m, labels) {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

func labelsAre(m *dto.Metric, want map[string]string) bool {
	if len(m.GetLabel()) != len(want) {
		return false
	}
	for _, l := range m.GetLabel() {
		if want[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return true
}
