package scheduler

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// lagProbe measures how late this process runs what is ready to run: a
// timer due every lagTick, and how much later than due it fires; and a
// datagram sent to itself on loopback at each tick, and how long after it
// was sent the goroutine reading it runs. The second is the one that
// counts on a busy gateway: a goroutine a timer wakes runs next on its
// processor, ahead of everything waiting, while one the network wakes (a
// generation reading its upstream's answer) waits its turn behind every
// other runnable goroutine — measured in a burst of 2,000 streams, timers
// ran 15 ms late while reads waited 150 ms and more. A gateway
// whose CPUs are saturated — by its own work, or by other processes on the
// box — runs everything late, its generations' reads of their first token
// included, so a time to first token it measures then says as much about
// the gateway as about the worker. The limiter does not count such a sample
// as the worker's queueing (limiter.sample).
//
// It keeps the most late of each lagBucket over the last lagBuckets; Lag is
// the most of them. The probe costs a timer wakeup and a datagram every
// lagTick (a few ms of CPU a second). Where no loopback socket can be
// opened it measures the timer alone.
type lagProbe struct {
	mu      sync.Mutex
	buckets [lagBuckets]time.Duration
	start   [lagBuckets]int64 // Unix nanoseconds each bucket began
	stop    chan struct{}
	done    chan struct{}

	rx, tx *net.UDPConn  // the datagram's two ends; nil without them
	sent   atomic.Int64  // Unix nanoseconds the datagram in flight was sent; 0: none
	read   chan struct{} // closed when the reader has returned
}

const (
	lagTick    = 10 * time.Millisecond
	lagBucket  = 250 * time.Millisecond
	lagBuckets = 8 // two seconds
)

func startLagProbe() *lagProbe {
	p := &lagProbe{stop: make(chan struct{}), done: make(chan struct{})}
	if rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err == nil {
		if tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr)); err == nil {
			p.rx, p.tx, p.read = rx, tx, make(chan struct{})
			go p.receive()
		} else {
			rx.Close()
		}
	}
	go p.run()
	return p
}

// receive reads the datagrams, recording how long after its sending each
// was read: how long a goroutine the network woke waited to run.
func (p *lagProbe) receive() {
	defer close(p.read)
	var buf [1]byte
	for {
		if _, _, err := p.rx.ReadFromUDP(buf[:]); err != nil {
			return
		}
		now := time.Now()
		if sent := p.sent.Swap(0); sent != 0 {
			p.record(now.UnixNano(), time.Duration(now.UnixNano()-sent))
		}
	}
}

// ping sends the datagram, unless the last is still unread (that wait is
// then what the next reading records).
func (p *lagProbe) ping(now time.Time) {
	if p.tx == nil || !p.sent.CompareAndSwap(0, now.UnixNano()) {
		return
	}
	if _, err := p.tx.Write([]byte{0}); err != nil {
		p.sent.Store(0)
	}
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
			p.ping(now)
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
	if p.rx != nil {
		p.tx.Close()
		p.rx.Close()
		<-p.read
	}
}
