// Package lag measures how late a process runs what is ready to run: the
// gateway's scheduler reads it so as not to take its own delays for a
// worker's queueing, and a worker reports its own with its load.
package lag

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Probe measures how late this process runs what is ready to run: a
// timer due every tick, and how much later than due it fires; and a
// datagram sent to itself on loopback at each tick, and how long after it
// was sent the goroutine reading it runs. The second is the one that
// counts on a busy gateway: a goroutine a timer wakes runs next on its
// processor, ahead of everything waiting, while one the network wakes (a
// generation reading its upstream's answer) waits its turn behind every
// other runnable goroutine — measured in a burst of 2,000 streams, timers
// ran 15 ms late while reads waited 150 ms and more.
//
// A process whose CPUs are saturated — by its own work, or by other
// processes on the box — runs everything late, its generations' reads of
// their first token included, so a time to first token measured then says
// as much about the process as about the upstream: the scheduler's
// admission limit does not count such a sample as queueing.
//
// It keeps the most late of each bucket over the last nBuckets; Lag is
// the most of them. The probe costs a timer wakeup, a datagram's write and
// its read every tick: about 30 ms of CPU a second on a 2-core VM, 6 ms of
// that the datagram (docs/perf.md). So it ticks only while work that will
// read Lag goes on: Wake (called as such work starts: a generation in a
// worker, one placed on a worker admitted by measured queueing in a
// gateway) keeps it ticking for the next two seconds, the window Lag
// reads, and a process with no such work pays nothing. Where no loopback
// socket can be opened it measures the timer alone.
type Probe struct {
	mu      sync.Mutex
	buckets [nBuckets]time.Duration
	start   [nBuckets]int64 // Unix nanoseconds each bucket began
	stop    chan struct{}
	done    chan struct{}

	woken  atomic.Int64  // Unix nanoseconds of the last Wake
	asleep atomic.Bool   // run waits on wake
	wake   chan struct{} // (capacity 1) ends the sleep

	rx, tx *net.UDPConn  // the datagram's two ends; nil without them
	sent   atomic.Int64  // Unix nanoseconds the datagram in flight was sent; 0: none
	read   chan struct{} // closed when the reader has returned
}

const (
	tick     = 10 * time.Millisecond
	bucket   = 250 * time.Millisecond
	nBuckets = 8 // two seconds
)

// Start starts a probe; Close stops it.
func Start() *Probe {
	p := &Probe{stop: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	p.woken.Store(time.Now().UnixNano()) // a process starting is about to work
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
func (p *Probe) receive() {
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
func (p *Probe) ping(now time.Time) {
	if p.tx == nil || !p.sent.CompareAndSwap(0, now.UnixNano()) {
		return
	}
	if _, err := p.tx.Write([]byte{0}); err != nil {
		p.sent.Store(0)
	}
}

// Wake keeps the probe ticking for the next two seconds (the window Lag
// reads): called as work starts, it costs a clock read and an atomic
// store, and a channel send when the probe was asleep.
func (p *Probe) Wake() {
	p.woken.Store(time.Now().UnixNano())
	if p.asleep.Load() && p.asleep.CompareAndSwap(true, false) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// idle is how long after the last Wake the probe goes on ticking.
const idle = nBuckets * bucket

func (p *Probe) run() {
	defer close(p.done)
	t := time.NewTimer(tick)
	defer t.Stop()
	due := time.Now().Add(tick)
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
			if now.UnixNano()-p.woken.Load() > int64(idle) && !p.sleep() {
				return
			}
			due = time.Now().Add(tick)
			t.Reset(tick)
		}
	}
}

// sleep waits for a Wake; false when the probe was closed meanwhile.
func (p *Probe) sleep() bool {
	p.asleep.Store(true)
	// A Wake between the check and the flag saw the probe awake and sent
	// nothing: look again.
	if time.Now().UnixNano()-p.woken.Load() <= int64(idle) && p.asleep.CompareAndSwap(true, false) {
		return true
	}
	select {
	case <-p.stop:
		return false
	case <-p.wake:
		return true
	}
}

// record notes, at now, a timer or a datagram read that ran late by late.
func (p *Probe) record(now int64, late time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := (now / int64(bucket)) % nBuckets
	if b := now - now%int64(bucket); p.start[i] != b {
		p.start[i], p.buckets[i] = b, 0
	}
	p.buckets[i] = max(p.buckets[i], late)
}

// Lag is how late the process has run a timer or a network read over the
// last two seconds, at most.
func (p *Probe) Lag() time.Duration {
	now := time.Now().UnixNano()
	p.mu.Lock()
	defer p.mu.Unlock()
	var lag time.Duration
	for i, b := range p.buckets {
		if now-p.start[i] < nBuckets*int64(bucket) {
			lag = max(lag, b)
		}
	}
	return lag
}

// Close stops the probe.
func (p *Probe) Close() {
	close(p.stop)
	<-p.done
	if p.rx != nil {
		p.tx.Close()
		p.rx.Close()
		<-p.read
	}
}
