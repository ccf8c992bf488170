package redis_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/redis"
	"github.com/parleyhq/parley/server/store/storetest"
)

// EnvURL names the test Redis; the suite skips when it is unset
// (scripts/services.sh env sets it, and CI runs it).
const EnvURL = "PARLEY_TEST_REDIS_URL"

func newLimiter(t *testing.T) store.Limiter {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvURL)
	}
	c, err := redis.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	prefix := "parley:test:" + uuid.NewString() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		c.Close()
	})
	return redis.NewLimiter(c, prefix)
}

func TestLimiter(t *testing.T) { t.Parallel(); storetest.TestLimiter(t, newLimiter) }

// TestBigNumbers checks the script's arithmetic where doubles would lose
// precision: a bucket of 10^15 units over 100 days, read to the nanosecond
// (elapsed·limit is about 10^31).
func TestBigNumbers(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	ctx := t.Context()
	now := time.Date(2030, 1, 1, 0, 0, 0, 123456789, time.UTC)
	const limit = int64(1_000_000_000_000_000)
	w := 100 * 24 * time.Hour
	d, err := l.Take(ctx, now, []store.Take{{Key: "big", Limit: limit, Window: w, N: limit - 1}})
	if err != nil || !d.Allowed || d.States[0].Remaining != 1 {
		t.Fatalf("drain: %+v %v", d, err)
	}
	// Full again after ceil((limit-1)·w/limit) = w - 8.64 ns → w - 8 ns.
	if got := d.States[0].ResetAt.Sub(now); got != w-8 {
		t.Fatalf("ResetAt in %v, want %v", got, w-8)
	}
	// A third of the window later: limit/3 units accrued, to the unit.
	st, err := l.Peek(ctx, now.Add(w/3), "big", limit, w)
	if err != nil || st.Remaining != 1+limit/3 {
		t.Fatalf("a third later: %+v %v (want %d)", st, err, 1+limit/3)
	}
	if _, err := l.Take(ctx, now, []store.Take{{Key: "k", Limit: 1 << 53, Window: time.Hour, N: 1}}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("limit 2^53: %v", err)
	}
	st, err = l.Peek(ctx, now.Add(w/2), "big", limit, w)
	if err != nil || st.Remaining != limit/2+1 {
		t.Fatalf("half the window later: %+v %v (want remaining %d)", st, err, limit/2+1)
	}
}
