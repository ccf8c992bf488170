package scheduler

import (
	"sync"
	"time"
)

// lagProbe measures how late this process runs what is ready to run: a
// timer due every lagTick, and how much later than due it fires. A gateway
// whose CPUs are saturated — by its own work, or by other processes on the
// box — runs everything late, its generations' reads of their first token
// included, so a time to first token it measures then says as much about
// the gateway as about the worker. The limiter does not count such a sample
// as the worker's queueing (limiter.sample).
//
// It keeps the most late of each lagBucket over the last lagBuckets; Lag is
// the most of them. The probe costs a timer wakeup every lagTick (about 2 ms
// of CPU a second).
type lagProbe struct {
	mu      sync.Mutex
	buckets [lagBuckets]time.Duration
	start   [lagBuckets]int64 // Unix nanoseconds each bucket began
	stop    chan struct{}
	done    chan struct{}
}

const (
	lagTick    = 10 * time.Millisecond
	lagBucket  = 250 * time.Millisecond
	lagBuckets = 8 // two seconds
)

func startLagProbe() *lagProbe {
	p := &lagProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *lagProbe) run() {
	defer close(p.done)
	t := time.NewTimer(lagTick)
	defer t.Stop()
	due := time.Now().Add(lagTick)
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			// (Not the value received: the runtime sends the time the
			// timer was due, whatever time it ran.)
			now := time.Now()
			p.record(now.UnixNano(), now.Sub(due))
			due = time.Now().Add(lagTick)
			t.Reset(lagTick)
		}
	}
}

// record notes a timer that fired late by late at now.
func (p *lagProbe) record(now int64, late time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := (now / int64(lagBucket)) % lagBuckets
	if b := now - now%int64(lagBucket); p.start[i] != b {
		p.start[i], p.buckets[i] = b, 0
	}
	p.buckets[i] = max(p.buckets[i], late)
}

// Lag is how late the process has run a timer over the last two seconds,
// at most.
func (p *lagProbe) Lag() time.Duration {
	now := time.Now().UnixNano()
	p.mu.Lock()
	defer p.mu.Unlock()
	var lag time.Duration
	for i, b := range p.buckets {
		if now-p.start[i] < lagBuckets*int64(lagBucket) {
			lag = max(lag, b)
		}
	}
	return lag
}

func (p *lagProbe) close() {
	close(p.stop)
	<-p.done
}
