package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

func wantBalance(t *testing.T, s store.Store, userID string, avail, reserved int64) {
	t.Helper()
	b, err := s.Ledger.Account(t.Context(), userID)
	noErr(t, err, "Account")
	if b.AvailableNanos != avail || b.ReservedNanos != reserved {
		t.Fatalf("balance = %+v, want available %d reserved %d", b, avail, reserved)
	}
}

func topUp(t *testing.T, s store.Store, userID string, n int64) {
	t.Helper()
	_, err := s.Ledger.Adjust(t.Context(), store.Adjustment{UserID: userID, DeltaNanos: n, Reason: "test top-up", At: t0})
	noErr(t, err, "Adjust")
}

func reservation(userID string, amount int64, ttl time.Duration) store.Reservation {
	return store.Reservation{ID: newID(), UserID: userID, AmountNanos: amount, CreatedAt: t0, ExpiresAt: t0.Add(ttl)}
}

// TestLedger is the conformance suite for store.Ledger.
func TestLedger(t *testing.T, newStore NewStore) {
	t.Run("Adjust", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "l@example.com")
		wantBalance(t, s, u.ID, 0, 0)
		avail, err := s.Ledger.Adjust(ctx, store.Adjustment{UserID: u.ID, DeltaNanos: 5_000_000_000, Reason: "top-up", At: t0})
		noErr(t, err, "Adjust +5 USD")
		if avail != 5_000_000_000 {
			t.Fatalf("Adjust returned %d", avail)
		}
		avail, err = s.Ledger.Adjust(ctx, store.Adjustment{UserID: u.ID, DeltaNanos: -2_000_000_000, Reason: "correction", At: t0})
		noErr(t, err, "Adjust -2 USD")
		if avail != 3_000_000_000 {
			t.Fatalf("Adjust returned %d", avail)
		}
		_, err = s.Ledger.Adjust(ctx, store.Adjustment{UserID: u.ID, DeltaNanos: -3_000_000_001, Reason: "too much", At: t0})
		wantErr(t, err, store.ErrInsufficientFunds, "Adjust below zero")
		var ife *store.InsufficientFundsError
		if !errors.As(err, &ife) || ife.AvailableNanos != 3_000_000_000 || ife.RequiredNanos != 3_000_000_001 {
			t.Fatalf("Adjust below zero: error %#v", err)
		}
		wantBalance(t, s, u.ID, 3_000_000_000, 0)
		_, err = s.Ledger.Adjust(ctx, store.Adjustment{UserID: u.ID, DeltaNanos: 1<<63 - 1, Reason: "overflow", At: t0})
		if err == nil {
			t.Fatal("Adjust past int64 succeeded")
		}
		wantBalance(t, s, u.ID, 3_000_000_000, 0)
		_, err = s.Ledger.Adjust(ctx, store.Adjustment{UserID: newID(), DeltaNanos: 1, Reason: "nobody", At: t0})
		wantErr(t, err, store.ErrNotFound, "Adjust unknown user")
	})

	t.Run("ReserveSettle", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "r@example.com")
		other := mustUser(t, s, "o@example.com")

		_, err := s.Ledger.Reserve(ctx, reservation(u.ID, 100, time.Hour))
		var ife *store.InsufficientFundsError
		if !errors.As(err, &ife) || !errors.Is(err, store.ErrInsufficientFunds) || ife.AvailableNanos != 0 || ife.RequiredNanos != 100 {
			t.Fatalf("Reserve without account: %v", err)
		}

		topUp(t, s, u.ID, 1000)
		topUp(t, s, other.ID, 1000)
		r1 := reservation(u.ID, 400, time.Hour)
		b, err := s.Ledger.Reserve(ctx, r1)
		noErr(t, err, "Reserve")
		if b.AvailableNanos != 600 || b.ReservedNanos != 400 {
			t.Fatalf("Reserve returned %+v", b)
		}
		_, err = s.Ledger.Reserve(ctx, r1)
		wantErr(t, err, store.ErrConflict, "Reserve duplicate ID")
		wantBalance(t, s, u.ID, 600, 400)

		_, err = s.Ledger.Reserve(ctx, reservation(u.ID, 601, time.Hour))
		if !errors.As(err, &ife) || ife.AvailableNanos != 600 || ife.RequiredNanos != 601 {
			t.Fatalf("Reserve 601 of 600: %v", err)
		}
		_, err = s.Ledger.Reserve(ctx, reservation(u.ID, 0, time.Hour))
		wantErr(t, err, store.ErrInvalidArgument, "Reserve zero")

		st, err := s.Ledger.Settle(ctx, r1.ID, 150, t0.Add(time.Minute))
		noErr(t, err, "Settle")
		if st != (store.Settlement{ChargedNanos: 150, RefundedNanos: 250}) {
			t.Fatalf("Settle = %+v", st)
		}
		wantBalance(t, s, u.ID, 850, 0)
		again, err := s.Ledger.Settle(ctx, r1.ID, 400, t0.Add(2*time.Minute))
		noErr(t, err, "Settle again")
		if again != st {
			t.Fatalf("second Settle = %+v, want %+v", again, st)
		}
		wantBalance(t, s, u.ID, 850, 0)

		// The charge never exceeds the reservation.
		r2 := reservation(u.ID, 300, time.Hour)
		_, err = s.Ledger.Reserve(ctx, r2)
		noErr(t, err, "Reserve r2")
		st, err = s.Ledger.Settle(ctx, r2.ID, 10_000, t0)
		noErr(t, err, "Settle over")
		if st != (store.Settlement{ChargedNanos: 300}) {
			t.Fatalf("Settle over = %+v", st)
		}
		wantBalance(t, s, u.ID, 550, 0)
		wantBalance(t, s, other.ID, 1000, 0)

		_, err = s.Ledger.Settle(ctx, newID(), 1, t0)
		wantErr(t, err, store.ErrNotFound, "Settle unknown")
		_, err = s.Ledger.Settle(ctx, r2.ID, -1, t0)
		wantErr(t, err, store.ErrInvalidArgument, "Settle negative")
	})

	t.Run("ReleaseExpired", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "x@example.com")
		v := mustUser(t, s, "y@example.com")
		topUp(t, s, u.ID, 1000)
		topUp(t, s, v.ID, 1000)
		short := reservation(u.ID, 300, time.Minute)
		long := reservation(u.ID, 200, time.Hour)
		vShort := reservation(v.ID, 100, time.Minute)
		settled := reservation(u.ID, 100, time.Minute)
		for _, r := range []store.Reservation{short, long, vShort, settled} {
			_, err := s.Ledger.Reserve(ctx, r)
			noErr(t, err, "Reserve")
		}
		_, err := s.Ledger.Settle(ctx, settled.ID, 100, t0)
		noErr(t, err, "Settle")
		wantBalance(t, s, u.ID, 400, 500)

		n, err := s.Ledger.ReleaseExpired(ctx, t0.Add(time.Minute-1))
		noErr(t, err, "ReleaseExpired early")
		if n != 0 {
			t.Fatalf("released %d before expiry", n)
		}
		n, err = s.Ledger.ReleaseExpired(ctx, t0.Add(time.Minute))
		noErr(t, err, "ReleaseExpired")
		if n != 2 {
			t.Fatalf("released %d, want 2", n)
		}
		wantBalance(t, s, u.ID, 700, 200)
		wantBalance(t, s, v.ID, 1000, 0)
		n, err = s.Ledger.ReleaseExpired(ctx, t0.Add(time.Minute))
		noErr(t, err, "ReleaseExpired again")
		if n != 0 {
			t.Fatalf("released %d twice", n)
		}

		// A settle arriving after the sweeper charges from available, once.
		st, err := s.Ledger.Settle(ctx, short.ID, 250, t0.Add(2*time.Minute))
		noErr(t, err, "late Settle")
		if st != (store.Settlement{ChargedNanos: 250, Late: true}) {
			t.Fatalf("late Settle = %+v", st)
		}
		wantBalance(t, s, u.ID, 450, 200)
		again, err := s.Ledger.Settle(ctx, short.ID, 250, t0.Add(3*time.Minute))
		noErr(t, err, "late Settle again")
		if again != st {
			t.Fatalf("late Settle again = %+v", again)
		}
		wantBalance(t, s, u.ID, 450, 200)

		// A late charge never takes the balance below zero.
		_, err = s.Ledger.Adjust(ctx, store.Adjustment{UserID: v.ID, DeltaNanos: -950, Reason: "drain", At: t0})
		noErr(t, err, "drain")
		st, err = s.Ledger.Settle(ctx, vShort.ID, 100, t0.Add(2*time.Minute))
		noErr(t, err, "late Settle bounded")
		if st != (store.Settlement{ChargedNanos: 50, Late: true}) {
			t.Fatalf("late Settle bounded = %+v", st)
		}
		wantBalance(t, s, v.ID, 0, 0)
	})

	t.Run("ConcurrentReserve", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "hot@example.com")
		const amount, fits, tries = 1_000_000, 50, 200
		topUp(t, s, u.ID, amount*fits)

		var ok, short atomic.Int64
		ids := make(chan string, tries)
		var wg sync.WaitGroup
		for range tries {
			wg.Go(func() {
				r := reservation(u.ID, amount, time.Hour)
				_, err := s.Ledger.Reserve(ctx, r)
				switch {
				case err == nil:
					ok.Add(1)
					ids <- r.ID
				case errors.Is(err, store.ErrInsufficientFunds):
					short.Add(1)
				default:
					t.Errorf("Reserve: %v", err)
				}
			})
		}
		wg.Wait()
		close(ids)
		if ok.Load() != fits || short.Load() != tries-fits {
			t.Fatalf("%d reservations succeeded and %d were refused, want %d and %d", ok.Load(), short.Load(), fits, tries-fits)
		}
		wantBalance(t, s, u.ID, 0, amount*fits)

		// Settle every reservation twice, concurrently: charged once each.
		var charged atomic.Int64
		i := int64(0)
		for id := range ids {
			cost := (i * 37_123) % (amount + 1)
			i++
			var once sync.Once
			for range 2 {
				wg.Go(func() {
					st, err := s.Ledger.Settle(ctx, id, cost, t0)
					if err != nil {
						t.Errorf("Settle: %v", err)
						return
					}
					if st.ChargedNanos != cost || st.RefundedNanos != amount-cost {
						t.Errorf("Settle(%d) = %+v", cost, st)
					}
					once.Do(func() { charged.Add(st.ChargedNanos) })
				})
			}
		}
		wg.Wait()
		wantBalance(t, s, u.ID, amount*fits-charged.Load(), 0)
	})

	t.Run("ConcurrentReserveSettle", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "busy@example.com")
		const initial = 10_000
		topUp(t, s, u.ID, initial)
		var charged atomic.Int64
		var wg sync.WaitGroup
		for g := range 200 {
			wg.Go(func() {
				amount := int64(100 + g%7*50)
				r := reservation(u.ID, amount, time.Hour)
				if _, err := s.Ledger.Reserve(ctx, r); err != nil {
					if !errors.Is(err, store.ErrInsufficientFunds) {
						t.Errorf("Reserve: %v", err)
					}
					return
				}
				st, err := s.Ledger.Settle(ctx, r.ID, int64(g%5)*40, t0)
				if err != nil {
					t.Errorf("Settle: %v", err)
					return
				}
				charged.Add(st.ChargedNanos)
				b, err := s.Ledger.Account(ctx, u.ID)
				if err != nil || b.AvailableNanos < 0 || b.ReservedNanos < 0 {
					t.Errorf("balance %+v, %v", b, err)
				}
			})
		}
		wg.Wait()
		wantBalance(t, s, u.ID, initial-charged.Load(), 0)
		if charged.Load() == 0 {
			t.Fatal("nothing was charged")
		}
	})
}
