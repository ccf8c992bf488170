package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestSearch is the conformance suite for store.ConversationSearch, over
// the same backend's Conversations and Messages (a backend whose messages
// live elsewhere passes TestSearchTitles only).
func TestSearch(t *testing.T, newStore NewStore) {
	t.Run("Titles", func(t *testing.T) { TestSearchTitles(t, newStore) })
	t.Run("Messages", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u, v := mustUser(t, s, "search-m@example.com"), mustUser(t, s, "search-m2@example.com")
		c1 := titledConv(t, s, u.ID, "Holiday plans", t0)
		c2 := titledConv(t, s, u.ID, "", t0.Add(time.Second))
		other := titledConv(t, s, v.ID, "Pelican notes", t0.Add(2*time.Second))
		msg := func(c store.Conversation, id, text string, at time.Time) {
			noErr(t, s.Messages.Append(ctx, store.Message{ID: id, ConversationID: c.ID, Role: "user",
				Parts: []store.Part{{Text: text}, {AttachmentID: "att-xyzzy"}}, CreatedAt: at}), "Append")
		}
		m1, m2, m3, m4 := newID(), newID(), newID(), newID()
		msg(c1, m1, "Where do pelicans nest in Portugal?", t0.Add(3*time.Second))
		msg(c2, m2, "Pelican facts, please", t0.Add(4*time.Second))
		msg(c2, m3, "More about the pelicans of Lisbon", t0.Add(5*time.Second))
		msg(other, m4, "pelican secrets of another user", t0.Add(6*time.Second))
		noErr(t, s.Conversations.Touch(ctx, u.ID, c2.ID, t0.Add(10*time.Second), ""), "Touch")

		hits := searchAll(t, s, u.ID, "PELICAN")
		if got := hitIDs(hits); !slices.Equal(got, []string{c2.ID, c1.ID}) {
			t.Fatalf("pelican: got %v, want [%s %s] (most recently updated first, only the user's)", got, c2.ID, c1.ID)
		}
		if hits[0].MessageID != m3 || hits[0].Text != "More about the pelicans of Lisbon" {
			t.Fatalf("c2's hit = %q %q, want the newest matching message %s", hits[0].MessageID, hits[0].Text, m3)
		}
		if hits[1].MessageID != m1 || hits[1].Conversation.Title != "Holiday plans" || hits[1].Conversation.UserID != u.ID {
			t.Fatalf("c1's hit = %+v", hits[1])
		}
		// Every term must match, in one text.
		if got := hitIDs(searchAll(t, s, u.ID, "pelican lisbon")); !slices.Equal(got, []string{c2.ID}) {
			t.Fatalf("pelican lisbon: got %v", got)
		}
		if got := hitIDs(searchAll(t, s, u.ID, "holiday pelican")); len(got) != 0 {
			t.Fatalf("terms split between title and message matched: %v", got)
		}
		// Attachment ids are not text.
		if got := hitIDs(searchAll(t, s, u.ID, "xyzzy")); len(got) != 0 {
			t.Fatalf("an attachment id matched: %v", got)
		}
		// A title match is the hit over messages.
		hits = searchAll(t, s, u.ID, "holiday")
		if len(hits) != 1 || hits[0].MessageID != "" || hits[0].Text != "Holiday plans" {
			t.Fatalf("holiday: %+v, want the title", hits)
		}
		// An answer rewritten as it grows (Put) is found by its latest text.
		grow := store.Message{ID: newID(), ConversationID: c1.ID, Role: "assistant", Parts: []store.Part{{Text: "Storks"}}, CreatedAt: t0.Add(7 * time.Second)}
		noErr(t, s.Messages.Put(ctx, grow), "Put")
		grow.Parts = []store.Part{{Text: "Storks and flamingos"}}
		noErr(t, s.Messages.Put(ctx, grow), "Put again")
		hits = searchAll(t, s, u.ID, "flamingo")
		if len(hits) != 1 || hits[0].MessageID != grow.ID || hits[0].Text != "Storks and flamingos" {
			t.Fatalf("flamingo after Put: %+v", hits)
		}
		// Deleted messages are not found.
		noErr(t, s.Messages.Delete(ctx, c2.ID, []store.MessageKey{{ID: m2, CreatedAt: t0.Add(4 * time.Second)}, {ID: m3, CreatedAt: t0.Add(5 * time.Second)}}), "Delete")
		if got := hitIDs(searchAll(t, s, u.ID, "pelican")); !slices.Equal(got, []string{c1.ID}) {
			t.Fatalf("after deleting c2's messages: %v", got)
		}
		noErr(t, s.Messages.DeleteConversation(ctx, c1.ID), "DeleteConversation")
		noErr(t, s.Conversations.Delete(ctx, u.ID, c1.ID), "Delete conversation")
		if got := hitIDs(searchAll(t, s, u.ID, "pelican")); len(got) != 0 {
			t.Fatalf("after deleting c1: %v", got)
		}
	})
}

