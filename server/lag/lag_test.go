package lag

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The probe reports the lateness of its timer over the last two seconds.
func TestProbe(t *testing.T) {
	p := Start()
	defer p.Close()
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
func TestProbeSeesTheRunQueue(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := Start()
	defer p.Close()
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

// An idle process's probe sleeps (no timer, no datagram) and Wake starts
// it again.
func TestProbeSleepsWhenIdle(t *testing.T) {
	p := Start()
	defer p.Close()
	p.woken.Store(time.Now().Add(-time.Hour).UnixNano()) // idle since long ago
	deadline := time.Now().Add(time.Second)
	for !p.asleep.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the probe of an idle process still ticks after a second")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ticks := func() (n int64) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range p.start {
			n += s
		}
		return n
	}
	before := ticks()
	time.Sleep(3 * bucket) // ticking, it would have opened new buckets
	if ticks() != before || !p.asleep.Load() {
		t.Fatal("the probe recorded while asleep")
	}
	p.Wake()
	deadline = time.Now().Add(time.Second)
	for ticks() == before {
		if time.Now().After(deadline) {
			t.Fatal("no tick a second after Wake")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if p.asleep.Load() {
		t.Error("asleep after Wake")
	}
}

// Wake racing the probe's falling asleep never leaves it asleep while
// woken.
func TestProbeWakeRace(t *testing.T) {
	p := Start()
	defer p.Close()
	for range 100 {
		p.woken.Store(time.Now().Add(-time.Hour).UnixNano())
		time.Sleep(time.Duration(rand.IntN(int(2 * tick))))
		p.Wake()
		time.Sleep(2 * tick)
		if p.asleep.Load() {
			t.Fatal("asleep right after a Wake")
		}
	}
}
