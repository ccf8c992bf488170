package scheduler

import (
	"runtime"
	"sync"
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

// The probe reports the lateness of its timer over the last two seconds.
func TestLagProbe(t *testing.T) {
	p := startLagProbe()
	defer p.close()
	time.Sleep(50 * time.Millisecond)
	if lag := p.Lag(); lag > 50*time.Millisecond {
		t.Errorf("lag %v on an idle test process", lag)
	}
	now := time.Now().UnixNano()
	p.record(now, 80*time.Millisecond)
	if lag := p.Lag(); lag < 80*time.Millisecond {
		t.Errorf("lag %v after a timer 80 ms late", lag)
	}
	// Out of the window: forgotten.
	p.mu.Lock()
	for i := range p.start {
		p.start[i] -= 3 * int64(time.Second)
	}
	p.mu.Unlock()
	if lag := p.Lag(); lag >= 80*time.Millisecond {
		t.Errorf("lag %v three seconds later", lag)
	}
}

// A goroutine the network wakes waits behind every runnable goroutine,
// where one a timer wakes runs next: with 50 goroutines spinning on one
// processor, the probe's datagram is read far later than its timer fires,
// and Lag reports that.
func TestLagProbeSeesTheRunQueue(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := startLagProbe()
	defer p.close()
	if p.tx == nil {
		t.Skip("no loopback UDP socket here")
	}
	time.Sleep(50 * time.Millisecond)
	stop := time.Now().Add(400 * time.Millisecond)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for x := 0; time.Now().Before(stop); x++ {
			}
		})
	}
	wg.Wait()
	if lag := p.Lag(); lag < 50*time.Millisecond {
		t.Errorf("lag %v behind 50 spinning goroutines on one processor, want 50 ms or more", lag)
	}
}
