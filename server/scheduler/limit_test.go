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

	"github.com/parleyhq/parley/server/llm"
)

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
		if l.sample(now, ms(400), 300, 0) == limitCut {
			cuts++
		}
	}
	if cuts != 1 || l.cap() != 210 {
		t.Fatalf("%d cuts to %d within one cut interval, want 1 to 210", cuts, l.cap())
	}
	// Still high a cut interval later: cut again, from the limit.
	now += int64(time.Second)
	if l.sample(now, ms(400), 300, 0) != limitCut || l.cap() != 147 {
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
	w.setGen(func(ctx context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
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
	s, err := New(Config{QueueLimit: 1000}, logger)
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
				_, err := s.Generate(context.Background(), job(fmt.Sprint("k", c, i), 0), func(llm.Delta) error {
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
