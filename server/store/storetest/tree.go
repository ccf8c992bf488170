package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// testConversationSettings checks a conversation's system prompt and active
// leaf, and a user's custom instructions.
func testConversationSettings(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	u := mustUser(t, s, "tree@example.com")
	other := mustUser(t, s, "other-tree@example.com")
	c := store.Conversation{ID: newID(), UserID: u.ID, Model: "sim-small", SystemPrompt: "Answer in French.",
		LeafID: "m1", CreatedAt: t0, UpdatedAt: t0}
	noErr(t, s.Conversations.Create(ctx, c), "Create with a system prompt")
	got, err := s.Conversations.Get(ctx, u.ID, c.ID)
	noErr(t, err, "Get")
	if got.SystemPrompt != "Answer in French." || got.LeafID != "m1" {
		t.Fatalf("Get = %+v", got)
	}

	// A patch changes only what it names.
	got, err = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{SystemPrompt: ptr("Be brief. «ü» 🐈")}, t0.Add(time.Minute))
	noErr(t, err, "Update system prompt")
	if got.SystemPrompt != "Be brief. «ü» 🐈" || got.LeafID != "m1" || got.Title != "" {
		t.Fatalf("Update system prompt = %+v", got)
	}
	got, err = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Title: ptr("T")}, t0.Add(2*time.Minute))
	noErr(t, err, "Update title")
	if got.SystemPrompt != "Be brief. «ü» 🐈" || got.Title != "T" {
		t.Fatalf("a title patch changed the system prompt: %+v", got)
	}
	got, err = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{SystemPrompt: ptr(""), LeafID: ptr("m2")}, t0.Add(3*time.Minute))
	noErr(t, err, "Update clearing the prompt")
	if got.SystemPrompt != "" || got.LeafID != "m2" {
		t.Fatalf("Update clearing the prompt = %+v", got)
	}

	// SetLeaf moves the active branch, not UpdatedAt; only for the owner.
	noErr(t, s.Conversations.SetLeaf(ctx, u.ID, c.ID, "m3"), "SetLeaf")
	got, err = s.Conversations.Get(ctx, u.ID, c.ID)
	noErr(t, err, "Get after SetLeaf")
	if got.LeafID != "m3" {
		t.Fatalf("LeafID after SetLeaf = %q", got.LeafID)
	}
	sameTime(t, got.UpdatedAt, t0.Add(3*time.Minute), "UpdatedAt after SetLeaf")
	wantErr(t, s.Conversations.SetLeaf(ctx, other.ID, c.ID, "x"), store.ErrNotFound, "SetLeaf on another user's conversation")
	wantErr(t, s.Conversations.SetLeaf(ctx, u.ID, newID(), "x"), store.ErrNotFound, "SetLeaf on an unknown conversation")
	if got, _ := s.Conversations.Get(ctx, u.ID, c.ID); got.LeafID != "m3" {
		t.Fatalf("another user's SetLeaf changed the leaf to %q", got.LeafID)
	}

	// Custom instructions: none, set, replaced, per user.
	text, err := s.Conversations.Instructions(ctx, u.ID)
	noErr(t, err, "Instructions unset")
	if text != "" {
		t.Fatalf("Instructions unset = %q", text)
	}
	noErr(t, s.Conversations.SetInstructions(ctx, u.ID, "I am a chemist.", t0), "SetInstructions")
	noErr(t, s.Conversations.SetInstructions(ctx, u.ID, "I am a physicist.\nUse SI units.", t0.Add(time.Second)), "SetInstructions again")
	noErr(t, s.Conversations.SetInstructions(ctx, other.ID, "Other's.", t0), "SetInstructions other")
	if text, err = s.Conversations.Instructions(ctx, u.ID); err != nil || text != "I am a physicist.\nUse SI units." {
		t.Fatalf("Instructions = %q, %v", text, err)
	}
	if text, _ = s.Conversations.Instructions(ctx, other.ID); text != "Other's." {
		t.Fatalf("other user's Instructions = %q", text)
	}
	noErr(t, s.Conversations.SetInstructions(ctx, u.ID, "", t0.Add(2*time.Second)), "SetInstructions clear")
	if text, _ = s.Conversations.Instructions(ctx, u.ID); text != "" {
		t.Fatalf("Instructions after clearing = %q", text)
	}
	unknownUser(t, s.Conversations.SetInstructions(ctx, newID(), "x", t0), "SetInstructions for an unknown user")
}