// TestSearchTitles is the part of TestSearch that needs no messages.
func TestSearchTitles(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	u, v := mustUser(t, s, "search-t@example.com"), mustUser(t, s, "search-t2@example.com")
	var want []string
	for i := range 7 {
		c := titledConv(t, s, u.ID, "Trip to Zürich, part "+string(rune('A'+i)), t0.Add(time.Duration(i)*time.Second))
		want = append([]string{c.ID}, want...)
	}
	titledConv(t, s, u.ID, "Unrelated", t0)
	titledConv(t, s, v.ID, "Trip to Zürich too", t0)
	got := collect(t, 3, func(p store.PageRequest) ([]store.SearchHit, string, error) {
		return s.Search.Search(ctx, u.ID, store.SearchTerms("zür TRIP"), p)
	})
	if !slices.Equal(hitIDs(got), want) {
		t.Fatalf("paged search: got %v, want %v", hitIDs(got), want)
	}
	for _, h := range got {
		if h.MessageID != "" || h.Text != h.Conversation.Title {
			t.Fatalf("title hit %+v", h)
		}
	}
	// A renamed conversation is found by its new title only.
	title := "Weekend in Basel"
	_, err := s.Conversations.Update(ctx, u.ID, want[0], store.ConversationPatch{Title: &title}, t0.Add(time.Minute))
	noErr(t, err, "Update")
	if got := hitIDs(searchAll(t, s, u.ID, "basel")); !slices.Equal(got, want[:1]) {
		t.Fatalf("basel: %v", got)
	}
	if got := hitIDs(searchAll(t, s, u.ID, "trip")); !slices.Equal(got, want[1:]) {
		t.Fatalf("trip after rename: %v", got)
	}
	// Query syntax of any backend is only text.
	for _, q := range []string{`"`, `trip OR`, `NEAR(trip)`, `trip:*`, `!trip`, `'`} {
		_, _, err := s.Search.Search(ctx, u.ID, store.SearchTerms(q), store.PageRequest{})
		if terms := store.SearchTerms(q); len(terms) > 0 {
			noErr(t, err, "Search "+q)
		}
	}
	_, _, err = s.Search.Search(ctx, u.ID, nil, store.PageRequest{})
	wantErr(t, err, store.ErrInvalidArgument, "Search with no terms")
	checkBadCursors(t, func(p store.PageRequest) ([]store.SearchHit, string, error) {
		return s.Search.Search(ctx, u.ID, []string{"trip"}, p)
	})
}

func titledConv(t *testing.T, s store.Store, userID, title string, at time.Time) store.Conversation {
	t.Helper()
	c := store.Conversation{ID: newID(), UserID: userID, Title: title, Model: "sim-small", CreatedAt: at, UpdatedAt: at}
	noErr(t, s.Conversations.Create(t.Context(), c), "Create conversation")
	return c
}

func searchAll(t *testing.T, s store.Store, userID, q string) []store.SearchHit {
	t.Helper()
	return collect(t, 50, func(p store.PageRequest) ([]store.SearchHit, string, error) {
		return s.Search.Search(t.Context(), userID, store.SearchTerms(q), p)
	})
}

func hitIDs(hits []store.SearchHit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Conversation.ID)
	}
	return out
}
