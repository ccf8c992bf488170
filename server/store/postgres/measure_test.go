package postgres_test

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/postgres"
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

// TestMeasurePgBouncer compares one database reached directly (pgx's
// default cache_statement mode, and cache_describe) with the same database
// through PgBouncer in transaction mode (cache_describe, as
// Options.PgBouncer sets): point reads by one caller (latency) and by 16,
// and reserve+settle pairs by 16. Run with PARLEY_MEASURE=1 and the HA env.
func TestMeasurePgBouncer(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	bouncerDB := openPgBouncer(t) // makes and migrates the database
	ctx := t.Context()
	s := bouncerDB.Store()
	const nUsers = 1000
	users := make([]string, nUsers)
	for i := range users {
		users[i] = fmt.Sprintf("u%04d", i)
		if err := s.Accounts.CreateUser(ctx, store.User{ID: users[i], Email: users[i] + "@x", Tier: store.TierFree, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: users[i], DeltaNanos: 1 << 50, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	name := bouncerDB.Database(t)
	bouncerURL := withDatabase(t, os.Getenv(EnvPgBouncerURL), name)
	direct := withDatabase(t, os.Getenv(EnvHAPrimaryURL), name)
	openWith := func(u string, opts postgres.Options) store.Store {
		opts.MaxConns = 16
		db, err := postgres.Open(ctx, u, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.Store()
	}
	configs := []struct {
		name string
		s    store.Store
	}{
		{"direct, cache_statement", openWith(direct, postgres.Options{})},
		{"direct, cache_describe", openWith(direct+"&default_query_exec_mode=cache_describe", postgres.Options{})},
		{"pgbouncer, cache_describe", openWith(bouncerURL, postgres.Options{PgBouncer: true})},
	}
	const dur = 2 * time.Second
	run := func(workers int, op func(s store.Store, i int64) error, s store.Store) float64 {
		var n, seq atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(dur)
		for range workers {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					if err := op(s, seq.Add(1)); err != nil {
						t.Error(err)
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return float64(n.Load()) / dur.Seconds()
	}
	get := func(s store.Store, i int64) error {
		_, err := s.Accounts.GetUser(ctx, users[i%nUsers])
		return err
	}
	var seq atomic.Int64
	pair := func(s store.Store, i int64) error {
		id := fmt.Sprintf("m%d", seq.Add(1))
		now := time.Now()
		if _, err := s.Ledger.Reserve(ctx, store.Reservation{ID: id, UserID: users[i%nUsers], AmountNanos: 1000, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
			return err
		}
		_, err := s.Ledger.Settle(ctx, id, 600, now, &store.UsageRecord{RequestID: id, Channel: store.ChannelAPI, Model: "m", CreatedAt: now})
		return err
	}
	// Three rounds, the configurations interleaved (the machine's load
	// drifts); the median of each.
	const rounds = 3
	type result struct{ one, many, pairs []float64 }
	res := make([]result, len(configs))
	for _, c := range configs {
		run(1, get, c.s) // warm the pools and caches
	}
	for range rounds {
		for i, c := range configs {
			res[i].one = append(res[i].one, run(1, get, c.s))
			res[i].many = append(res[i].many, run(16, get, c.s))
			res[i].pairs = append(res[i].pairs, run(16, pair, c.s))
		}
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	for i, c := range configs {
		one := median(res[i].one)
		t.Logf("%-26s GetUser 1 caller: %6.0f/s (%v each); 16 callers: %6.0f/s; reserve+settle 16 callers: %5.0f pairs/s",
			c.name, one, time.Duration(float64(time.Second)/one).Round(time.Microsecond), median(res[i].many), median(res[i].pairs))
	}
}

// TestMeasureShardedLedger compares reserve+settle pairs on a ledger apart
// on one cluster (one statement each) with the ledger over two clusters
// (each call a transaction that fences its shard first: BEGIN, the fence,
// the statement, COMMIT), by one caller (latency) and by 16 (throughput),
// over 1,000 accounts. Run with PARLEY_MEASURE=1; the clusters here are
// schemas of one server, so the figures are the cost of the round trips.
func TestMeasureShardedLedger(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	ctx := t.Context()
	apart, _ := openApart(t)
	sharded, _ := openSharded(t)
	const nUsers = 1000
	users := make([]string, nUsers)
	for i := range users {
		users[i] = fmt.Sprintf("u%04d-%d", i, time.Now().UnixNano())
	}
	for _, s := range []store.Store{apart.Store(), sharded.Store()} {
		for _, u := range users {
			if _, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: u, DeltaNanos: 1 << 50, At: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name string
		s    store.Store
	}{{"one billing cluster", apart.Store()}, {"two billing clusters, fenced", sharded.Store()}} {
		for _, workers := range []int{1, 16} {
			const dur = 3 * time.Second
			var n, seq atomic.Int64
			var wg sync.WaitGroup
			deadline := time.Now().Add(dur)
			for range workers {
				wg.Go(func() {
					for time.Now().Before(deadline) {
						i := seq.Add(1)
						id := fmt.Sprintf("%s-%d-%d", c.name, workers, i)
						u, now := users[i%nUsers], time.Now()
						if _, err := c.s.Ledger.Reserve(ctx, store.Reservation{ID: id, UserID: u, AmountNanos: 1000, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
							t.Error(err)
							return
						}
						if _, err := c.s.Ledger.Settle(ctx, id, 600, now, &store.UsageRecord{RequestID: id, UserID: u, Channel: store.ChannelAPI, Model: "m", CreatedAt: now}); err != nil {
							t.Error(err)
							return
						}
						n.Add(1)
					}
				})
			}
			wg.Wait()
			t.Logf("%s, %d callers: %d pairs, %.0f pairs/s, %.2f ms a pair", c.name, workers, n.Load(),
				float64(n.Load())/dur.Seconds(), dur.Seconds()*1000*float64(workers)/float64(n.Load()))
		}
	}
}
