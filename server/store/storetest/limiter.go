package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

func take(t *testing.T, l store.Limiter, now time.Time, takes ...store.Take) store.Decision {
	t.Helper()
	d, err := l.Take(t.Context(), now, takes)
	noErr(t, err, "Take")
	if len(d.States) != len(takes) {
		t.Fatalf("Take returned %d states for %d takes", len(d.States), len(takes))
	}
	if d.Allowed != (d.Denied == -1) {
		t.Fatalf("Decision Allowed %v with Denied %d", d.Allowed, d.Denied)
	}
	return d
}

func peek(t *testing.T, l store.Limiter, now time.Time, key string, limit int64, window time.Duration) store.LimitState {
	t.Helper()
	st, err := l.Peek(t.Context(), now, key, limit, window)
	noErr(t, err, "Peek")
	return st
}

// TestLimiter is the conformance suite for store.Limiter.
func TestLimiter(t *testing.T, newLimiter NewLimiter) {
	t.Run("ExactBoundary", func(t *testing.T) {
		l := newLimiter(t)
		one := store.Take{Key: "req:u1", Limit: 10, Window: time.Second, N: 1}
		for i := range 10 {
			d := take(t, l, t0, one)
			if !d.Allowed || d.States[0].Remaining != int64(9-i) {
				t.Fatalf("take %d: %+v", i, d)
			}
		}
		d := take(t, l, t0, one)
		if d.Allowed || d.Denied != 0 || d.Impossible || d.RetryAfter != 100*time.Millisecond {
			t.Fatalf("11th take: %+v", d)
		}
		if d.States[0].Remaining != 0 || !d.States[0].ResetAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("state when empty: %+v", d.States[0])
		}
		d = take(t, l, t0.Add(100*time.Millisecond-1), one)
		if d.Allowed || d.RetryAfter != 1 {
			t.Fatalf("1 ns early: %+v", d)
		}
		d = take(t, l, t0.Add(100*time.Millisecond), one)
		if !d.Allowed || d.States[0].Remaining != 0 {
			t.Fatalf("exactly on time: %+v", d)
		}
		if d := take(t, l, t0.Add(100*time.Millisecond), one); d.Allowed {
			t.Fatal("a second take at the same instant was allowed")
		}
	})

	t.Run("FractionalRate", func(t *testing.T) {
		l := newLimiter(t)
		// 3 per second: one unit every 333,333,333.33… ns.
		tk := store.Take{Key: "k", Limit: 3, Window: time.Second, N: 3}
		if d := take(t, l, t0, tk); !d.Allowed {
			t.Fatalf("drain: %+v", d)
		}
		tk.N = 1
		d := take(t, l, t0, tk)
		if d.Allowed || d.RetryAfter != 333_333_334 {
			t.Fatalf("empty: %+v", d)
		}
		if d := take(t, l, t0.Add(333_333_333), tk); d.Allowed {
			t.Fatal("allowed before the unit accrued")
		}
		if d := take(t, l, t0.Add(333_333_334), tk); !d.Allowed {
			t.Fatalf("refused once the unit accrued: %+v", d)
		}
		// Two more units accrue at exactly 1 s after the drain (no drift).
		if st := peek(t, l, t0.Add(time.Second-1), "k", 3, time.Second); st.Remaining != 1 {
			t.Fatalf("remaining at 1s-1ns = %d, want 1", st.Remaining)
		}
		if st := peek(t, l, t0.Add(time.Second), "k", 3, time.Second); st.Remaining != 2 {
			t.Fatalf("remaining at 1s = %d, want 2", st.Remaining)
		}
	})

	t.Run("RefillOverTime", func(t *testing.T) {
		l := newLimiter(t)
		const day = 24 * time.Hour
		tk := store.Take{Key: "tokens:u1", Limit: 10_000_000, Window: day, N: 10_000_000}
		if d := take(t, l, t0, tk); !d.Allowed || d.States[0].Remaining != 0 || !d.States[0].ResetAt.Equal(t0.Add(day)) {
			t.Fatalf("drain: %+v", d)
		}
		if st := peek(t, l, t0.Add(day/2), tk.Key, tk.Limit, day); st.Remaining != 5_000_000 || !st.ResetAt.Equal(t0.Add(day)) {
			t.Fatalf("half a day later: %+v", st)
		}
		if st := peek(t, l, t0.Add(day/4), tk.Key, tk.Limit, day); st.Remaining != 2_500_000 {
			t.Fatalf("a quarter day later: %+v", st)
		}
		if st := peek(t, l, t0.Add(3*day), tk.Key, tk.Limit, day); st.Remaining != tk.Limit || st.ResetAt.After(t0.Add(3*day)) {
			t.Fatalf("long after: %+v", st)
		}
		// A fresh key is full.
		if st := peek(t, l, t0, "fresh", 7, time.Minute); st.Remaining != 7 || st.ResetAt.After(t0) {
			t.Fatalf("fresh key: %+v", st)
		}
		// A clock that steps back does not mint units.
		if st := peek(t, l, t0.Add(-time.Hour), tk.Key, tk.Limit, day); st.Remaining != 0 {
			t.Fatalf("clock stepped back: %+v", st)
		}
	})

	t.Run("Refund", func(t *testing.T) {
		l := newLimiter(t)
		ctx := t.Context()
		tk := store.Take{Key: "out:u1", Limit: 10, Window: time.Minute, N: 8}
		take(t, l, t0, tk)
		st, err := l.Refund(ctx, t0, tk.Key, 10, time.Minute, 5)
		noErr(t, err, "Refund")
		if st.Remaining != 7 {
			t.Fatalf("after refund of 5: %+v", st)
		}
		st, err = l.Refund(ctx, t0, tk.Key, 10, time.Minute, 100)
		noErr(t, err, "Refund past capacity")
		if st.Remaining != 10 || st.ResetAt.After(t0) {
			t.Fatalf("refund is capped at capacity: %+v", st)
		}
		st, err = l.Refund(ctx, t0, "never-taken", 10, time.Minute, 3)
		noErr(t, err, "Refund unknown key")
		if st.Remaining != 10 {
			t.Fatalf("refund to a full bucket: %+v", st)
		}
		if d := take(t, l, t0, store.Take{Key: tk.Key, Limit: 10, Window: time.Minute, N: 10}); !d.Allowed {
			t.Fatalf("take after refund: %+v", d)
		}
	})

	t.Run("AllOrNothing", func(t *testing.T) {
		l := newLimiter(t)
		req := store.Take{Key: "req", Limit: 5, Window: time.Second, N: 1}
		in := store.Take{Key: "in", Limit: 100, Window: time.Second, N: 60}
		out := store.Take{Key: "out", Limit: 3, Window: time.Second, N: 2}
		if d := take(t, l, t0, req, in, out); !d.Allowed {
			t.Fatalf("first: %+v", d)
		}
		d := take(t, l, t0, req, store.Take{Key: "in", Limit: 100, Window: time.Second, N: 30}, out)
		if d.Allowed || d.Denied != 2 || d.Impossible {
			t.Fatalf("second: %+v", d)
		}
		// out holds 1 of 3 and needs 2: one unit at 3/s.
		if d.RetryAfter != 333_333_334 {
			t.Fatalf("RetryAfter = %v", d.RetryAfter)
		}
		if d.States[0].Remaining != 4 || d.States[1].Remaining != 40 || d.States[2].Remaining != 1 {
			t.Fatalf("refused take changed state: %+v", d.States)
		}
		if st := peek(t, l, t0, "req", 5, time.Second); st.Remaining != 4 {
			t.Fatalf("req consumed by a refused take: %+v", st)
		}
		if st := peek(t, l, t0, "in", 100, time.Second); st.Remaining != 40 {
			t.Fatalf("in consumed by a refused take: %+v", st)
		}
		// RetryAfter is the wait for the slowest refused bucket.
		d = take(t, l, t0, store.Take{Key: "in", Limit: 100, Window: time.Second, N: 50}, out)
		if d.Allowed || d.Denied != 0 || d.RetryAfter != 333_333_334 {
			t.Fatalf("two refusals: %+v", d)
		}
		if d := take(t, l, t0.Add(d.RetryAfter), store.Take{Key: "in", Limit: 100, Window: time.Second, N: 50}, out); !d.Allowed {
			t.Fatalf("after RetryAfter: %+v", d)
		}
	})

	t.Run("Impossible", func(t *testing.T) {
		l := newLimiter(t)
		d := take(t, l, t0, store.Take{Key: "a", Limit: 10, Window: time.Second, N: 1},
			store.Take{Key: "b", Limit: 10, Window: time.Second, N: 11})
		if d.Allowed || !d.Impossible || d.Denied != 1 || d.RetryAfter != 0 {
			t.Fatalf("N > Limit: %+v", d)
		}
		if st := peek(t, l, t0, "a", 10, time.Second); st.Remaining != 10 {
			t.Fatalf("a consumed: %+v", st)
		}
		// The same key twice counts together.
		d = take(t, l, t0, store.Take{Key: "a", Limit: 10, Window: time.Second, N: 6},
			store.Take{Key: "a", Limit: 10, Window: time.Second, N: 6})
		if d.Allowed || d.Denied != 1 || !d.Impossible {
			t.Fatalf("same key twice past limit: %+v", d)
		}
		if d := take(t, l, t0, store.Take{Key: "a", Limit: 10, Window: time.Second, N: 6},
			store.Take{Key: "a", Limit: 10, Window: time.Second, N: 4}); !d.Allowed || d.States[1].Remaining != 0 {
			t.Fatalf("same key twice within limit: %+v", d)
		}
	})

	t.Run("InvalidArguments", func(t *testing.T) {
		l := newLimiter(t)
		ctx := t.Context()
		for _, tk := range []store.Take{
			{Key: "k", Limit: 0, Window: time.Second, N: 1},
			{Key: "k", Limit: 1, Window: 0, N: 1},
			{Key: "k", Limit: 1, Window: time.Second, N: -1},
		} {
			_, err := l.Take(ctx, t0, []store.Take{tk})
			wantErr(t, err, store.ErrInvalidArgument, fmt.Sprintf("Take %+v", tk))
		}
		_, err := l.Refund(ctx, t0, "k", 1, time.Second, -1)
		wantErr(t, err, store.ErrInvalidArgument, "Refund negative")
		_, err = l.Peek(ctx, t0, "k", -1, time.Second)
		wantErr(t, err, store.ErrInvalidArgument, "Peek negative limit")
		d, err := l.Take(ctx, t0, nil)
		noErr(t, err, "Take nothing")
		if !d.Allowed {
			t.Fatalf("empty take refused: %+v", d)
		}
	})

	t.Run("ConcurrentNoOvershoot", func(t *testing.T) {
		l := newLimiter(t)
		ctx := t.Context()
		const limit = 500
		var allowed, refused, tokens atomic.Int64
		var wg sync.WaitGroup
		for g := range 100 {
			wg.Go(func() {
				for i := range 10 {
					// Two keys per take: requests and a shared token budget.
					n := int64(1 + (g+i)%3)
					d, err := l.Take(ctx, t0, []store.Take{
						{Key: "req", Limit: limit, Window: time.Hour, N: 1},
						{Key: "tok", Limit: 3 * limit, Window: time.Hour, N: n},
					})
					if err != nil {
						t.Errorf("Take: %v", err)
						return
					}
					if d.Allowed {
						allowed.Add(1)
						tokens.Add(n)
					} else {
						refused.Add(1)
					}
				}
			})
		}
		wg.Wait()
		req := peek(t, l, t0, "req", limit, time.Hour)
		tok := peek(t, l, t0, "tok", 3*limit, time.Hour)
		if allowed.Load()+refused.Load() != 1000 {
			t.Fatalf("%d decisions", allowed.Load()+refused.Load())
		}
		if allowed.Load() > limit || req.Remaining != limit-allowed.Load() || tok.Remaining < 0 {
			t.Fatalf("allowed %d of limit %d; req remaining %d, tok remaining %d", allowed.Load(), limit, req.Remaining, tok.Remaining)
		}
		if tok.Remaining != 3*limit-tokens.Load() {
			t.Fatalf("tok remaining %d, want %d", tok.Remaining, 3*limit-tokens.Load())
		}
		if allowed.Load() != limit && tok.Remaining >= 3 {
			t.Fatalf("only %d allowed with budget left (req %d, tok %d)", allowed.Load(), req.Remaining, tok.Remaining)
		}
	})
}
