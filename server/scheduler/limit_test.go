package scheduler

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// sampleProbed feeds l a sample and, when it raises a suspicion, the TTFT
// of the probe sent for it (the probe answering at once).
func (l *limiter) sampleProbed(now int64, ttft time.Duration, load int, lag, probe time.Duration) limitEvent {
	ev := l.sample(now, ttft, load, lag)
	if ev == limitSuspect {
		return l.probed(now, probe, load, lag, false)
	}
	return ev
}

func TestLimiterRules(t *testing.T) {
	var l limiter
	now := int64(0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Steady low TTFT at any load: no cap.
	for range 100 {
		now += int64(ms(10))
		if l.sample(now, ms(20), 500, 0) != limitKept {
			t.Fatal("a steady TTFT changed the limit")
		}
	}
	if l.cap() != 0 {
		t.Fatalf("capped at %d with no queueing measured", l.cap())
	}
	// TTFT climbs far over the 20 ms baseline: one cut, to 70 % of the load.
	cuts := 0
	for range 20 {
		now += int64(ms(1))
		if l.sampleProbed(now, ms(400), 300, 0, ms(400)) == limitCut {
			cuts++
		}
	}
	if cuts != 1 || l.cap() != 210 {
		t.Fatalf("%d cuts to %d within one cut interval, want 1 to 210", cuts, l.cap())
	}
	// Still high a cut interval later: cut again, from the limit.
	now += int64(time.Second)
	if l.sampleProbed(now, ms(400), 300, 0, ms(400)) != limitCut || l.cap() != 147 {
		t.Fatalf("second cut to %d, want 147", l.cap())
	}
	// TTFT back to its baseline while the limit binds: it grows, by about
	// one slot per round of limit generations.
	for range 147 {
		now += int64(ms(1))
		l.sample(now, ms(20), 147, 0)
	}
	if c := l.cap(); c < 155 || c > 160 {
		t.Errorf("after a round of low TTFT the limit is %d, want about 147+147/16", c)
	}
	// Not binding (load well under it): no growth.
	c := l.cap()
	for range 1000 {
		now += int64(ms(1))
		l.sample(now, ms(20), 10, 0)
	}
	if l.cap() != c {
		t.Errorf("grew from %d to %d while not binding", c, l.cap())
	}
	if l.baseline() != ms(20) {
		t.Errorf("baseline %v", l.baseline())
	}
}

// A worker with 20 slots that reports no batch size and queues the rest
// inside (as an upstream relay does): the gateway admits all of 200
// concurrent clients at first, measures the TTFT rise, caps the worker near
// its slots, and holds the later jobs in its own queue — none is refused,
// and it logs once what it assumed.
func TestUnknownCapacityAIMD(t *testing.T) {
	const slots, clients, perClient = 20, 200, 8
	w := newFake(0)
	sem := make(chan struct{}, slots)
	var running, peak atomic.Int32
	w.setGen(func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		sem <- struct{}{} // queued inside the worker until a slot frees
		defer func() { <-sem }()
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(2 * time.Millisecond) // prefill
		if err := emit(llm.Delta{Text: "ok", Tokens: 1}); err != nil {
			return llm.Result{FinishReason: llm.FinishCancelled}, nil
		}
		time.Sleep(20 * time.Millisecond) // decode
		return llm.Result{FinishReason: llm.FinishStop}, nil
	})
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	// No lag: on a loaded box the real probe would set the samples aside
	// (TestLimiterSetsAsideLaggedSamples) and the cap would come later.
	s, err := New(Config{QueueLimit: 1000, Lag: func() time.Duration { return 0 }}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.AddWorker("relay", w)
	var wg sync.WaitGroup
	var failed atomic.Int32
	var lateQueued atomic.Int64 // TTFT as the gateway sees it, second half
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				start := time.Now()
				first := time.Duration(0)
				_, err := s.Generate(context.Background(), new(job(fmt.Sprint("k", c, i), 0)), func(llm.Delta) error {
					first = time.Since(start)
					return nil
				})
				if err != nil {
					failed.Add(1)
				}
				if i >= perClient/2 {
					lateQueued.Add(int64(first))
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d jobs refused", n)
	}
	ws := s.Workers()[0]
	t.Logf("admission limit %d, peak running %d, mean TTFT of the later jobs %v", ws.AdmissionLimit, peak.Load(),
		time.Duration(lateQueued.Load()/int64(clients*perClient/2)))
	if ws.AdmissionLimit <= 0 || ws.AdmissionLimit > 4*slots {
		t.Errorf("admission limit %d, want a cap near the worker's %d slots", ws.AdmissionLimit, slots)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(logs.String(), "assuming no fixed cap"); n != 1 {
		t.Errorf("logged what it assumed %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "admission limit lowered") {
		t.Error("no log of the limit")
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Requests slow to start by themselves (a long prompt's prefill, here
// 100 ms) are not queueing: the limiter suspects it, and the probe — one
// token of "Hi", answered at once — clears it; the same level is no longer
// suspect for the window. A rise well over that level, with a probe as
// slow, is queueing and cuts.
func TestLimiterProbeTellsSlowRequestsFromQueueing(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var l limiter
	now := int64(0)
	for range 5 { // short prompts first: a 1 ms baseline
		now += int64(ms(10))
		l.sample(now, ms(1), 1, 0)
	}
	suspects, clears := 0, 0
	for range 500 {
		now += int64(ms(2))
		switch l.sampleProbed(now, ms(100), 300, 0, ms(1)) {
		case limitCleared:
			clears++
		case limitCut:
			t.Fatal("cut for requests slow by themselves, the probe fast")
		}
		if l.probing {
			suspects++
		}
	}
	if clears != 1 || l.cap() != 0 {
		t.Fatalf("%d clears, cap %d; want one probe that cleared and no cap", clears, l.cap())
	}
	// Queueing on top of that level: the probe waits too.
	cut := false
	for range 50 {
		now += int64(ms(2))
		cut = cut || l.sampleProbed(now, ms(600), 300, 0, ms(400)) == limitCut
	}
	if !cut || l.cap() != 210 {
		t.Fatalf("600 ms TTFTs with a 400 ms probe: cut %v to %d, want 210", cut, l.cap())
	}
	// A worker that refuses the probe as full is queueing whatever its TTFT.
	now += int64(5 * time.Second)
	if ev := l.sample(now+int64(ms(1)), ms(2000), 210, 0); ev != limitSuspect {
		t.Fatalf("a 2 s TTFT: %v, want a suspicion", ev)
	}
	if ev := l.probed(now+int64(ms(2)), 0, 210, 0, true); ev != limitCut || l.cap() != 147 {
		t.Fatalf("a probe refused as overloaded: %v to %d, want a cut to 147", ev, l.cap())
	}
}

// A worker that reports no batch size and never queues, whose requests
// take 100 ms to their first token (long prompts) after short ones set a
// 1 ms baseline: a burst of 300 is admitted whole, no limit is set, and
// the probes it sent came back clear.
func TestUnknownCapacitySlowRequestsNotCut(t *testing.T) {
	w := newFake(0)
	var probes atomic.Int32
	w.setGen(func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		text := req.Messages[0].Parts[0].Text
		switch {
		case strings.HasPrefix(req.ID, "probe-"):
			probes.Add(1)
		case text == "long":
			time.Sleep(100 * time.Millisecond) // prefill
		}
		if err := emit(llm.Delta{Text: "ok", Tokens: 1}); err != nil {
			return llm.Result{FinishReason: llm.FinishCancelled}, nil
		}
		return llm.Result{FinishReason: llm.FinishStop}, nil
	})
	reg := prometheus.NewRegistry()
	// No lag: on a loaded box the real probe would set the samples aside
	// (TestLimiterSetsAsideLaggedSamples), and no probe would be sent.
	s, err := New(Config{QueueLimit: 1000, Registerer: reg, Lag: func() time.Duration { return 0 }}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.AddWorker("w", w)
	gen := func(text string) error {
		j := llm.Job{Request: llm.Request{Model: "m", MaxTokens: 10, Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: text}}}}}}
		_, err := s.Generate(context.Background(), &j, discard)
		return err
	}
	for range 5 {
		if err := gen("short"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 300 {
		wg.Go(func() {
			if gen("long") != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of 300 refused", n)
	}
	if l := s.Workers()[0].AdmissionLimit; l != 0 {
		t.Errorf("admission limit %d for a worker that never queued", l)
	}
	if probes.Load() == 0 {
		t.Error("no probe was sent")
	}
	eventually(t, "a probe counted clear", func() bool {
		var m dto.Metric
		return s.metrics.probes.WithLabelValues("clear").Write(&m) == nil && m.GetCounter().GetValue() >= 1
	})
	if l := s.Workers()[0].AdmissionLimit; l != 0 {
		t.Errorf("admission limit %d after the probes", l)
	}
}

// A worker on a box short of CPU reports its own lag with its load: the
// rise it adds to every TTFT, the probe's included, is set aside — the
// gateway itself not lagging — and the limit stays off.
func TestUnknownCapacityWorkersOwnLag(t *testing.T) {
	w := newFake(0)
	var slow atomic.Bool
	w.setGen(func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		if slow.Load() {
			time.Sleep(80 * time.Millisecond) // the worker's CPUs saturated: everything waits
		}
		if err := emit(llm.Delta{Text: "ok", Tokens: 1}); err != nil {
			return llm.Result{FinishReason: llm.FinishCancelled}, nil
		}
		return llm.Result{FinishReason: llm.FinishStop}, nil
	})
	s := newScheduler(t, Config{QueueLimit: 1000, Lag: func() time.Duration { return 0 }}, w)
	for range 5 {
		if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
			t.Fatal(err)
		}
	}
	w.update(func(l *worker.LoadReport) { l.Lag = 40 * time.Millisecond })
	eventually(t, "the worker's lag seen", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.members) == 1 && s.members[0].report.Lag == 40*time.Millisecond
	})
	slow.Store(true)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if _, err := s.Generate(context.Background(), new(job("", 0)), discard); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if l := s.Workers()[0].AdmissionLimit; l != 0 {
		t.Errorf("admission limit %d for a worker whose own lag explains its TTFT", l)
	}
	var m dto.Metric
	if s.metrics.lagged.Write(&m); m.GetCounter().GetValue() == 0 {
		t.Error("no sample set aside as lag")
	}
}
