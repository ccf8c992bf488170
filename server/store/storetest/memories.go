package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestMemories is the conformance suite for store.Memories. It skips where
// a store keeps no memories.
func TestMemories(t *testing.T, newStore NewStore) {
	t.Run("CRUD", func(t *testing.T) { testMemoryCRUD(t, newStore) })
	t.Run("CrossUser", func(t *testing.T) { testMemoryCrossUser(t, newStore) })
	t.Run("ListOrder", func(t *testing.T) { testMemoryList(t, newStore) })
	t.Run("ConcurrentCreates", func(t *testing.T) { testMemoryCreateRace(t, newStore) })
	t.Run("Switch", func(t *testing.T) { testMemorySwitch(t, newStore) })
}

func memoryStore(t *testing.T, newStore NewStore) store.Store {
	t.Helper()
	s := newStore(t)
	if s.Memories == nil {
		t.Skip("the store keeps no memories")
	}
	return s
}

const memoryMax = 200

func newMemory(userID, text string, at time.Time) store.Memory {
	return store.Memory{ID: newID(), UserID: userID, Text: text, CreatedAt: at, UpdatedAt: at}
}

func sameMemory(t *testing.T, got, want store.Memory, what string) {
	t.Helper()
	if got.ID != want.ID || got.UserID != want.UserID || got.Text != want.Text ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
}

func listMemories(t *testing.T, s store.Store, userID string) []store.Memory {
	t.Helper()
	return collect(t, 7, func(p store.PageRequest) ([]store.Memory, string, error) {
		return s.Memories.List(t.Context(), userID, p)
	})
}

func testMemoryCRUD(t *testing.T, newStore NewStore) {
	s, ctx := memoryStore(t, newStore), t.Context()
	u := mustUser(t, s, "m@example.com")
	m := newMemory(u.ID, "I am vegetarian.", t0)
	m.CreatedAt = t0.Add(-time.Hour)
	noErr(t, s.Memories.Create(ctx, m, memoryMax), "Create")
	if got := listMemories(t, s, u.ID); len(got) != 1 {
		t.Fatalf("listed %d memories, want 1", len(got))
	} else {
		sameMemory(t, got[0], m, "List")
	}

	dup := newMemory(u.ID, "again", t0)
	dup.ID = m.ID
	wantErr(t, s.Memories.Create(ctx, dup, memoryMax), store.ErrConflict, "Create duplicate ID")
	unknownUser(t, s.Memories.Create(ctx, newMemory(newID(), "orphan", t0), memoryMax), "Create for unknown user")

	got, err := s.Memories.Update(ctx, u.ID, m.ID, "I am vegan.", t0.Add(time.Minute))
	noErr(t, err, "Update")
	m.Text, m.UpdatedAt = "I am vegan.", t0.Add(time.Minute)
	sameMemory(t, got, m, "Update")
	got, err = s.Memories.Update(ctx, u.ID, m.ID, "I am pescatarian.", t0.Add(time.Second))
	noErr(t, err, "Update with an older clock")
	m.Text = "I am pescatarian." // UpdatedAt stays
	sameMemory(t, got, m, "Update with an older clock")

	noErr(t, s.Memories.Delete(ctx, u.ID, m.ID), "Delete")
	wantErr(t, s.Memories.Delete(ctx, u.ID, m.ID), store.ErrNotFound, "Delete twice")
	_, err = s.Memories.Update(ctx, u.ID, m.ID, "x", t0.Add(time.Hour))
	wantErr(t, err, store.ErrNotFound, "Update deleted")
	if got := listMemories(t, s, u.ID); len(got) != 0 {
		t.Fatalf("after Delete: %d memories", len(got))
	}
}

func testMemoryCrossUser(t *testing.T, newStore NewStore) {
	s, ctx := memoryStore(t, newStore), t.Context()
	alice, bob := mustUser(t, s, "alice@example.com"), mustUser(t, s, "bob@example.com")
	m := newMemory(alice.ID, "My cat is Bartholomew.", t0)
	noErr(t, s.Memories.Create(ctx, m, memoryMax), "Create")
	_, err := s.Memories.Update(ctx, bob.ID, m.ID, "pwned", t0.Add(time.Hour))
	wantErr(t, err, store.ErrNotFound, "bob updates alice's memory")
	wantErr(t, s.Memories.Delete(ctx, bob.ID, m.ID), store.ErrNotFound, "bob deletes alice's memory")
	if got := listMemories(t, s, bob.ID); len(got) != 0 {
		t.Fatalf("bob lists %d memories", len(got))
	}
	got := listMemories(t, s, alice.ID)
	if len(got) != 1 {
		t.Fatalf("alice lists %d memories, want 1", len(got))
	}
	sameMemory(t, got[0], m, "alice's memory after bob's tries")
}

