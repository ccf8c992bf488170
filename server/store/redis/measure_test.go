package redis_test

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestMeasureTakes measures limiter calls per second (three buckets a call,
// as a tier check takes requests, input and output tokens) with 32 callers.
// Run with PARLEY_MEASURE=1.
func TestMeasureTakes(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	l := newLimiter(client(t, EnvURL))(t)
	ctx := t.Context()
	const workers, dur = 32, 5 * time.Second
	var n atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(dur)
	for w := range workers {
		wg.Go(func() {
			u := fmt.Sprintf("u%d", w%1000)
			for time.Now().Before(deadline) {
				_, err := l.Take(ctx, time.Now(), []store.Take{
					{Key: "req:" + u, Limit: 1_000_000_000, Window: time.Hour, N: 1},
					{Key: "in:" + u, Limit: 1_000_000_000, Window: 24 * time.Hour, N: 1500},
					{Key: "out:" + u, Limit: 1_000_000_000, Window: 24 * time.Hour, N: 500},
				})
				if err != nil {
					t.Error(err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%.0f takes/s (3 buckets each, 32 callers)", float64(n.Load())/dur.Seconds())
}
