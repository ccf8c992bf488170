package billing_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
)

func newLedger(t *testing.T) (*sqlite.DB, store.Store) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := db.Store()
	if err := st.Accounts.CreateUser(ctx, store.User{ID: "u1", Email: "u1@example.com", Tier: store.TierFree, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ledger.Adjust(ctx, store.Adjustment{UserID: "u1", DeltaNanos: 1_000_000, Reason: "test", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return db, st
}

// A hold whose request is cancelled while it is taken fails as cancelled,
// not as the store being down (which a background response would report as
// failed), and holds nothing.
func TestReserveCancelled(t *testing.T) {
	_, st := newLedger(t)
	b := billing.New(st.Ledger, time.Now, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.ReserveScoped(ctx, "", "u1", store.BudgetScopes{}, 1000)
	if connect.CodeOf(err) != connect.CodeCanceled {
		t.Fatalf("cancelled hold: %v (code %v), want canceled", err, connect.CodeOf(err))
	}
	bal, err := st.Ledger.Account(context.Background(), "u1")
	if err != nil || bal.AvailableNanos != 1_000_000 || bal.ReservedNanos != 0 {
		t.Fatalf("after a cancelled hold: %+v %v", bal, err)
	}
}

// A store that fails is unavailable, to be retried.
func TestReserveStoreDown(t *testing.T) {
	db, st := newLedger(t)
	b := billing.New(st.Ledger, time.Now, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	db.Close()
	_, err := b.ReserveScoped(context.Background(), "", "u1", store.BudgetScopes{}, 1000)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("store down: %v (code %v), want unavailable", err, connect.CodeOf(err))
	}
}
