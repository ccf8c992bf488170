package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// BenchmarkLedgerRequest measures what one API request costs the embedded
// store: a Reserve before it runs and a Settle with its usage record after.
// Serial is one request at a time (each write its own commit, as at low
// rates); Parallel keeps 64 in flight, so the group commit batches them (as
// in a burst). Run with -cpuprofile to see where the time goes:
//
//	go test ./server/store/sqlite -run '^$' -bench LedgerRequest -benchtime 3000x
func BenchmarkLedgerRequest(b *testing.B) {
	s := ledgerRig(b, 1<<60).Store()
	var n atomic.Int64
	b.Run("Serial", func(b *testing.B) {
		for b.Loop() {
			if err := apiRequest(s, fmt.Sprintf("r%d", n.Add(1))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.SetParallelism(32) // 64 in flight on 2 CPUs
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := apiRequest(s, fmt.Sprintf("r%d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// ledgerRig is a fresh database whose user "u" has balanceNanos.
func ledgerRig(tb testing.TB, balanceNanos int64) *DB {
	tb.Helper()
	db, err := Open(context.Background(), filepath.Join(tb.TempDir(), "parley.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	s := db.Store()
	ctx := context.Background()
	if err := s.Accounts.CreateUser(ctx, store.User{ID: "u", Email: "u@example.com", Tier: store.TierFree, CreatedAt: time.Now()}); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: "u", DeltaNanos: balanceNanos, Reason: "test", At: time.Now()}); err != nil {
		tb.Fatal(err)
	}
	return db
}

// apiRequest is what one API request writes: a hold of 1,000 nanos for
// user "u" before it runs, then a settle of 700 with its usage record.
func apiRequest(s store.Store, id string) error {
	ctx, now := context.Background(), time.Now()
	if _, err := s.Ledger.Reserve(ctx, store.Reservation{ID: id, UserID: "u", AmountNanos: 1000, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		return err
	}
	_, err := s.Ledger.Settle(ctx, id, 700, now, &store.UsageRecord{
		RequestID: id, UserID: "u", APIKeyID: "k", Channel: "api", Model: "m",
		PromptTokens: 20, CompletionTokens: 50, FinishReason: "stop", CreatedAt: now,
	})
	return err
}
