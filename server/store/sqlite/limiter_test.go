package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlimit"
	"github.com/parleyhq/parley/server/store/sqlite"
)

// The in-process limiter saved to SQLite and restored in a new process
// (a new Limiter on a reopened database) holds exactly what it held.
func TestLimiterBucketsSurviveAReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 123)
	l := memlimit.New(time.Hour)
	ctx, stop := context.WithCancel(t.Context())
	done, err := memlimit.Persist(ctx, l, db, time.Hour, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	takes := []store.Take{
		{Key: "requests:u1", Limit: 50, Window: 24 * time.Hour, N: 7},
		{Key: "output:u1", Limit: 1000, Window: time.Hour, N: 333},
	}
	if d, err := l.Take(t.Context(), now, takes); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	// A fractional unit accrued, then refunded output: the exact state.
	if _, err := l.Refund(t.Context(), now.Add(10*time.Millisecond), "output:u1", 1000, time.Hour, 3); err != nil {
		t.Fatal(err)
	}
	stop() // a clean shutdown saves once more
	<-done
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l2 := memlimit.New(time.Hour)
	ctx2, stop2 := context.WithCancel(t.Context())
	defer stop2()
	if _, err := memlimit.Persist(ctx2, l2, db, time.Hour, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	at := now.Add(20 * time.Second)
	for _, tk := range takes {
		want, _ := l.Peek(t.Context(), at, tk.Key, tk.Limit, tk.Window)
		got, _ := l2.Peek(t.Context(), at, tk.Key, tk.Limit, tk.Window)
		if got != want || got.Remaining == tk.Limit {
			t.Errorf("%s after the reopen: %+v, want %+v", tk.Key, got, want)
		}
	}
	if len(l2.Snapshot()) != 2 {
		t.Errorf("restored %d buckets, want 2", len(l2.Snapshot()))
	}
}
