package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A rise in TTFT that the gateway's own lag explains neither cuts the
// limit nor moves the baseline; the same rise with no lag is queueing and
// cuts; a rise past what the lag explains cuts too.
func TestLimiterSetsAsideLaggedSamples(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var l limiter
	now := int64(0)
	for range 20 { // the baseline: 20 ms
		now += int64(ms(10))
		l.sample(now, ms(20), 100, 0)
	}
	// The gateway starved: it runs 60 ms late, TTFTs of up to 260 ms.
	for i := range 200 {
		now += int64(ms(10))
		if ev := l.sample(now, ms(20+i%240), 100, ms(60)); ev != limitLagged {
			t.Fatalf("TTFT %v with 60 ms of lag: %v, want set aside", ms(20+i%240), ev)
		}
	}
	if l.cap() != 0 || l.baseline() != ms(20) {
		t.Fatalf("after lagged samples: cap %d, baseline %v; want none and 20 ms", l.cap(), l.baseline())
	}
	// Lag under a millisecond is timer jitter: the same rise is queueing.
	cut := false
	for range 20 {
		now += int64(ms(10))
		cut = cut || l.sampleProbed(now, ms(400), 100, 500*time.Microsecond, ms(400)) == limitCut
	}
	if !cut || l.cap() != 70 {
		t.Fatalf("400 ms TTFTs with no lag: cut %v to %d, want 70", cut, l.cap())
	}
	// Queueing beyond the lag's share still cuts while the gateway lags.
	now += int64(time.Second)
	if ev := l.sampleProbed(now, 2*time.Second, 70, ms(60), 2*time.Second); ev != limitCut || l.cap() != 49 {
		t.Fatalf("a 2 s TTFT with 60 ms of lag: %v to %d, want a cut to 49", ev, l.cap())
	}
}

// The gateway's lag probe measures only while its figure will be read: a
// generation placed on a worker of no known size (admitted by measured
// queueing, whose first token is read against the lag) wakes it; one on a
// worker that reports its batch size does not.
func TestLagProbeWakesOnlyForAdaptiveWorkers(t *testing.T) {
	var wakes atomic.Int32
	sized, unsized := newFake(8, "sized"), newFake(0, "unsized")
	s := newScheduler(t, Config{QueueLimit: 100, Lag: func() time.Duration { return 0 }, Wake: func() { wakes.Add(1) }}, sized, unsized)
	run := func(model string) {
		t.Helper()
		j := job("", 0)
		j.Request.Model = model
		if _, err := s.Generate(context.Background(), &j, discard); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		run("sized")
	}
	if n := wakes.Load(); n != 0 {
		t.Fatalf("%d wakes for generations on a worker of known size, want 0", n)
	}
	for range 3 {
		run("unsized")
	}
	if n := wakes.Load(); n != 3 {
		t.Fatalf("%d wakes for 3 generations on a worker of no known size, want 3", n)
	}
}
