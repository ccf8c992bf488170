package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestPrompts is the conformance suite for store.Prompts: names unique per
// person, another person's prompt not found, and the cap held under racing
// creates.
func TestPrompts(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	if s.Prompts == nil {
		t.Skip("the store keeps no prompts")
	}
	a, b := mustUser(t, s, "prompts-a@example.com"), mustUser(t, s, "prompts-b@example.com")
	p := store.SavedPrompt{ID: newID(), UserID: a.ID, Name: "summarize", Text: "Summarize this in three bullets:", UpdatedAt: t0}
	noErr(t, s.Prompts.CreatePrompt(ctx, p), "CreatePrompt")
	dup := p
	dup.ID = newID()
	wantErr(t, s.Prompts.CreatePrompt(ctx, dup), store.ErrConflict, "a second prompt of the name")
	theirs := dup
	theirs.UserID = b.ID
	noErr(t, s.Prompts.CreatePrompt(ctx, theirs), "another person's prompt of the name")
	q := store.SavedPrompt{ID: newID(), UserID: a.ID, Name: "translate", Text: "Translate to French:", UpdatedAt: t0}
	noErr(t, s.Prompts.CreatePrompt(ctx, q), "CreatePrompt 2")
	q.Name = "summarize"
	wantErr(t, s.Prompts.UpdatePrompt(ctx, q), store.ErrConflict, "renamed onto another")
	q.Name, q.Text, q.UpdatedAt = "french", "En français :", t0.Add(time.Hour)
	noErr(t, s.Prompts.UpdatePrompt(ctx, q), "UpdatePrompt")
	hijack := q
	hijack.UserID = b.ID
	wantErr(t, s.Prompts.UpdatePrompt(ctx, hijack), store.ErrNotFound, "another person's update")
	wantErr(t, s.Prompts.DeletePrompt(ctx, b.ID, q.ID), store.ErrNotFound, "another person's delete")
	list, err := s.Prompts.ListPrompts(ctx, a.ID)
	noErr(t, err, "ListPrompts")
	if len(list) != 2 || list[0].Name != "french" || list[0].Text != "En français :" || list[1].Name != "summarize" {
		t.Fatalf("a's prompts: %+v", list)
	}
	noErr(t, s.Prompts.DeletePrompt(ctx, a.ID, q.ID), "DeletePrompt")
	wantErr(t, s.Prompts.DeletePrompt(ctx, a.ID, q.ID), store.ErrNotFound, "a second delete")
	// The cap, with creates racing for its last places.
	c := mustUser(t, s, "prompts-c@example.com")
	for i := range store.MaxSavedPrompts - 3 {
		noErr(t, s.Prompts.CreatePrompt(ctx, store.SavedPrompt{ID: newID(), UserID: c.ID, Name: fmt.Sprint("p", i), Text: "x", UpdatedAt: t0}), "filling")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	made, refused := 0, 0
	for i := range 8 {
		wg.Go(func() {
			err := s.Prompts.CreatePrompt(ctx, store.SavedPrompt{ID: newID(), UserID: c.ID, Name: fmt.Sprint("race", i), Text: "x", UpdatedAt: t0})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made++
			case errors.Is(err, store.ErrQuotaExceeded):
				refused++
			default:
				t.Errorf("a racing create: %v", err)
			}
		})
	}
	wg.Wait()
	if made != 3 || refused != 5 {
		t.Fatalf("8 racing for 3 places: %d made, %d refused", made, refused)
	}
}
