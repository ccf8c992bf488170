package storetest

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestFeedback is the conformance suite for store.Feedback: one rating per
// person and answer, replaced by the next, taken back, counted per model,
// notes newest first, and gone with its conversation.
func TestFeedback(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	if s.Feedback == nil {
		t.Skip("the store keeps no feedback")
	}
	a, b := mustUser(t, s, "rater-a@example.com"), mustUser(t, s, "rater-b@example.com")
	ca, cb := mustConv(t, s, a.ID, t0), mustConv(t, s, b.ID, t0)
	at := t0.Add(time.Hour)
	put := func(u store.User, c store.Conversation, msg, model string, good bool, note string, when time.Time) {
		noErr(t, s.Feedback.PutRating(ctx, store.Rating{UserID: u.ID, ConversationID: c.ID, MessageID: msg, Model: model, Good: good, Note: note, UpdatedAt: when}), "PutRating")
	}
	put(a, ca, "m1", "sim-small", false, "", at)
	put(a, ca, "m1", "sim-small", true, "clear and right", at.Add(time.Minute)) // replaces
	put(a, ca, "m2", "sim-large", false, "made up a quote", at.Add(2*time.Minute))
	put(b, cb, "m3", "sim-small", false, "", at.Add(3*time.Minute))
	list, err := s.Feedback.ListRatings(ctx, a.ID, ca.ID)
	noErr(t, err, "ListRatings")
	if len(list) != 2 {
		t.Fatalf("a's ratings: %+v", list)
	}
	for _, r := range list {
		if r.MessageID == "m1" && (!r.Good || r.Note != "clear and right" || !r.UpdatedAt.Equal(at.Add(time.Minute))) {
			t.Fatalf("the replaced rating: %+v", r)
		}
	}
	if other, err := s.Feedback.ListRatings(ctx, a.ID, cb.ID); err != nil || len(other) != 0 {
		t.Fatalf("a's ratings in b's conversation: %+v %v", other, err)
	}
	counts, err := s.Feedback.CountRatings(ctx, t0, at.Add(time.Hour))
	noErr(t, err, "CountRatings")
	want := []store.FeedbackCount{{Model: "sim-small", Good: 1, Bad: 1}, {Model: "sim-large", Good: 0, Bad: 1}}
	if len(counts) != 2 || counts[0] != want[0] || counts[1] != want[1] {
		t.Fatalf("counts %+v, want %+v", counts, want)
	}
	if c, _ := s.Feedback.CountRatings(ctx, at.Add(2*time.Minute), at.Add(time.Hour)); len(c) != 2 || c[0].Bad+c[1].Bad != 2 {
		t.Fatalf("counts from a later start: %+v", c)
	}
	notes, err := s.Feedback.RatingNotes(ctx, t0, at.Add(time.Hour), 10)
	noErr(t, err, "RatingNotes")
	if len(notes) != 2 || notes[0].Note != "made up a quote" || notes[1].Note != "clear and right" {
		t.Fatalf("notes: %+v", notes)
	}
	noErr(t, s.Feedback.DeleteRating(ctx, a.ID, "m2"), "DeleteRating")
	noErr(t, s.Feedback.DeleteRating(ctx, a.ID, "m2"), "DeleteRating again")
	if list, _ := s.Feedback.ListRatings(ctx, a.ID, ca.ID); len(list) != 1 {
		t.Fatalf("after taking one back: %+v", list)
	}
	// A deleted conversation takes its ratings with it.
	noErr(t, s.Conversations.Delete(ctx, b.ID, cb.ID), "Delete conversation")
	if c, _ := s.Feedback.CountRatings(ctx, t0, at.Add(time.Hour)); len(c) != 1 || c[0] != (store.FeedbackCount{Model: "sim-small", Good: 1}) {
		t.Fatalf("counts after the conversation went: %+v", c)
	}
}
