package sqlite

import (
	"context"
	"errors"
	"path/filepath"
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
	batch := []*reserveCall{
		{ctx: ctx, r: res("a", 30)},
		{ctx: ctx, r: res("a", 10)},  // duplicate id: conflict
		{ctx: ctx, r: res("b", 80)},  // more than is left
		{ctx: gone, r: res("c", 10)}, // its caller went away before the commit
		{ctx: ctx, r: res("d", 60)},
	}
	db.commitReserves(batch)
	if batch[0].err != nil || batch[0].b.AvailableNanos != 70 || batch[0].b.ReservedNanos != 30 {
		t.Errorf("a: %+v %v", batch[0].b, batch[0].err)
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
	if batch[4].err != nil || batch[4].b.AvailableNanos != 10 || batch[4].b.ReservedNanos != 90 {
		t.Errorf("d: %+v %v", batch[4].b, batch[4].err)
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