// testMessageTree stores a conversation with two regenerated answers and an
// edited question, and rebuilds its tree from List.
func testMessageTree(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	conv := newID()
	at := t0
	add := func(role, parent, text string) store.Message {
		at = at.Add(time.Millisecond)
		m := store.Message{ID: newID(), ConversationID: conv, Role: role, ParentID: parent, Parts: []store.Part{{Text: text}}, CreatedAt: at}
		if role == "assistant" {
			m.Model, m.FinishReason, m.Tokens = "sim-small", "stop", 3
		}
		noErr(t, s.Messages.Append(ctx, m), "Append "+text)
		return m
	}
	u1 := add("user", "", "q1")
	a1 := add("assistant", u1.ID, "a1")
	a1b := add("assistant", u1.ID, "a1 again")      // regenerated
	a1c := add("assistant", u1.ID, "a1 third time") // regenerated twice
	u2 := add("user", a1c.ID, "q2")
	a2 := add("assistant", u2.ID, "a2")
	u2b := add("user", a1c.ID, "q2 edited") // edit of u2
	a2b := add("assistant", u2b.ID, "a2 for the edit")
	u1b := add("user", "", "q1 edited") // edit of the first question: a new root
	a3 := add("assistant", u1b.ID, "a3")
	// Paged, as a long conversation is read.
	all := collect(t, 3, func(p store.PageRequest) ([]store.Message, string, error) { return s.Messages.List(ctx, conv, p) })
	want := []store.Message{u1, a1, a1b, a1c, u2, a2, u2b, a2b, u1b, a3}
	if len(all) != len(want) {
		t.Fatalf("List = %d messages, want %d", len(all), len(want))
	}
	for i := range want {
		if all[i].ID != want[i].ID || all[i].ParentID != want[i].ParentID || all[i].Status != store.MessageComplete {
			t.Fatalf("message %d = %s (parent %q, status %q), want %s (parent %q)", i, all[i].ID, all[i].ParentID, all[i].Status, want[i].ID, want[i].ParentID)
		}
	}
	tree := store.NewTree(all)
	ids := func(ms []store.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
	check("Branch(newest)", ids(tree.Branch(tree.Newest())), []string{u1b.ID, a3.ID})
	check("Branch(a2)", ids(tree.Branch(a2.ID)), []string{u1.ID, a1c.ID, u2.ID, a2.ID})
	// Through a message that is not a leaf: its newest descendants follow.
	check("Branch(u1)", ids(tree.Branch(u1.ID)), []string{u1.ID, a1c.ID, u2b.ID, a2b.ID})
	check("Branch(a1)", ids(tree.Branch(a1.ID)), []string{u1.ID, a1.ID})
	check("Siblings(a1b)", tree.Siblings(a1b.ID), []string{a1.ID, a1b.ID, a1c.ID})
	check("Siblings(u2b)", tree.Siblings(u2b.ID), []string{u2.ID, u2b.ID})
	check("Siblings(u1)", tree.Siblings(u1.ID), []string{u1.ID, u1b.ID})
	check("Siblings(a3)", tree.Siblings(a3.ID), []string{a3.ID})
	if tree.Branch(newID()) != nil || tree.Siblings(newID()) != nil {
		t.Fatal("an unknown message has a branch")
	}
}

// testGrowingAnswer stores an answer in progress, rewrites it as it grows,
// and marks one interrupted.
func testGrowingAnswer(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	conv := newID()
	q := store.Message{ID: newID(), ConversationID: conv, Role: "user", Parts: []store.Part{{Text: "q"}}, CreatedAt: t0}
	noErr(t, s.Messages.Append(ctx, q), "Append question")
	a := store.Message{ID: newID(), ConversationID: conv, Role: "assistant", ParentID: q.ID, Model: "sim-small",
		Parts: []store.Part{}, Status: store.MessageInProgress, CreatedAt: t0.Add(time.Millisecond)}
	noErr(t, s.Messages.Put(ctx, a), "Put in progress")
	one := func(what string) store.Message {
		t.Helper()
		got, _, err := s.Messages.List(ctx, conv, store.PageRequest{})
		noErr(t, err, "List "+what)
		if len(got) != 2 || got[1].ID != a.ID || got[1].ParentID != q.ID {
			t.Fatalf("%s: List = %+v", what, got)
		}
		return got[1]
	}
	if got := one("in progress"); got.Status != store.MessageInProgress || len(got.Parts) != 0 {
		t.Fatalf("in progress = %+v", got)
	}
	a.Parts, a.Tokens = []store.Part{{Text: "Hello, wor"}}, 4
	noErr(t, s.Messages.Put(ctx, a), "Put grown")
	if got := one("grown"); got.Status != store.MessageInProgress || !reflect.DeepEqual(got.Parts, a.Parts) || got.Tokens != 4 {
		t.Fatalf("grown = %+v", got)
	}
	key := store.MessageKey{ID: a.ID, CreatedAt: a.CreatedAt}
	noErr(t, s.Messages.MarkInterrupted(ctx, conv, key), "MarkInterrupted")
	if got := one("interrupted"); got.Status != store.MessageInterrupted || !reflect.DeepEqual(got.Parts, a.Parts) || got.Tokens != 4 {
		t.Fatalf("interrupted = %+v", got)
	}
	// A finished answer is never marked: the finishing Put wins.
	a.Parts, a.Tokens, a.FinishReason, a.Status = []store.Part{{Text: "Hello, world."}}, 5, "stop", store.MessageComplete
	noErr(t, s.Messages.Put(ctx, a), "Put finished")
	noErr(t, s.Messages.MarkInterrupted(ctx, conv, key), "MarkInterrupted a finished answer")
	if got := one("finished"); got.Status != store.MessageComplete || got.FinishReason != "stop" || got.Parts[0].Text != "Hello, world." {
		t.Fatalf("finished = %+v", got)
	}
	// Marking a message that does not exist stores nothing.
	noErr(t, s.Messages.MarkInterrupted(ctx, conv, store.MessageKey{ID: newID(), CreatedAt: t0.Add(time.Second)}), "MarkInterrupted unknown")
	one("after marking an unknown message")
}

// WantChain checks that msgs (a conversation's, as List returned them) are
// the messages ids, each one's parent the one before it: what messages
// stored before the tree read as once a backend is upgraded.
func WantChain(t *testing.T, msgs []store.Message, ids []string) {
	t.Helper()
	if len(msgs) != len(ids) {
		t.Fatalf("%d messages, want %d", len(msgs), len(ids))
	}
	for i, m := range msgs {
		want := ""
		if i > 0 {
			want = ids[i-1]
		}
		if m.ID != ids[i] || m.ParentID != want || m.Status != store.MessageComplete {
			t.Fatalf("message %d: %s parent %q status %q, want %s parent %q", i, m.ID, m.ParentID, m.Status, ids[i], want)
		}
	}
}
