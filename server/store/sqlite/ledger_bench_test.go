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
	db, err := Open(b.Context(), filepath.Join(b.TempDir(), "parley.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	s := db.Store()
	if err := s.Accounts.CreateUser(ctx, store.User{ID: "u", Email: "u@example.com", Tier: store.TierFree, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: "u", DeltaNanos: 1 << 60, Reason: "bench", At: time.Now()}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	request := func() error {
		id := fmt.Sprintf("r%d", n.Add(1))
		now := time.Now()
		if _, err := s.Ledger.Reserve(ctx, store.Reservation{ID: id, UserID: "u", AmountNanos: 1000, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			return err
		}
		_, err := s.Ledger.Settle(ctx, id, 700, now, &store.UsageRecord{
			RequestID: id, UserID: "u", APIKeyID: "k", Channel: "api", Model: "m",
			PromptTokens: 20, CompletionTokens: 50, FinishReason: "stop", CreatedAt: now,
		})
		return err
	}
	b.Run("Serial", func(b *testing.B) {
		for b.Loop() {
			if err := request(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.SetParallelism(32) // 64 in flight on 2 CPUs
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := request(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
