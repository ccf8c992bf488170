package usage_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/internal/wait"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
	"github.com/parleyhq/parley/server/usage"
)

// flaky is a Usage store that refuses every batch while down.
type flaky struct {
	down    atomic.Bool
	calls   atomic.Int64
	mu      sync.Mutex
	records map[string]store.UsageRecord
}

func (f *flaky) Record(_ context.Context, recs []store.UsageRecord) error {
	f.calls.Add(1)
	if f.down.Load() {
		return errors.New("connection refused")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		f.records[r.RequestID] = r
	}
	return nil
}

func (f *flaky) List(context.Context, string, store.UsageFilter, store.PageRequest) ([]store.UsageRecord, string, error) {
	return nil, "", errors.New("not used")
}

func (f *flaky) Summarize(context.Context, string, time.Time, time.Time, time.Duration) ([]store.UsageDay, error) {
	return nil, errors.New("not used")
}

func (f *flaky) SummarizeKeys(context.Context, string, time.Time, time.Time, time.Duration) ([]store.UsageDay, error) {
	return nil, errors.New("not used")
}

func (f *flaky) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.records)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 10*time.Second, what, cond)
}

// Records settled while the Usage store is down wait in the outbox (the
// backlog metric shows them), are retried with back-off rather than in a
// tight loop, and all arrive once it is back; a Kick ships at once.
func TestRelayWaitsOutAnOutage(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.StoreWithOutbox()
	dest := &flaky{records: map[string]store.UsageRecord{}}
	reg := prometheus.NewRegistry()
	relay := usage.NewRelay(st.Outbox, dest, reg, slog.New(slog.NewTextHandler(io.Discard, nil)),
		usage.Config{Batch: 10, Interval: time.Hour, MaxBackoff: 80 * time.Millisecond})
	defer relay.Close()

	settle := func(n int) {
		for range n {
			rec := &store.UsageRecord{RequestID: uuid.NewString(), UserID: "u", Channel: store.ChannelWeb, Model: "m", CreatedAt: time.Now()}
			if _, err := st.Ledger.Settle(ctx, "", 0, time.Now(), rec); err != nil {
				t.Fatal(err)
			}
		}
		relay.Kick()
	}
	// A kick ships at once (the interval is an hour), in batches.
	settle(25)
	waitFor(t, "25 records shipped", func() bool { return dest.count() == 25 })

	dest.down.Store(true)
	before := dest.calls.Load()
	settle(40)
	waitFor(t, "the backlog metric", func() bool { return metric(t, reg, "parley_usage_outbox_backlog") == 40 })
	time.Sleep(500 * time.Millisecond)
	// Back-off: at most one try per 40–120 ms (the wait doubles from the
	// interval, capped at 80 ms, with jitter), not a spin.
	if tries := dest.calls.Load() - before; tries < 3 || tries > 20 {
		t.Fatalf("%d tries in 500 ms while the store was down", tries)
	}
	if n, _, _ := st.Outbox.Backlog(ctx); n != 40 {
		t.Fatalf("backlog %d while down, want 40", n)
	}

	dest.down.Store(false)
	waitFor(t, "the outbox shipped after the outage", func() bool { return dest.count() == 65 })
	// The last batch is deleted once Record returned: wait for it.
	waitFor(t, "the outbox emptied", func() bool { n, _, _ := st.Outbox.Backlog(ctx); return n == 0 })
	waitFor(t, "relayed_total 65", func() bool { return metric(t, reg, "parley_usage_relayed_total") == 65 })
}

// metric reads a registered gauge's or counter's value.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A batch that failed while it was small (stamped as settles were still
// arriving) is shipped again as it was, and the relay goes on to ship what
// came after it, though that first batch is smaller than a full one.
func TestRelayShipsPastASmallRetriedBatch(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.StoreWithOutbox()
	settle := func(n int) {
		for range n {
			rec := &store.UsageRecord{RequestID: uuid.NewString(), UserID: "u", Channel: store.ChannelWeb, Model: "m", CreatedAt: time.Now()}
			if _, err := st.Ledger.Settle(ctx, "", 0, time.Now(), rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle(1)
	if _, err := st.Outbox.Ship(ctx, 10, func(context.Context, []store.UsageRecord) error { return errors.New("down") }); err == nil {
		t.Fatal("the failing ship succeeded")
	}
	settle(25)
	dest := &flaky{records: map[string]store.UsageRecord{}}
	relay := usage.NewRelay(st.Outbox, dest, nil, slog.New(slog.NewTextHandler(io.Discard, nil)),
		usage.Config{Batch: 10, Interval: time.Hour})
	defer relay.Close()
	// No kick: the relay's first round, at its start, ships them all.
	waitFor(t, "all 26 records shipped", func() bool { return dest.count() == 26 })
}
