package storetest

import (
	"context"
	"errors"
	"slices"
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

// usageOf returns a fresh request's usage record for Settle.
func usageOf(userID string) *store.UsageRecord {
	return &store.UsageRecord{RequestID: newID(), UserID: userID, APIKeyID: "k", Channel: store.ChannelAPI, Model: "sim-small",
		PromptTokens: 10, CompletionTokens: 5, CachedTokens: 2, Estimated: true, FinishReason: "stop", CreatedAt: t0, EndUser: "e", RequestedModel: "claude-opus-4-1"}
}

// errPeek makes UsageOutbox.Ship keep the records it handed out.
var errPeek = errors.New("storetest: peek")

// relayed holds, by user, the records recordsOf shipped out of outboxes to
// look past them. User IDs are unique across the suites' stores.
var relayed = struct {
	sync.Mutex
	recs map[string][]store.UsageRecord
}{recs: map[string][]store.UsageRecord{}}

// recordsOf returns every usage record of the user that Settle stored: in
// Usage, or in the Outbox. It peeks at the Outbox's oldest batch; a batch
// handed out is handed out again whole before any later record, so while
// records wait behind it the batch is shipped, into relayed, and the next
// looked at. The records stay in the Outbox as long as that allows: a
// request ID there is taken (SettleIsAtomic).
func recordsOf(t *testing.T, s store.Store, userID string) []store.UsageRecord {
	t.Helper()
	if s.Outbox == nil {
		return collect(t, store.MaxPageSize, func(p store.PageRequest) ([]store.UsageRecord, string, error) {
			return s.Usage.List(t.Context(), userID, store.UsageFilter{}, p)
		})
	}
	var batch []store.UsageRecord
	for {
		batch = nil
		_, err := s.Outbox.Ship(t.Context(), 1_000_000, func(_ context.Context, recs []store.UsageRecord) error {
			batch = recs
			return errPeek
		})
		if !errors.Is(err, errPeek) && err != nil {
			t.Fatalf("Outbox.Ship: %v", err)
		}
		waiting, _, err := s.Outbox.Backlog(t.Context())
		noErr(t, err, "Outbox.Backlog")
		if int64(len(batch)) >= waiting {
			break
		}
		_, err = s.Outbox.Ship(t.Context(), 1_000_000, func(_ context.Context, recs []store.UsageRecord) error {
			relayed.Lock()
			defer relayed.Unlock()
			for _, r := range recs {
				relayed.recs[r.UserID] = append(relayed.recs[r.UserID], r)
			}
			return nil
		})
		noErr(t, err, "Outbox.Ship")
	}
	relayed.Lock()
	out := slices.Clone(relayed.recs[userID])
	relayed.Unlock()
	for _, r := range batch {
		if r.UserID == userID {
			out = append(out, r)
		}
	}
	return out
}

// wantRecords asserts that the user's stored records cost exactly these
// amounts (in any order).
func wantRecords(t *testing.T, s store.Store, userID string, costs ...int64) {
	t.Helper()
	recs := recordsOf(t, s, userID)
	got := make([]int64, len(recs))
	for i, r := range recs {
		got[i] = r.CostNanos
	}
	slices.Sort(got)
	slices.Sort(costs)
	if !slices.Equal(got, costs) {
		t.Fatalf("records of %s cost %v, want %v", userID, got, costs)
	}
}

func sumCost(recs []store.UsageRecord) int64 {
	var n int64
	for _, r := range recs {
		n += r.CostNanos
	}
	return n
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
		// The ledger may live apart from the users (PostgreSQL's
		// --billing-postgres-url) and cannot tell an unknown user: callers
		// resolve the user first. One that holds both may refuse.
		if _, err = s.Ledger.Adjust(ctx, store.Adjustment{UserID: newID(), DeltaNanos: 1, Reason: "nobody", At: t0}); err != nil {
			wantErr(t, err, store.ErrNotFound, "Adjust unknown user")
		}
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
		over := r1
		over.AmountNanos = 1 << 40 // more than the balance: the ID is still what is reported
		_, err = s.Ledger.Reserve(ctx, over)
		wantErr(t, err, store.ErrConflict, "Reserve duplicate ID over the balance")
		wantBalance(t, s, u.ID, 600, 400)

		_, err = s.Ledger.Reserve(ctx, reservation(u.ID, 601, time.Hour))
		if !errors.As(err, &ife) || ife.AvailableNanos != 600 || ife.RequiredNanos != 601 {
			t.Fatalf("Reserve 601 of 600: %v", err)
		}
		_, err = s.Ledger.Reserve(ctx, reservation(u.ID, 0, time.Hour))
		wantErr(t, err, store.ErrInvalidArgument, "Reserve zero")

		st, err := s.Ledger.Settle(ctx, r1.ID, 150, t0.Add(time.Minute), usageOf(u.ID))
		noErr(t, err, "Settle")
		if st != (store.Settlement{ChargedNanos: 150, RefundedNanos: 250}) {
			t.Fatalf("Settle = %+v", st)
		}
		wantBalance(t, s, u.ID, 850, 0)
		again, err := s.Ledger.Settle(ctx, r1.ID, 400, t0.Add(2*time.Minute), usageOf(u.ID))
		noErr(t, err, "Settle again")
		if again != st {
			t.Fatalf("second Settle = %+v, want %+v", again, st)
		}
		wantBalance(t, s, u.ID, 850, 0)

		// The charge never exceeds the reservation.
		r2 := reservation(u.ID, 300, time.Hour)
		_, err = s.Ledger.Reserve(ctx, r2)
		noErr(t, err, "Reserve r2")
		st, err = s.Ledger.Settle(ctx, r2.ID, 10_000, t0, usageOf(u.ID))
		noErr(t, err, "Settle over")
		if st != (store.Settlement{ChargedNanos: 300}) {
			t.Fatalf("Settle over = %+v", st)
		}
		wantBalance(t, s, u.ID, 550, 0)
		wantBalance(t, s, other.ID, 1000, 0)
		// One record per charge, with what was charged; the second settle
		// of r1 recorded nothing.
		wantRecords(t, s, u.ID, 150, 300)
		wantRecords(t, s, other.ID)

		_, err = s.Ledger.Settle(ctx, newID(), 1, t0, usageOf(u.ID))
		wantErr(t, err, store.ErrNotFound, "Settle unknown")
		_, err = s.Ledger.Settle(ctx, r2.ID, -1, t0, usageOf(u.ID))
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
		_, err := s.Ledger.Settle(ctx, settled.ID, 100, t0, usageOf(u.ID))
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
		st, err := s.Ledger.Settle(ctx, short.ID, 250, t0.Add(2*time.Minute), usageOf(u.ID))
		noErr(t, err, "late Settle")
		if st != (store.Settlement{ChargedNanos: 250, Late: true}) {
			t.Fatalf("late Settle = %+v", st)
		}
		wantBalance(t, s, u.ID, 450, 200)
		again, err := s.Ledger.Settle(ctx, short.ID, 250, t0.Add(3*time.Minute), usageOf(u.ID))
		noErr(t, err, "late Settle again")
		if again != st {
			t.Fatalf("late Settle again = %+v", again)
		}
		wantBalance(t, s, u.ID, 450, 200)

		// A late charge never takes the balance below zero.
		_, err = s.Ledger.Adjust(ctx, store.Adjustment{UserID: v.ID, DeltaNanos: -950, Reason: "drain", At: t0})
		noErr(t, err, "drain")
		st, err = s.Ledger.Settle(ctx, vShort.ID, 100, t0.Add(2*time.Minute), usageOf(v.ID))
		noErr(t, err, "late Settle bounded")
		if st != (store.Settlement{ChargedNanos: 50, Late: true}) {
			t.Fatalf("late Settle bounded = %+v", st)
		}
		wantBalance(t, s, v.ID, 0, 0)
		wantRecords(t, s, u.ID, 100, 250)
		wantRecords(t, s, v.ID, 50)
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
			rec := usageOf(u.ID) // both settles are the same request's
			for range 2 {
				wg.Go(func() {
					st, err := s.Ledger.Settle(ctx, id, cost, t0, rec)
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
		// Recorded once each: as many records as reservations, costing
		// what was charged.
		recs := recordsOf(t, s, u.ID)
		if len(recs) != fits || sumCost(recs) != charged.Load() {
			t.Fatalf("%d records costing %d; want %d costing %d", len(recs), sumCost(recs), fits, charged.Load())
		}
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
				st, err := s.Ledger.Settle(ctx, r.ID, int64(g%5)*40, t0, usageOf(u.ID))
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
		if recs := recordsOf(t, s, u.ID); sumCost(recs) != charged.Load() {
			t.Fatalf("%d records costing %d; %d was charged", len(recs), sumCost(recs), charged.Load())
		}
	})

	t.Run("ReleasedHoldReheld", func(t *testing.T) {
		// A hold released with nothing charged or recorded (its work never
		// ran) is forgotten: a later attempt under the same id holds anew
		// and is charged and recorded, once.
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "again@example.com")
		topUp(t, s, u.ID, 1000)
		r := reservation(u.ID, 300, time.Hour)
		_, err := s.Ledger.Reserve(ctx, r)
		noErr(t, err, "Reserve")
		st, err := s.Ledger.Settle(ctx, r.ID, 0, t0, nil)
		noErr(t, err, "Settle 0 with no record")
		if st.ChargedNanos != 0 || st.RefundedNanos != 300 {
			t.Fatalf("the release: %+v", st)
		}
		_, err = s.Ledger.Settle(ctx, r.ID, 0, t0, nil)
		noErr(t, err, "the release again (a retried call)")
		wantBalance(t, s, u.ID, 1000, 0)
		_, err = s.Ledger.Reserve(ctx, r)
		noErr(t, err, "Reserve the same id again")
		wantBalance(t, s, u.ID, 700, 300)
		rec := usageOf(u.ID)
		st, err = s.Ledger.Settle(ctx, r.ID, 120, t0, rec)
		noErr(t, err, "Settle the second attempt")
		if st.ChargedNanos != 120 {
			t.Fatalf("the second attempt's charge: %+v", st)
		}
		wantBalance(t, s, u.ID, 880, 0)
		if got := recordsOf(t, s, u.ID); len(got) != 1 || got[0].CostNanos != 120 {
			t.Fatalf("records: %+v", got)
		}
		// Settled with a charge, it is kept: the same id again conflicts.
		_, err = s.Ledger.Reserve(ctx, r)
		wantErr(t, err, store.ErrConflict, "Reserve a charged id again")
	})
	t.Run("SettleRecords", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "rec@example.com")
		topUp(t, s, u.ID, 1000)

		// The record is stored with the reservation's user and the charge.
		r1 := reservation(u.ID, 400, time.Hour)
		_, err := s.Ledger.Reserve(ctx, r1)
		noErr(t, err, "Reserve")
		rec := usageOf("")
		rec.CostNanos = 999_999
		_, err = s.Ledger.Settle(ctx, r1.ID, 120, t0, rec)
		noErr(t, err, "Settle")
		got := recordsOf(t, s, u.ID)
		if len(got) != 1 {
			t.Fatalf("%d records, want 1", len(got))
		}
		want := *rec
		want.UserID, want.CostNanos = u.ID, 120
		sameTime(t, got[0].CreatedAt, want.CreatedAt, "CreatedAt")
		got[0].CreatedAt = want.CreatedAt
		if got[0] != want {
			t.Fatalf("record = %+v, want %+v", got[0], want)
		}
		if rec.CostNanos != 999_999 || rec.UserID != "" {
			t.Fatalf("Settle changed the caller's record: %+v", rec)
		}

		// A charge needs its record; refused, it changes nothing.
		r2 := reservation(u.ID, 100, time.Hour)
		_, err = s.Ledger.Reserve(ctx, r2)
		noErr(t, err, "Reserve r2")
		_, err = s.Ledger.Settle(ctx, r2.ID, 1, t0, nil)
		wantErr(t, err, store.ErrInvalidArgument, "Settle a charge without a record")
		_, err = s.Ledger.Settle(ctx, r2.ID, 1, t0, &store.UsageRecord{UserID: u.ID})
		wantErr(t, err, store.ErrInvalidArgument, "Settle with a record without a request ID")
		wantBalance(t, s, u.ID, 780, 100)
		// A release (nothing charged) needs none.
		st, err := s.Ledger.Settle(ctx, r2.ID, 0, t0, nil)
		noErr(t, err, "release")
		if st != (store.Settlement{RefundedNanos: 100}) {
			t.Fatalf("release = %+v", st)
		}
		wantBalance(t, s, u.ID, 880, 0)
		wantRecords(t, s, u.ID, 120)

		// Nothing held (a free model, the web channel): the record alone,
		// at no cost, once.
		free := usageOf(u.ID)
		free.CostNanos = 5
		for range 2 {
			st, err = s.Ledger.Settle(ctx, "", 0, t0, free)
			noErr(t, err, "Settle without a reservation")
			if st != (store.Settlement{}) {
				t.Fatalf("Settle without a reservation = %+v", st)
			}
		}
		st, err = s.Ledger.Settle(ctx, "", 0, t0, nil)
		noErr(t, err, "Settle nothing")
		if st != (store.Settlement{}) {
			t.Fatalf("Settle nothing = %+v", st)
		}
		wantBalance(t, s, u.ID, 880, 0)
		wantRecords(t, s, u.ID, 0, 120)
	})

	t.Run("SettleIsAtomic", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "atomic@example.com")
		topUp(t, s, u.ID, 1000)
		held := reservation(u.ID, 300, time.Hour)
		swept := reservation(u.ID, 200, time.Minute)
		first := reservation(u.ID, 100, time.Hour)
		for _, r := range []store.Reservation{held, swept, first} {
			_, err := s.Ledger.Reserve(ctx, r)
			noErr(t, err, "Reserve")
		}
		taken := usageOf(u.ID)
		_, err := s.Ledger.Settle(ctx, first.ID, 60, t0, taken)
		noErr(t, err, "Settle first")
		wantBalance(t, s, u.ID, 440, 500)

		// A settle whose record cannot be stored (its request ID is taken)
		// charges nothing: the reservation stays held.
		dup := *taken
		dup.CostNanos = 0
		_, err = s.Ledger.Settle(ctx, held.ID, 250, t0, &dup)
		wantErr(t, err, store.ErrConflict, "Settle with a stored request ID")
		wantBalance(t, s, u.ID, 440, 500)
		wantRecords(t, s, u.ID, 60)

		// The same on the late path, after the sweeper released the hold.
		n, err := s.Ledger.ReleaseExpired(ctx, t0.Add(time.Minute))
		noErr(t, err, "ReleaseExpired")
		if n != 1 {
			t.Fatalf("released %d, want 1", n)
		}
		wantBalance(t, s, u.ID, 640, 300)
		_, err = s.Ledger.Settle(ctx, swept.ID, 150, t0.Add(2*time.Minute), &dup)
		wantErr(t, err, store.ErrConflict, "late Settle with a stored request ID")
		wantBalance(t, s, u.ID, 640, 300)
		wantRecords(t, s, u.ID, 60)

		// Both settle once the record can be stored, each with its record.
		st, err := s.Ledger.Settle(ctx, held.ID, 250, t0, usageOf(u.ID))
		noErr(t, err, "Settle held")
		if st != (store.Settlement{ChargedNanos: 250, RefundedNanos: 50}) {
			t.Fatalf("Settle held = %+v", st)
		}
		st, err = s.Ledger.Settle(ctx, swept.ID, 150, t0.Add(2*time.Minute), usageOf(u.ID))
		noErr(t, err, "late Settle")
		if st != (store.Settlement{ChargedNanos: 150, Late: true}) {
			t.Fatalf("late Settle = %+v", st)
		}
		wantBalance(t, s, u.ID, 1000-60-250-150, 0)
		wantRecords(t, s, u.ID, 60, 150, 250)
	})
}
