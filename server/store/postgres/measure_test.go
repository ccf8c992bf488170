package postgres_test

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestMeasureReserveSettle measures reserve+settle pairs per second with 32
// concurrent callers, on one hot account and spread over 10,000 accounts.
// Run with PARLEY_MEASURE=1 (and the test database's env).
func TestMeasureReserveSettle(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	s := open(t).Store()
	ctx := t.Context()
	const nAccounts = 10_000
	users := make([]string, nAccounts)
	for i := range users {
		users[i] = fmt.Sprintf("u%05d", i)
		if err := s.Accounts.CreateUser(ctx, store.User{ID: users[i], Email: users[i] + "@x", Tier: store.TierFree, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: users[i], DeltaNanos: 1 << 50, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, pick func(i int64) string) {
		const workers, dur = 32, 5 * time.Second
		var n, seq atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(dur)
		for range workers {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					i := seq.Add(1)
					id := fmt.Sprintf("%s-%d", name, i)
					now := time.Now()
					if _, err := s.Ledger.Reserve(ctx, store.Reservation{ID: id, UserID: pick(i), AmountNanos: 1000, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
						t.Error(err)
						return
					}
					if _, err := s.Ledger.Settle(ctx, id, 600, now, &store.UsageRecord{RequestID: id, Channel: store.ChannelAPI, Model: "m", CreatedAt: now}); err != nil {
						t.Error(err)
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		t.Logf("%s: %.0f reserve+settle pairs/s (32 callers)", name, float64(n.Load())/dur.Seconds())
	}
	run("hot", func(int64) string { return users[0] })
	run("spread", func(i int64) string { return users[i%nAccounts] })
}
