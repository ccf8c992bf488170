package memlimit_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlimit"
	"github.com/parleyhq/parley/server/store/storetest"
)

func TestLimiter(t *testing.T) {
	storetest.TestLimiter(t, func(t *testing.T) store.Limiter { return memlimit.New(0) })
}

func TestIdleBucketsExpire(t *testing.T) {
	l := memlimit.New(time.Minute)
	ctx := t.Context()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, k := range []string{"a", "b", "c"} {
		if _, err := l.Take(ctx, now, []store.Take{{Key: k, Limit: 10, Window: time.Second, N: 5}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Take(ctx, now, []store.Take{{Key: "slow", Limit: 10, Window: time.Hour, N: 5}}); err != nil {
		t.Fatal(err)
	}
	if n := l.Len(); n != 4 {
		t.Fatalf("Len = %d, want 4", n)
	}
	// After the sweep interval, buckets that refilled are gone; the slow one stays.
	if _, err := l.Peek(ctx, now.Add(2*time.Minute), "x", 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Take(ctx, now.Add(2*time.Minute), []store.Take{{Key: "x", Limit: 1, Window: time.Second, N: 0}}); err != nil {
		t.Fatal(err)
	}
	if n := l.Len(); n != 2 {
		t.Fatalf("Len after sweep = %d, want 2 (slow and x)", n)
	}
	st, err := l.Peek(ctx, now.Add(2*time.Minute), "a", 10, time.Second)
	if err != nil || st.Remaining != 10 {
		t.Fatalf("expired bucket is not full: %+v, %v", st, err)
	}
}

func BenchmarkTake(b *testing.B) {
	l := memlimit.New(0)
	ctx := b.Context()
	now := time.Now()
	takes := []store.Take{
		{Key: "req:u1", Limit: 1 << 40, Window: time.Minute, N: 1},
		{Key: "in:u1", Limit: 1 << 40, Window: time.Minute, N: 100},
		{Key: "out:u1", Limit: 1 << 40, Window: time.Minute, N: 100},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Take(ctx, now, takes); err != nil {
			b.Fatal(err)
		}
	}
}
