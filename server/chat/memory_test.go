package chat

import (
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

func TestRelevantMemories(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mem := func(id, text string, age time.Duration) store.Memory {
		return store.Memory{ID: id, Text: text, UpdatedAt: t0.Add(-age)}
	}
	all := []store.Memory{
		mem("old-veg", "I am vegetarian.", 10*time.Hour),
		mem("cello", "I play the cello in an orchestra.", time.Hour),
		mem("lisbon", "I live in Lisbon.", 2*time.Hour),
		mem("dinner", "Dinner is at eight; I am the one who cooks dinner.", 3*time.Hour),
		mem("new", "My car is blue.", 0),
	}
	ids := func(ms []store.Memory) string {
		s := ""
		for _, m := range ms {
			s += m.ID + " "
		}
		return s
	}
	for _, tc := range []struct {
		message string
		n       int
		want    string
	}{
		// Shared words first, equal scores the newer first, then the newest.
		{"Suggest a vegetarian dinner", 5, "dinner old-veg new cello lisbon "},
		{"Suggest a vegetarian dinner", 2, "dinner old-veg "},
		// Two shared words beat one, however old.
		{"vegetarian in Lisbon, or dinner at eight?", 2, "dinner lisbon "},
		{"vegetarian: Lisbon", 3, "lisbon old-veg new "},
		// Stop words alone make nothing relevant: the newest.
		{"What is it that I am in?", 2, "new cello "},
		{"CELLO practice tips", 1, "cello "},
		{"anything", 0, ""},
	} {
		if got := ids(RelevantMemories(tc.message, all, tc.n)); got != tc.want {
			t.Errorf("RelevantMemories(%q, %d) = %q, want %q", tc.message, tc.n, got, tc.want)
		}
	}
	if RelevantMemories("x", nil, 5) != nil {
		t.Error("no memories gave some")
	}
	// Equal scores and times fall back to the ID, so the choice is stable.
	var same []store.Memory
	for i := range 4 {
		same = append(same, store.Memory{ID: fmt.Sprint(i), Text: "fact", UpdatedAt: t0})
	}
	if got := ids(RelevantMemories("fact", same, 3)); got != "3 2 1 " {
		t.Errorf("ties: %q", got)
	}
	if got := memoryText(all[:2]); got != "The user asked you to remember these facts about them; use them where they help:\n- I am vegetarian.\n- I play the cello in an orchestra." {
		t.Errorf("memoryText: %q", got)
	}
}
