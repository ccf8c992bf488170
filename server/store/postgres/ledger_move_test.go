package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/postgres"
)

// schemaDB opens the schema (made and migrated if new), closed with t; the
// schema is dropped by whoever made it.
func schemaDB(t *testing.T, schema string, fresh bool) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), os.Getenv(EnvURL), postgres.Options{Schema: schema, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	if fresh {
		t.Cleanup(func() { _ = db.DropSchema(t.Context(), schema) })
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A logical ledger shard moved between billing clusters while two gateways
// charge its users and others: no charge is lost or doubled (each user's
// balance is the top-up less exactly what the clients were told they were
// charged, with a usage record for each), nothing stays held, the shard's
// rows end on the new cluster only, and only the shard's users wait (the
// pause is measured; the others' slowest call is reported beside it).
func TestMoveLedgerShardUnderLoad(t *testing.T) {
	if os.Getenv(EnvURL) == "" {
		t.Skipf("%s not set", EnvURL)
	}
	t.Parallel()
	names := make([]string, 3)
	for i := range names {
		names[i] = "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		schemaDB(t, names[i], true)
	}
	// A gateway: the users' schema with the two billing schemas, its own
	// handles and shard map.
	gateway := func() (*postgres.DB, store.Store) {
		db := schemaDB(t, names[0], false)
		db.WithBillingShards([]*postgres.DB{schemaDB(t, names[1], false), schemaDB(t, names[2], false)})
		if err := db.LoadLedgerMap(t.Context()); err != nil {
			t.Fatal(err)
		}
		return db, db.Store()
	}
	_, g1 := gateway()
	_, g2 := gateway()
	admin, _ := gateway()
	ctx := t.Context()

	// 12 users in one shard of cluster 0, 12 elsewhere.
	var moving, others []string
	shard := -1
	for len(moving) < 12 || len(others) < 12 {
		id := uuid.NewString()
		s := postgres.LedgerShard(id)
		if shard < 0 && s < postgres.LedgerShards/2 {
			shard = s
		}
		if s == shard && len(moving) < 12 {
			moving = append(moving, id)
		} else if s != shard && len(others) < 12 {
			others = append(others, id)
		}
	}
	const topUp = 10_000_000
	for _, u := range append(slices.Clone(moving), others...) {
		if _, err := g1.Ledger.Adjust(ctx, store.Adjustment{UserID: u, DeltaNanos: topUp, Reason: "top-up", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu      sync.Mutex
		charged = map[string]int64{}
		settled = map[string]int{}
	)
	m, slowMoving, slowRest := moveUnderLoad(t, []store.Store{g1, g2}, moving, others, func(g store.Store, u string, _, _ int) error {
		t0 := time.Now()
		id := uuid.NewString()
		if _, err := g.Ledger.Reserve(ctx, store.Reservation{ID: id, UserID: u, AmountNanos: 1000, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			return fmt.Errorf("Reserve: %w", err)
		}
		rec := &store.UsageRecord{RequestID: uuid.NewString(), UserID: u, Channel: store.ChannelAPI, Model: "m", FinishReason: "stop", CreatedAt: time.Now()}
		s, err := g.Ledger.Settle(ctx, id, int64(1+rand.N(999)), time.Now(), rec)
		if err != nil {
			return fmt.Errorf("Settle: %w", err)
		}
		mu.Lock()
		charged[u] += s.ChargedNanos
		settled[u]++
		mu.Unlock()
		return nil
	}, func() (postgres.ShardMove, error) { return admin.MoveLedgerShard(ctx, shard, 1) })
	total := 0
	for _, n := range settled {
		total += n
	}
	t.Logf("shard %d moved from cluster %d to %d: %d accounts, %d rows; writes paused %v; slowest charge of its users %v, of the others %v; %d charges in all",
		m.Shard, m.From, m.To, m.Users, m.Rows, m.Paused.Round(time.Millisecond), slowMoving.Round(time.Millisecond), slowRest.Round(time.Millisecond), total)
	if m.Users != len(moving) || m.From != 0 {
		t.Fatalf("moved %d accounts from cluster %d; want %d from 0", m.Users, m.From, len(moving))
	}
	for _, g := range []store.Store{g1, g2} {
		for _, u := range append(slices.Clone(moving), others...) {
			bal, err := g.Ledger.Account(ctx, u)
			if err != nil || bal.AvailableNanos != topUp-charged[u] || bal.ReservedNanos != 0 {
				t.Fatalf("user %s: balance %+v (%v); want %d available, nothing held", u, bal, err, topUp-charged[u])
			}
			recs, _, err := g.Usage.List(ctx, u, store.UsageFilter{}, store.PageRequest{Size: store.MaxPageSize})
			var cost int64
			for _, r := range recs {
				cost += r.CostNanos
			}
			if err != nil || len(recs) != settled[u] || cost != charged[u] {
				t.Fatalf("user %s: %d records costing %d (%v); want %d costing %d", u, len(recs), cost, err, settled[u], charged[u])
			}
		}
	}
	// The old cluster holds nothing of the shard's users any more.
	old := schemaDB(t, names[1], false)
	for _, table := range []string{"billing_accounts", "reservations", "usage_records", "ledger_adjustments"} {
		if err := old.ExecRaw(ctx, fmt.Sprintf(`DO $$ BEGIN IF EXISTS (SELECT 1 FROM %s WHERE user_id = ANY(ARRAY['%s'])) THEN RAISE EXCEPTION 'left'; END IF; END $$`,
			table, strings.Join(moving, "','"))); err != nil {
			t.Fatalf("the old cluster's %s still holds the moved users' rows: %v", table, err)
		}
	}
}

// moveUnderLoad runs 8 writers over the gateways gs (in turn), each calling
// write for a user of moving and, every other call, of others, until a
// second after move (called a second in) returns; a failed write or move
// fails the test. It returns the move and the slowest write of the moving
// users and of the others.
func moveUnderLoad(t *testing.T, gs []store.Store, moving, others []string, write func(g store.Store, user string, writer, i int) error,
	move func() (postgres.ShardMove, error)) (m postgres.ShardMove, slowMoving, slowRest time.Duration) {
	t.Helper()
	var (
		mu       sync.Mutex
		stop     atomic.Bool
		wg       sync.WaitGroup
		failures atomic.Int64
	)
	for w := range 8 {
		wg.Go(func() {
			g := gs[w%len(gs)]
			for i := 0; !stop.Load(); i++ {
				u, slow := moving[rand.N(len(moving))], &slowMoving
				if i%2 == 1 {
					u, slow = others[rand.N(len(others))], &slowRest
				}
				t0 := time.Now()
				if err := write(g, u, w, i); err != nil {
					t.Error(err)
					failures.Add(1)
					return
				}
				mu.Lock()
				*slow = max(*slow, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Second)
	m, err := move()
	if err == nil {
		time.Sleep(time.Second)
	}
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	if failures.Load() > 0 {
		t.FailNow()
	}
	return m, slowMoving, slowRest
}
