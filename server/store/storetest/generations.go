package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
)

// TestGenerations is the conformance suite of store.Generations.
func TestGenerations(t *testing.T, newGenerations func(t *testing.T) store.Generations) {
	ctx := context.Background()
	id := func() string { return uuid.Must(uuid.NewV7()).String() }

	t.Run("one generation at a time", func(t *testing.T) {
		g, c := newGenerations(t), id()
		if err := g.Start(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := g.Start(ctx, c); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second Start: %v, want ErrConflict", err)
		}
		if running, _ := g.Running(ctx, c); !running {
			t.Fatal("not running after Start")
		}
		if err := g.Finish(ctx, c, time.Minute); err != nil {
			t.Fatal(err)
		}
		if running, _ := g.Running(ctx, c); running {
			t.Fatal("running after Finish")
		}
		if err := g.Start(ctx, c); err != nil {
			t.Fatalf("Start after Finish: %v", err)
		}
	})

	t.Run("keep", func(t *testing.T) {
		g, c := newGenerations(t), id()
		if err := g.Keep(ctx, c); err != nil {
			t.Fatalf("Keep with nothing running: %v", err)
		}
		if running, _ := g.Running(ctx, c); running {
			t.Fatal("Keep started a generation")
		}
		if err := g.Start(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := g.Keep(ctx, c); err != nil {
			t.Fatalf("Keep: %v", err)
		}
		if running, _ := g.Running(ctx, c); !running {
			t.Fatal("not running after Keep")
		}
		if err := g.Finish(ctx, c, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := g.Keep(ctx, c); err != nil {
			t.Fatalf("Keep after Finish: %v", err)
		}
		if running, _ := g.Running(ctx, c); running {
			t.Fatal("Keep revived a finished generation")
		}
	})

	t.Run("follow live, replay, resume", func(t *testing.T) {
		g, c := newGenerations(t), id()
		if err := g.Start(ctx, c); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 100)
		done := make(chan error, 1)
		go func() {
			done <- g.Follow(ctx, c, 0, func(seq uint64, ev []byte) error {
				got <- fmt.Sprintf("%d:%s", seq, ev)
				return nil
			})
		}()
		for i := uint64(1); i <= 5; i++ {
			if err := g.Append(ctx, c, i, []byte(fmt.Sprint("e", i))); err != nil {
				t.Fatal(err)
			}
			if s := <-got; s != fmt.Sprintf("%d:e%d", i, i) {
				t.Fatalf("followed %q", s)
			}
		}
		if err := g.Finish(ctx, c, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("Follow ended with %v", err)
		}
		// After the end, a late follower resuming after seq 3 gets 4 and 5.
		var late []string
		if err := g.Follow(ctx, c, 3, func(seq uint64, ev []byte) error {
			late = append(late, fmt.Sprintf("%d:%s", seq, ev))
			return nil
		}); err != nil || fmt.Sprint(late) != "[4:e4 5:e5]" {
			t.Fatalf("late follower: %v %v", late, err)
		}
	})

	t.Run("follow ends with the caller", func(t *testing.T) {
		g, c := newGenerations(t), id()
		_ = g.Start(ctx, c)
		_ = g.Append(ctx, c, 1, []byte("x"))
		stop := errors.New("client gone")
		if err := g.Follow(ctx, c, 0, func(uint64, []byte) error { return stop }); !errors.Is(err, stop) {
			t.Fatalf("Follow: %v", err)
		}
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if err := g.Follow(cctx, c, 1, func(uint64, []byte) error { return nil }); err == nil {
			t.Fatal("Follow outlived its context")
		}
	})

	t.Run("unknown and abandoned", func(t *testing.T) {
		g, c := newGenerations(t), id()
		if err := g.Follow(ctx, c, 0, func(uint64, []byte) error { return nil }); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Follow of nothing: %v", err)
		}
		_ = g.Start(ctx, c)
		if err := g.Abandon(ctx, c); err != nil {
			t.Fatal(err)
		}
		if running, _ := g.Running(ctx, c); running {
			t.Fatal("running after Abandon")
		}
		if err := g.Start(ctx, c); err != nil {
			t.Fatalf("Start after Abandon: %v", err)
		}
	})

	t.Run("cancel reaches the running gateway", func(t *testing.T) {
		g, c := newGenerations(t), id()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cancels := g.Cancels(cctx)
		time.Sleep(50 * time.Millisecond) // let a subscription settle
		if ok, err := g.Cancel(ctx, c); ok || err != nil {
			t.Fatalf("Cancel of nothing: %v %v", ok, err)
		}
		_ = g.Start(ctx, c)
		if ok, err := g.Cancel(ctx, c); !ok || err != nil {
			t.Fatalf("Cancel: %v %v", ok, err)
		}
		select {
		case got := <-cancels:
			if got != c {
				t.Fatalf("cancel of %q delivered as %q", c, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the cancel was not delivered")
		}
	})
}
