package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// One commit holds several reservations; one that fails (a duplicate id,
// a short balance, a caller gone) leaves the others in, and every caller
// hears its own result.
func TestReserveGroupCommit(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	l := db.Store().Ledger
	for _, id := range []string{"u1", "u2"} {
		if err := db.Store().Accounts.CreateUser(ctx, store.User{ID: id, Email: id + "@example.com", Tier: store.TierFree, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Adjust(ctx, store.Adjustment{UserID: "u1", DeltaNanos: 100, Reason: "test", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	res := func(id string, amount int64) store.Reservation {
		return store.Reservation{ID: id, UserID: "u1", AmountNanos: amount, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	bals := make([]store.Balance, 5)
	call := func(ctx context.Context, i int, r store.Reservation) *groupCall {
		return &groupCall{ctx: ctx, fn: func(ctx context.Context, tx *txn) (err error) {
			bals[i], err = reserveTx(ctx, tx, r)
			return err
		}}
	}
	batch := []*groupCall{
		call(ctx, 0, res("a", 30)),
		call(ctx, 1, res("a", 10)),  // duplicate id: conflict
		call(ctx, 2, res("b", 80)),  // more than is left
		call(gone, 3, res("c", 10)), // its caller went away before the commit
		call(ctx, 4, res("d", 60)),
	}
	db.commitGroup(batch)
	if batch[0].err != nil || bals[0].AvailableNanos != 70 || bals[0].ReservedNanos != 30 {
		t.Errorf("a: %+v %v", bals[0], batch[0].err)
	}
	if !errors.Is(batch[1].err, store.ErrConflict) {
		t.Errorf("duplicate: %v, want conflict", batch[1].err)
	}
	var short *store.InsufficientFundsError
	if !errors.As(batch[2].err, &short) || short.AvailableNanos != 70 {
		t.Errorf("short: %v", batch[2].err)
	}
	if !errors.Is(batch[3].err, context.Canceled) {
		t.Errorf("gone: %v", batch[3].err)
	}
	if batch[4].err != nil || bals[4].AvailableNanos != 10 || bals[4].ReservedNanos != 90 {
		t.Errorf("d: %+v %v", bals[4], batch[4].err)
	}
	b, err := l.Account(ctx, "u1")
	if err != nil || b.AvailableNanos != 10 || b.ReservedNanos != 90 {
		t.Errorf("balance %+v %v, want 10 available, 90 reserved", b, err)
	}

	// Under concurrency the commits group, and never overdraw.
	if _, err := l.Adjust(ctx, store.Adjustment{UserID: "u2", DeltaNanos: 1000, Reason: "test", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 200 {
		wg.Go(func() {
			r := res("u2-"+string(rune('A'+i/26))+string(rune('a'+i%26)), 10)
			r.UserID = "u2"
			if _, err := l.Reserve(ctx, r); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !errors.As(err, &short) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if b, _ := l.Account(ctx, "u2"); ok != 100 || b.AvailableNanos != 0 || b.ReservedNanos != 1000 {
		t.Errorf("%d reserved, balance %+v; want 100 and 0/1000", ok, b)
	}
}

// Reserves and settles of many requests at once share commits and stay
// exact: every settle charges its own cost, refunds the rest, writes its
// usage record once, and a settle repeated reports the first.
func TestSettleGroupCommit(t *testing.T) {
	ctx := context.Background()
	db := ledgerRig(t, 100_000)
	s := db.Store()
	const n = 200
	now := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := "r" + string(rune('A'+i/26)) + string(rune('a'+i%26))
			if _, err := s.Ledger.Reserve(ctx, store.Reservation{ID: id, UserID: "u", AmountNanos: 100, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Error(err)
				return
			}
			cost := int64(i % 100) // charged 0..99 of the 100 held
			rec := &store.UsageRecord{RequestID: id, Channel: store.ChannelAPI, Model: "m", CompletionTokens: cost, CreatedAt: now}
			st, err := s.Ledger.Settle(ctx, id, cost, now, rec)
			if err != nil || st.ChargedNanos != cost || st.RefundedNanos != 100-cost {
				t.Errorf("%s: %+v %v", id, st, err)
			}
			again, err := s.Ledger.Settle(ctx, id, 5, now, rec)
			if err != nil || again != st {
				t.Errorf("%s settled twice: %+v %v, want %+v", id, again, err, st)
			}
		})
	}
	wg.Wait()
	var charged int64
	for i := range n {
		charged += int64(i % 100)
	}
	b, err := s.Ledger.Account(ctx, "u")
	if err != nil || b.ReservedNanos != 0 || b.AvailableNanos != 100_000-charged {
		t.Errorf("balance %+v %v, want %d available, 0 reserved", b, err, 100_000-charged)
	}
	var records, sum int64
	if err := db.r.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(cost_nanos), 0) FROM usage_records WHERE user_id = 'u'`).Scan(&records, &sum); err != nil {
		t.Fatal(err)
	}
	if records != n || sum != charged {
		t.Errorf("%d usage records summing %d, want %d summing %d", records, sum, n, charged)
	}
}

// The writer keeps its statement journals in memory (a group commit's
// journal would otherwise spill to a file); the readers keep the default.
func TestWriterStatementJournalInMemory(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var w, r int
	if err := db.w.QueryRowContext(t.Context(), "PRAGMA temp_store").Scan(&w); err != nil {
		t.Fatal(err)
	}
	if err := db.r.QueryRowContext(t.Context(), "PRAGMA temp_store").Scan(&r); err != nil {
		t.Fatal(err)
	}
	if w != 2 || r != 0 {
		t.Fatalf("temp_store: writer %d, readers %d; want 2 (memory) and 0 (default)", w, r)
	}
}

// A request's hold and settle start few goroutines: the commit's context
// has no deadline, so the SQLite driver starts none to interrupt each
// statement (it started about ten a request before). What is left is the
// commit's own goroutine and database/sql's watch over each transaction
// and query in it.
func TestGroupCommitStartsFewGoroutines(t *testing.T) {
	s := ledgerRig(t, 1<<40).Store()
	created := func() uint64 {
		m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(m)
		return m[0].Value.Uint64()
	}
	request := func(i int) {
		if err := apiRequest(s, fmt.Sprintf("r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	request(0) // prepares the statements
	const n = 100
	before := created()
	for i := 1; i <= n; i++ {
		request(i)
	}
	if per := float64(created()-before) / n; per > 8 {
		t.Errorf("%.1f goroutines started a request, want at most 8", per)
	}
}
