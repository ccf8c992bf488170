// Package memlimit is the in-process store.Limiter: token buckets in a
// mutex-guarded map, exact to the nanosecond with 128-bit integer arithmetic,
// for the embedded single-gateway mode. Several gateways share limits through
// the Redis limiter instead.
package memlimit

import (
	"context"
	"math/bits"
	"sync"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// DefaultSweepInterval is how often, in the callers' clock, idle buckets are
// dropped when New is given no interval.
const DefaultSweepInterval = time.Minute

// bucket is one token bucket. Its level is tokens + frac/window units; frac is
// always below window, and zero when the bucket is full.
type bucket struct {
	limit  int64
	window int64 // nanoseconds
	tokens int64
	frac   uint64
	last   int64 // unix nanoseconds of the last refill
}

// Limiter is an in-process store.Limiter. The zero value is not usable; call
// New.
type Limiter struct {
	mu        sync.Mutex
	buckets   map[string]bucket
	sweepEach time.Duration
	lastSweep time.Time
	version   uint64 // counts the calls that changed a bucket, for Persist
}

var _ store.Limiter = (*Limiter)(nil)

// New returns an empty Limiter. Buckets that are full are forgotten every
// sweepInterval (of the time passed to its methods), since a missing bucket
// behaves exactly like a full one; zero means DefaultSweepInterval.
func New(sweepInterval time.Duration) *Limiter {
	if sweepInterval <= 0 {
		sweepInterval = DefaultSweepInterval
	}
	return &Limiter{buckets: make(map[string]bucket), sweepEach: sweepInterval}
}

// Len returns the number of buckets held, for tests and metrics.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

func validate(key string, limit int64, window time.Duration, n int64) error {
	return store.CheckTake(key, limit, window, n)
}

// current returns a copy of the bucket for key refilled to now, creating a
// full one if it does not exist. The caller holds l.mu.
func (l *Limiter) current(now int64, key string, limit int64, window time.Duration) bucket {
	b, ok := l.buckets[key]
	if !ok {
		return bucket{limit: limit, window: int64(window), tokens: limit, last: now}
	}
	c := b
	if c.limit != limit || c.window != int64(window) {
		// New parameters (a tier change): keep the whole units, capped.
		c.limit, c.window, c.frac = limit, int64(window), 0
		if c.tokens > limit {
			c.tokens = limit
		}
	}
	c.refill(now)
	return c
}

func (b *bucket) full() bool { return b.tokens >= b.limit }

func (b *bucket) fill() { b.tokens, b.frac = b.limit, 0 }

// refill adds the units accrued since b.last. Time never moves backwards.
func (b *bucket) refill(now int64) {
	if now <= b.last {
		return
	}
	e := now - b.last
	b.last = now
	if b.full() || e >= b.window {
		b.fill()
		return
	}
	// (e·limit + frac) / window units, in 128 bits: e < window, so the
	// quotient is at most limit and fits.
	hi, lo := bits.Mul64(uint64(e), uint64(b.limit))
	var carry uint64
	lo, carry = bits.Add64(lo, b.frac, 0)
	hi += carry
	q, r := bits.Div64(hi, lo, uint64(b.window))
	if q >= uint64(b.limit-b.tokens) {
		b.fill()
		return
	}
	b.tokens += int64(q)
	b.frac = r
}

// wait returns how long until b holds n units (n <= limit).
func (b *bucket) wait(n int64) time.Duration {
	if b.tokens >= n {
		return 0
	}
	// ceil(((n-tokens)·window − frac) / limit) nanoseconds, in 128 bits.
	hi, lo := bits.Mul64(uint64(n-b.tokens), uint64(b.window))
	var borrow uint64
	lo, borrow = bits.Sub64(lo, b.frac, 0)
	hi -= borrow
	q, r := bits.Div64(hi, lo, uint64(b.limit))
	if r != 0 {
		q++
	}
	return time.Duration(q)
}

func (b *bucket) state(now time.Time) store.LimitState {
	return store.LimitState{Remaining: b.tokens, ResetAt: now.Add(b.wait(b.limit))}
}

// Take implements store.Limiter.
func (l *Limiter) Take(_ context.Context, now time.Time, takes []store.Take) (store.Decision, error) {
	for _, t := range takes {
		if err := validate(t.Key, t.Limit, t.Window, t.N); err != nil {
			return store.Decision{}, err
		}
	}
	ns := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maybeSweep(now)

	// Refilled working copies, one per distinct key (takes are few, so a
	// linear search beats a map).
	var buf [4]entry
	work := buf[:0]
	find := func(t store.Take) int {
		for i := range work {
			if work[i].key == t.Key {
				return i
			}
		}
		c := l.current(ns, t.Key, t.Limit, t.Window)
		work = append(work, entry{key: t.Key, orig: c, b: c})
		return len(work) - 1
	}
	d := store.Decision{Allowed: true, Denied: -1}
	idx := make([]int, len(takes))
	for i, t := range takes {
		idx[i] = find(t)
		e := &work[idx[i]]
		e.need += t.N
		switch {
		case t.N > e.b.limit || e.need > e.b.limit:
			d.Impossible = true
		case e.b.tokens >= t.N:
			e.b.tokens -= t.N
			continue
		}
		if d.Allowed {
			d.Allowed, d.Denied = false, i
		}
	}

	d.States = make([]store.LimitState, len(takes))
	if !d.Allowed {
		for i := range takes {
			e := &work[idx[i]]
			d.States[i] = e.orig.state(now)
		}
		if !d.Impossible {
			for i := range work {
				d.RetryAfter = max(d.RetryAfter, work[i].orig.wait(work[i].need))
			}
		}
		return d, nil
	}
	for i := range work {
		e := &work[i]
		if e.b.full() {
			e.b.frac = 0
		}
		l.buckets[e.key] = e.b
	}
	l.version++
	for i := range takes {
		d.States[i] = work[idx[i]].b.state(now)
	}
	return d, nil
}

// entry is a bucket being decided on by Take.
type entry struct {
	key  string
	orig bucket // refilled, before this call's takes
	b    bucket // after this call's takes
	need int64  // total asked of this bucket
}

// Refund implements store.Limiter.
func (l *Limiter) Refund(_ context.Context, now time.Time, key string, limit int64, window time.Duration, n int64) (store.LimitState, error) {
	if err := validate(key, limit, window, n); err != nil {
		return store.LimitState{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maybeSweep(now)
	b := l.current(now.UnixNano(), key, limit, window)
	if n >= b.limit-b.tokens {
		b.fill()
	} else {
		b.tokens += n
	}
	if _, ok := l.buckets[key]; ok {
		l.buckets[key] = b
		l.version++
	}
	return b.state(now), nil
}

// Peek implements store.Limiter.
func (l *Limiter) Peek(_ context.Context, now time.Time, key string, limit int64, window time.Duration) (store.LimitState, error) {
	if err := validate(key, limit, window, 0); err != nil {
		return store.LimitState{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.current(now.UnixNano(), key, limit, window)
	return b.state(now), nil
}

// maybeSweep drops buckets that are full at now, at most once per sweep
// interval. The caller holds l.mu.
func (l *Limiter) maybeSweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.sweepEach {
		return
	}
	l.lastSweep = now
	ns := now.UnixNano()
	for k, c := range l.buckets {
		c.refill(ns)
		if c.full() {
			delete(l.buckets, k)
		}
	}
}