func testMemoryList(t *testing.T, newStore NewStore) {
	s, ctx := memoryStore(t, newStore), t.Context()
	u, other := mustUser(t, s, "l@example.com"), mustUser(t, s, "other@example.com")
	noErr(t, s.Memories.Create(ctx, newMemory(other.ID, "not mine", t0.Add(time.Hour)), memoryMax), "Create other's")
	const n = 17
	var want []store.Memory
	for i := range n {
		// Groups of three share UpdatedAt, so the ID tie-break matters.
		m := newMemory(u.ID, fmt.Sprint("fact ", i), t0.Add(time.Duration(i/3)*time.Millisecond))
		noErr(t, s.Memories.Create(ctx, m, memoryMax), "Create")
		want = append(want, m)
	}
	slices.SortFunc(want, func(x, y store.Memory) int {
		if c := y.UpdatedAt.Compare(x.UpdatedAt); c != 0 {
			return c
		}
		if x.ID < y.ID {
			return 1
		}
		return -1
	})
	list := func(p store.PageRequest) ([]store.Memory, string, error) { return s.Memories.List(ctx, u.ID, p) }
	for _, size := range []int{1, 4, n, 100} {
		got := collect(t, size, list)
		if len(got) != n {
			t.Fatalf("size %d: listed %d, want %d", size, len(got), n)
		}
		for i := range got {
			sameMemory(t, got[i], want[i], fmt.Sprintf("size %d: item %d", size, i))
		}
	}
	checkBadCursors(t, list)
	// Editing the oldest brings it to the top.
	oldest := want[n-1]
	_, err := s.Memories.Update(ctx, u.ID, oldest.ID, "edited", t0.Add(time.Hour))
	noErr(t, err, "Update oldest")
	first, _, err := s.Memories.List(ctx, u.ID, store.PageRequest{Size: 1})
	noErr(t, err, "List first")
	if len(first) != 1 || first[0].ID != oldest.ID || first[0].Text != "edited" {
		t.Fatalf("after Update the first memory is %+v", first)
	}
}

// Concurrent creates against a max never take a user past it.
func testMemoryCreateRace(t *testing.T, newStore NewStore) {
	s, ctx := memoryStore(t, newStore), t.Context()
	const workers, max = 16, 5
	u := mustUser(t, s, "race@example.com")
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		errs  = make([]error, workers)
	)
	for i := range workers {
		wg.Go(func() {
			<-start
			errs[i] = s.Memories.Create(ctx, newMemory(u.ID, fmt.Sprint(i), t0), max)
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrQuotaExceeded):
			t.Fatalf("Create %d: %v, want nil or %v", i, err, store.ErrQuotaExceeded)
		}
	}
	if all := listMemories(t, s, u.ID); ok != max || len(all) != max {
		t.Fatalf("%d of %d concurrent creates succeeded and %d memories are stored, want %d", ok, workers, len(all), max)
	}
}

// The memory switch: on by default, kept apart from the custom
// instructions, per user.
func testMemorySwitch(t *testing.T, newStore NewStore) {
	s, ctx := memoryStore(t, newStore), t.Context()
	alice, bob := mustUser(t, s, "alice@example.com"), mustUser(t, s, "bob@example.com")
	enabled := func(u string) bool {
		t.Helper()
		on, err := s.Memories.Enabled(ctx, u)
		noErr(t, err, "Enabled")
		return on
	}
	if !enabled(alice.ID) {
		t.Fatal("memory is off for a new user")
	}
	noErr(t, s.Memories.SetEnabled(ctx, alice.ID, false, t0), "SetEnabled off")
	if enabled(alice.ID) || !enabled(bob.ID) {
		t.Fatalf("after alice turned it off: alice %v, bob %v", enabled(alice.ID), enabled(bob.ID))
	}
	// The custom instructions and the switch do not overwrite each other.
	noErr(t, s.Conversations.SetInstructions(ctx, alice.ID, "Be brief.", t0.Add(time.Second)), "SetInstructions")
	if enabled(alice.ID) {
		t.Fatal("setting instructions turned memory back on")
	}
	noErr(t, s.Memories.SetEnabled(ctx, alice.ID, true, t0.Add(2*time.Second)), "SetEnabled on")
	text, err := s.Conversations.Instructions(ctx, alice.ID)
	noErr(t, err, "Instructions")
	if text != "Be brief." || !enabled(alice.ID) {
		t.Fatalf("after turning memory on: instructions %q, enabled %v", text, enabled(alice.ID))
	}
	unknownUser(t, s.Memories.SetEnabled(ctx, newID(), false, t0), "SetEnabled for an unknown user")
}
