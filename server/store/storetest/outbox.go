package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestUsageOutbox is the conformance suite for store.UsageOutbox, with the
// Ledger that fills it: newStore returns stores whose Outbox is set.
func TestUsageOutbox(t *testing.T, newStore NewStore) {
	// settle makes n charged requests of u and returns their records as
	// Settle should have stored them, oldest first.
	settle := func(t *testing.T, s store.Store, u string, n int) []store.UsageRecord {
		t.Helper()
		var out []store.UsageRecord
		for i := range n {
			r := reservation(u, 100, time.Hour)
			_, err := s.Ledger.Reserve(t.Context(), r)
			noErr(t, err, "Reserve")
			rec := usageOf(u)
			rec.CreatedAt = t0.Add(time.Duration(i) * time.Second)
			st, err := s.Ledger.Settle(t.Context(), r.ID, int64(i+1), t0, rec)
			noErr(t, err, "Settle")
			rec.CostNanos = st.ChargedNanos
			out = append(out, *rec)
		}
		return out
	}
	wantBacklog := func(t *testing.T, s store.Store, n int64, oldest time.Time) {
		t.Helper()
		got, at, err := s.Outbox.Backlog(t.Context())
		noErr(t, err, "Backlog")
		if got != n || !at.Equal(oldest) {
			t.Fatalf("backlog %d, oldest %v; want %d, %v", got, at, n, oldest)
		}
	}
	sameRecords := func(t *testing.T, got, want []store.UsageRecord) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for i := range got {
			g := got[i]
			sameTime(t, g.CreatedAt, want[i].CreatedAt, "CreatedAt")
			g.CreatedAt = want[i].CreatedAt
			if g != want[i] {
				t.Fatalf("record %d = %+v, want %+v", i, g, want[i])
			}
		}
	}

	t.Run("ShipInOrderAndDelete", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		if s.Outbox == nil {
			t.Fatal("the store has no Outbox")
		}
		n, err := s.Outbox.Ship(ctx, 10, func(context.Context, []store.UsageRecord) error {
			t.Fatal("ship called with nothing waiting")
			return nil
		})
		noErr(t, err, "Ship empty")
		if n != 0 {
			t.Fatalf("shipped %d from an empty outbox", n)
		}
		wantBacklog(t, s, 0, time.Time{})

		u := mustUser(t, s, "out@example.com")
		topUp(t, s, u.ID, 1_000_000)
		want := settle(t, s, u.ID, 5)
		// A record of a request that held nothing waits too, at no cost.
		web := usageOf(u.ID)
		web.Channel, web.CreatedAt, web.CostNanos = store.ChannelWeb, t0.Add(time.Hour), 7
		_, err = s.Ledger.Settle(ctx, "", 0, t0, web)
		noErr(t, err, "Settle without a reservation")
		web.CostNanos = 0
		want = append(want, *web)
		// Records go to the outbox, not to a Usage store.
		wantBacklog(t, s, 6, t0)

		// A failed ship keeps everything.
		boom := errors.New("usage store down")
		n, err = s.Outbox.Ship(ctx, 3, func(_ context.Context, recs []store.UsageRecord) error {
			sameRecords(t, recs, want[:3])
			return boom
		})
		if !errors.Is(err, boom) || n != 0 {
			t.Fatalf("failed ship = %d, %v", n, err)
		}
		wantBacklog(t, s, 6, t0)

		// Shipped, oldest first, and deleted.
		var got []store.UsageRecord
		ship := func(_ context.Context, recs []store.UsageRecord) error {
			got = append(got, recs...)
			return nil
		}
		n, err = s.Outbox.Ship(ctx, 3, ship)
		noErr(t, err, "Ship 3")
		if n != 3 {
			t.Fatalf("shipped %d, want 3", n)
		}
		wantBacklog(t, s, 3, t0.Add(3*time.Second))
		n, err = s.Outbox.Ship(ctx, 100, ship)
		noErr(t, err, "Ship rest")
		if n != 3 {
			t.Fatalf("shipped %d, want 3", n)
		}
		sameRecords(t, got, want)
		wantBacklog(t, s, 0, time.Time{})
		n, err = s.Outbox.Ship(ctx, 100, ship)
		if err != nil || n != 0 {
			t.Fatalf("Ship of an empty outbox = %d, %v", n, err)
		}
	})

	t.Run("ConcurrentShippers", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "ship@example.com")
		topUp(t, s, u.ID, 1_000_000)
		const total = 120
		want := settle(t, s, u.ID, total)

		// Four shippers (gateways) at once: every record shipped exactly
		// once, however they interleave.
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					n, err := s.Outbox.Ship(ctx, 7, func(_ context.Context, recs []store.UsageRecord) error {
						time.Sleep(time.Millisecond) // a ship takes a while
						mu.Lock()
						defer mu.Unlock()
						for _, r := range recs {
							seen[r.RequestID]++
						}
						return nil
					})
					if err != nil {
						t.Errorf("Ship: %v", err)
						return
					}
					if n == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		// A shipper can stop while others hold the last rows: drain.
		_, err := s.Outbox.Ship(ctx, total, func(_ context.Context, recs []store.UsageRecord) error {
			for _, r := range recs {
				seen[r.RequestID]++
			}
			return nil
		})
		noErr(t, err, "Ship the rest")
		if len(seen) != total {
			t.Fatalf("%d records shipped, want %d", len(seen), total)
		}
		for _, r := range want {
			if seen[r.RequestID] != 1 {
				t.Fatalf("record %s shipped %d times", r.RequestID, seen[r.RequestID])
			}
		}
		wantBacklog(t, s, 0, time.Time{})
	})
}
