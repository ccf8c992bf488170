package storetest

import (
	"context"
	"errors"
	"fmt"
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

	t.Run("RetryShipsTheSameBatch", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "retry@example.com")
		topUp(t, s, u.ID, 1_000_000)
		want := settle(t, s, u.ID, 5)
		boom := errors.New("usage store down")

		// The three oldest fail to ship.
		var first []store.UsageRecord
		n, err := s.Outbox.Ship(ctx, 3, func(_ context.Context, recs []store.UsageRecord) error {
			first = recs
			return boom
		})
		if !errors.Is(err, boom) || n != 0 {
			t.Fatalf("failed ship = %d, %v", n, err)
		}
		sameRecords(t, first, want[:3])

		// Records settled since, and a larger max, change nothing: the
		// batch is handed out again as it was (a Usage store that drops an
		// identical insert stores it once), every time it fails.
		later := settle(t, s, u.ID, 2)
		for i := range 2 {
			var again []store.UsageRecord
			n, err = s.Outbox.Ship(ctx, 100, func(_ context.Context, recs []store.UsageRecord) error {
				again = recs
				return boom
			})
			if !errors.Is(err, boom) || n != 0 {
				t.Fatalf("failed ship %d = %d, %v", i+2, n, err)
			}
			sameRecords(t, again, first)
		}
		wantBacklog(t, s, 7, t0)

		// Once it is shipped, the rest goes, oldest first.
		var got []store.UsageRecord
		ship := func(_ context.Context, recs []store.UsageRecord) error {
			got = append(got, recs...)
			return nil
		}
		n, err = s.Outbox.Ship(ctx, 100, ship)
		noErr(t, err, "Ship the failed batch")
		if n != 3 {
			t.Fatalf("shipped %d, want 3", n)
		}
		sameRecords(t, got, first)
		got = nil
		n, err = s.Outbox.Ship(ctx, 100, ship)
		noErr(t, err, "Ship the rest")
		if n != 4 {
			t.Fatalf("shipped %d, want 4", n)
		}
		sameRecords(t, got, append(want[3:], later...))
		wantBacklog(t, s, 0, time.Time{})
	})

	t.Run("RetryIgnoresASmallerMax", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "smaller@example.com")
		topUp(t, s, u.ID, 1_000_000)
		want := settle(t, s, u.ID, 6)
		boom := errors.New("usage store down")
		n, err := s.Outbox.Ship(ctx, 5, func(context.Context, []store.UsageRecord) error { return boom })
		if !errors.Is(err, boom) || n != 0 {
			t.Fatalf("failed ship = %d, %v", n, err)
		}
		// The batch of five goes whole to a caller that asks for two.
		var got []store.UsageRecord
		n, err = s.Outbox.Ship(ctx, 2, func(_ context.Context, recs []store.UsageRecord) error {
			got = recs
			return nil
		})
		noErr(t, err, "Ship with a smaller max")
		if n != 5 {
			t.Fatalf("shipped %d, want 5", n)
		}
		sameRecords(t, got, want[:5])
		wantBacklog(t, s, 1, want[5].CreatedAt)
	})

	t.Run("ShipWhileAnotherShips", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "while@example.com")
		topUp(t, s, u.ID, 1_000_000)
		want := settle(t, s, u.ID, 10)

		// a takes the four oldest and is held inside its ship.
		var a, b []store.UsageRecord
		entered, release := make(chan struct{}), make(chan struct{})
		aDone, bDone := make(chan error, 1), make(chan error, 1)
		go func() {
			n, err := s.Outbox.Ship(ctx, 4, func(ctx context.Context, recs []store.UsageRecord) error {
				a = recs
				close(entered)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err == nil && n != 4 {
				err = fmt.Errorf("shipped %d, want 4", n)
			}
			aDone <- err
		}()
		<-entered
		go func() {
			_, err := s.Outbox.Ship(ctx, 100, func(_ context.Context, recs []store.UsageRecord) error {
				b = recs
				return nil
			})
			bDone <- err
		}()
		// Shippers sharing a database (PostgreSQL) ship b while a holds its
		// batch; a store that serialises Ship (SQLite) ships b once a is
		// done, so a is let go after a while. Either way they are disjoint.
		var bErr error
		bFirst := false
		select {
		case bErr = <-bDone:
			bFirst = true
		case <-time.After(time.Second):
		}
		close(release)
		noErr(t, <-aDone, "the held Ship")
		if !bFirst {
			bErr = <-bDone
		}
		noErr(t, bErr, "the other Ship")
		sameRecords(t, a, want[:4])
		sameRecords(t, b, want[4:])
		wantBacklog(t, s, 0, time.Time{})
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
