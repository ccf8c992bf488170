package storetest

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

func ptr[T any](v T) *T { return &v }

func mustConv(t *testing.T, s store.Store, userID string, at time.Time) store.Conversation {
	t.Helper()
	c := store.Conversation{ID: newID(), UserID: userID, Model: "sim-small", CreatedAt: at, UpdatedAt: at}
	noErr(t, s.Conversations.Create(t.Context(), c), "Create conversation")
	return c
}

// TestConversations is the conformance suite for store.Conversations.
func TestConversations(t *testing.T, newStore NewStore) {
	t.Run("CRUD", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "c@example.com")
		c := store.Conversation{ID: newID(), UserID: u.ID, Title: "", Model: "sim-small", CreatedAt: t0, UpdatedAt: t0}
		noErr(t, s.Conversations.Create(ctx, c), "Create")
		wantErr(t, s.Conversations.Create(ctx, c), store.ErrConflict, "Create duplicate ID")
		orphan := c
		orphan.ID, orphan.UserID = newID(), newID()
		unknownUser(t, s.Conversations.Create(ctx, orphan), "Create for unknown user")

		got, err := s.Conversations.Get(ctx, u.ID, c.ID)
		noErr(t, err, "Get")
		if got.ID != c.ID || got.UserID != u.ID || got.Model != c.Model || got.Title != "" || got.Archived {
			t.Fatalf("Get = %+v", got)
		}
		sameTime(t, got.CreatedAt, t0, "CreatedAt")
		sameTime(t, got.UpdatedAt, t0, "UpdatedAt")

		// Touch sets an empty title once and moves UpdatedAt forward only.
		noErr(t, s.Conversations.Touch(ctx, u.ID, c.ID, t0.Add(time.Minute), "First question"), "Touch")
		noErr(t, s.Conversations.Touch(ctx, u.ID, c.ID, t0.Add(time.Second), "Ignored"), "Touch older")
		got, err = s.Conversations.Get(ctx, u.ID, c.ID)
		noErr(t, err, "Get after Touch")
		if got.Title != "First question" {
			t.Fatalf("title after Touch = %q", got.Title)
		}
		sameTime(t, got.UpdatedAt, t0.Add(time.Minute), "UpdatedAt after Touch")

		got, err = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Title: ptr("Renamed")}, t0.Add(2*time.Minute))
		noErr(t, err, "Update title")
		if got.Title != "Renamed" || got.Archived {
			t.Fatalf("Update title = %+v", got)
		}
		sameTime(t, got.UpdatedAt, t0.Add(2*time.Minute), "UpdatedAt after Update")
		got, err = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Archived: ptr(true)}, t0.Add(3*time.Minute))
		noErr(t, err, "Update archived")
		if got.Title != "Renamed" || !got.Archived {
			t.Fatalf("Update archived = %+v", got)
		}
		got, err = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Title: ptr("")}, t0.Add(4*time.Minute))
		noErr(t, err, "Update empty title")
		if got.Title != "" || !got.Archived {
			t.Fatalf("Update to empty title = %+v", got)
		}

		noErr(t, s.Conversations.Delete(ctx, u.ID, c.ID), "Delete")
		_, err = s.Conversations.Get(ctx, u.ID, c.ID)
		wantErr(t, err, store.ErrNotFound, "Get after Delete")
		wantErr(t, s.Conversations.Delete(ctx, u.ID, c.ID), store.ErrNotFound, "Delete twice")
		_, err = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Title: ptr("x")}, t0)
		wantErr(t, err, store.ErrNotFound, "Update deleted")
		wantErr(t, s.Conversations.Touch(ctx, u.ID, c.ID, t0, "x"), store.ErrNotFound, "Touch deleted")
	})

	t.Run("CrossUser", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		a := mustUser(t, s, "a@example.com")
		b := mustUser(t, s, "b@example.com")
		c := mustConv(t, s, a.ID, t0)

		_, err := s.Conversations.Get(ctx, b.ID, c.ID)
		wantErr(t, err, store.ErrNotFound, "B Get A's")
		_, err = s.Conversations.Update(ctx, b.ID, c.ID, store.ConversationPatch{Title: ptr("pwned"), Archived: ptr(true)}, t0.Add(time.Hour))
		wantErr(t, err, store.ErrNotFound, "B Update A's")
		wantErr(t, s.Conversations.Touch(ctx, b.ID, c.ID, t0.Add(time.Hour), "pwned"), store.ErrNotFound, "B Touch A's")
		wantErr(t, s.Conversations.Delete(ctx, b.ID, c.ID), store.ErrNotFound, "B Delete A's")
		bl, _, err := s.Conversations.List(ctx, b.ID, store.ConversationFilter{Archived: store.ArchiveAll}, store.PageRequest{})
		noErr(t, err, "B List")
		if len(bl) != 0 {
			t.Fatalf("B lists %d conversations", len(bl))
		}

		got, err := s.Conversations.Get(ctx, a.ID, c.ID)
		noErr(t, err, "A Get own")
		if got.Title != "" || got.Archived || !got.UpdatedAt.Equal(t0) {
			t.Fatalf("A's conversation changed by B: %+v", got)
		}
	})

	t.Run("Pagination", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "p@example.com")
		other := mustUser(t, s, "other@example.com")
		mustConv(t, s, other.ID, t0.Add(time.Hour))
		const n = 250
		var want []store.Conversation
		for i := range n {
			// Groups of three share UpdatedAt, so the ID tie-break matters.
			c := store.Conversation{ID: newID(), UserID: u.ID, Model: "m", Title: fmt.Sprint(i), Archived: i%5 == 0,
				CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(i/3) * time.Millisecond)}
			noErr(t, s.Conversations.Create(ctx, c), "Create")
			want = append(want, c)
		}
		slices.SortFunc(want, func(x, y store.Conversation) int {
			if c := y.UpdatedAt.Compare(x.UpdatedAt); c != 0 {
				return c
			}
			return cmp.Compare(y.ID, x.ID)
		})
		for _, tc := range []struct {
			filter store.ArchiveFilter
			keep   func(store.Conversation) bool
		}{
			{store.ArchiveAll, func(store.Conversation) bool { return true }},
			{store.ArchiveActive, func(c store.Conversation) bool { return !c.Archived }},
			{store.ArchiveArchived, func(c store.Conversation) bool { return c.Archived }},
		} {
			for _, size := range []int{1, 17, 50, 250, 1000} {
				if size == 1 && tc.filter != store.ArchiveAll {
					continue
				}
				list := func(p store.PageRequest) ([]store.Conversation, string, error) {
					return s.Conversations.List(ctx, u.ID, store.ConversationFilter{Archived: tc.filter}, p)
				}
				got := collect(t, size, list)
				exp := slices.DeleteFunc(slices.Clone(want), func(c store.Conversation) bool { return !tc.keep(c) })
				if len(got) != len(exp) {
					t.Fatalf("filter %d size %d: listed %d, want %d", tc.filter, size, len(got), len(exp))
				}
				for i := range got {
					if got[i].ID != exp[i].ID {
						t.Fatalf("filter %d size %d: item %d is %s (title %s), want %s (title %s)",
							tc.filter, size, i, got[i].ID, got[i].Title, exp[i].ID, exp[i].Title)
					}
				}
			}
		}
		checkBadCursors(t, func(p store.PageRequest) ([]store.Conversation, string, error) {
			return s.Conversations.List(ctx, u.ID, store.ConversationFilter{}, p)
		})

		// Touching the oldest brings it to the top.
		oldest := want[len(want)-1]
		noErr(t, s.Conversations.Touch(ctx, u.ID, oldest.ID, t0.Add(time.Hour), ""), "Touch oldest")
		first, next, err := s.Conversations.List(ctx, u.ID, store.ConversationFilter{Archived: store.ArchiveAll}, store.PageRequest{Size: 1})
		noErr(t, err, "List first")
		if len(first) != 1 || first[0].ID != oldest.ID || next == "" {
			t.Fatalf("after Touch the first conversation is %+v", first)
		}
	})
	t.Run("PromptLeafInstructions", func(t *testing.T) { testConversationSettings(t, newStore) })
	t.Run("PinsAndFolders", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u, v := mustUser(t, s, "pins@example.com"), mustUser(t, s, "other@example.com")
		c := mustConv(t, s, u.ID, t0)
		pin, folder := true, "Work"
		got, err := s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Pinned: &pin, Folder: &folder}, t0)
		noErr(t, err, "Update")
		if !got.Pinned || got.Folder != "Work" {
			t.Fatalf("pinned and filed: %+v", got)
		}
		_, err = s.Conversations.Update(ctx, v.ID, c.ID, store.ConversationPatch{Pinned: &pin}, t0)
		wantErr(t, err, store.ErrNotFound, "another user's pin")
		title := "kept"
		got, _ = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Title: &title}, t0)
		if !got.Pinned || got.Folder != "Work" {
			t.Fatalf("a rename unpinned or unfiled it: %+v", got)
		}
		unpin, none := false, ""
		got, _ = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Pinned: &unpin, Folder: &none}, t0)
		if got.Pinned || got.Folder != "" {
			t.Fatalf("unpinned and out of the folder: %+v", got)
		}
		list, _, err := s.Conversations.List(ctx, u.ID, store.ConversationFilter{}, store.PageRequest{})
		noErr(t, err, "List")
		if len(list) != 1 || list[0].Pinned || list[0].Title != "kept" {
			t.Fatalf("listed: %+v", list)
		}
	})
	t.Run("GeneratedTitle", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u, v := mustUser(t, s, "titled@example.com"), mustUser(t, s, "other@example.com")
		c := mustConv(t, s, u.ID, t0)
		noErr(t, s.Conversations.Touch(ctx, u.ID, c.ID, t0, "What is a raven like…"), "Touch")
		ok, err := s.Conversations.SetGeneratedTitle(ctx, v.ID, c.ID, "What is a raven like…", "Ravens")
		if err != nil || ok {
			t.Fatalf("another user's SetGeneratedTitle: %v %v", ok, err)
		}
		ok, err = s.Conversations.SetGeneratedTitle(ctx, u.ID, c.ID, "What is a raven like…", "Ravens and writing desks")
		noErr(t, err, "SetGeneratedTitle")
		got, _ := s.Conversations.Get(ctx, u.ID, c.ID)
		if !ok || got.Title != "Ravens and writing desks" || !got.TitleGenerated {
			t.Fatalf("after SetGeneratedTitle: %v %+v", ok, got)
		}
		// A rename clears the flag, and a late generated title does not overwrite it.
		title := "My riddles"
		got, err = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Title: &title}, t0)
		noErr(t, err, "Update")
		if got.TitleGenerated || got.Title != title {
			t.Fatalf("after a rename: %+v", got)
		}
		if ok, err := s.Conversations.SetGeneratedTitle(ctx, u.ID, c.ID, "Ravens and writing desks", "Late"); err != nil || ok {
			t.Fatalf("a late generated title: %v %v", ok, err)
		}
		archived := true
		if got, _ = s.Conversations.Update(ctx, u.ID, c.ID, store.ConversationPatch{Archived: &archived}, t0); got.Title != title {
			t.Fatalf("an archive changed the title: %+v", got)
		}
	})
}

// TestMessages is the conformance suite for store.Messages.
func TestMessages(t *testing.T, newStore NewStore) {
	t.Run("AppendList", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		conv, other := newID(), newID()
		m1 := store.Message{ID: newID(), ConversationID: conv, Role: "user",
			Parts: []store.Part{{Text: "Describe this"}, {AttachmentID: newID()}}, Tokens: 12, CreatedAt: t0}
		m2 := store.Message{ID: newID(), ConversationID: conv, Role: "assistant", Parts: []store.Part{{Text: "A cat. «ünïcödé» 🐈"}},
			Model: "sim-small", Tokens: 40, FinishReason: "stop", CreatedAt: t0.Add(time.Second)}
		// A tool round trip: an inline image, calls (with text and a surface's
		// meta), their results.
		m3 := store.Message{ID: newID(), ConversationID: conv, Role: "user", CreatedAt: t0.Add(2 * time.Second), Parts: []store.Part{
			{Text: "Weather where this is?"}, {Image: &store.Image{Data: []byte{0xff, 0xd8, 0x00, 0x7f}, MimeType: "image/jpeg", Width: 3, Height: 2}}}}
		m4 := store.Message{ID: newID(), ConversationID: conv, Role: "assistant", Model: "sim-small", Tokens: 9, FinishReason: "tool_calls",
			CreatedAt: t0.Add(3 * time.Second), Parts: []store.Part{
				{Text: "Looking."},
				{ToolCall: &llm.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"location":"Paris","unit":"celsius"}`}},
				{ToolCall: &llm.ToolCall{ID: "call_2", Name: "get_time", Arguments: `{}`}},
				{Meta: `{"previous":"x","inputs":["a","b"]}`}}}
		m5 := store.Message{ID: newID(), ConversationID: conv, Role: "tool", CreatedAt: t0.Add(4 * time.Second), Parts: []store.Part{
			{ToolResult: &llm.ToolResult{ToolCallID: "call_1", Content: `{"temperature": 18}`}}}}
		m6 := store.Message{ID: newID(), ConversationID: conv, Role: "tool", CreatedAt: t0.Add(4 * time.Second), Parts: []store.Part{
			{ToolResult: &llm.ToolResult{ToolCallID: "call_2", Content: ""}}}}
		if m6.ID < m5.ID {
			m5, m6 = m6, m5
		}
		for _, m := range []store.Message{m2, m1, m1, m6, m4, m3, m5} {
			noErr(t, s.Messages.Append(ctx, m), "Append (m1 twice: a no-op)")
		}
		noErr(t, s.Messages.Append(ctx, store.Message{ID: newID(), ConversationID: other, Role: "user", CreatedAt: t0}), "Append other")

		got, next, err := s.Messages.List(ctx, conv, store.PageRequest{})
		noErr(t, err, "List")
		all := []store.Message{m1, m2, m3, m4, m5, m6}
		if next != "" || len(got) != len(all) {
			t.Fatalf("List = %d messages, next %q", len(got), next)
		}
		for i, want := range all {
			g := got[i]
			sameTime(t, g.CreatedAt, want.CreatedAt, "CreatedAt")
			if g.ID != want.ID || g.ConversationID != conv || g.Role != want.Role || g.Model != want.Model ||
				g.Tokens != want.Tokens || g.FinishReason != want.FinishReason || !reflect.DeepEqual(g.Parts, want.Parts) {
				t.Fatalf("message %d = %+v, want %+v", i, g, want)
			}
		}

		noErr(t, s.Messages.DeleteConversation(ctx, conv), "DeleteConversation")
		got, _, err = s.Messages.List(ctx, conv, store.PageRequest{})
		noErr(t, err, "List after delete")
		if len(got) != 0 {
			t.Fatalf("%d messages left after DeleteConversation", len(got))
		}
		got, _, err = s.Messages.List(ctx, other, store.PageRequest{})
		noErr(t, err, "List other")
		if len(got) != 1 {
			t.Fatalf("other conversation has %d messages, want 1", len(got))
		}
		noErr(t, s.Messages.DeleteConversation(ctx, newID()), "DeleteConversation unknown")
	})

	t.Run("Delete", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		conv, other := newID(), newID()
		var msgs []store.Message
		for i := range 5 {
			m := store.Message{ID: newID(), ConversationID: conv, Role: "user", Parts: []store.Part{{Text: fmt.Sprint(i)}},
				CreatedAt: t0.Add(time.Duration(i) * time.Millisecond)}
			noErr(t, s.Messages.Append(ctx, m), "Append")
			msgs = append(msgs, m)
		}
		bystander := store.Message{ID: newID(), ConversationID: other, Role: "user", Parts: []store.Part{{Text: "stay"}}, CreatedAt: t0}
		noErr(t, s.Messages.Append(ctx, bystander), "Append other")
		listed, _, err := s.Messages.List(ctx, conv, store.PageRequest{})
		noErr(t, err, "List")
		key := func(m store.Message) store.MessageKey { return store.MessageKey{ID: m.ID, CreatedAt: m.CreatedAt} }
		// The keys as List returned them; one names nothing, one is another
		// conversation's message.
		noErr(t, s.Messages.Delete(ctx, conv, []store.MessageKey{key(listed[1]), key(listed[3]),
			{ID: newID(), CreatedAt: t0}, key(bystander)}), "Delete")
		noErr(t, s.Messages.Delete(ctx, conv, nil), "Delete nothing")
		got, _, err := s.Messages.List(ctx, conv, store.PageRequest{})
		noErr(t, err, "List after Delete")
		if len(got) != 3 || got[0].ID != msgs[0].ID || got[1].ID != msgs[2].ID || got[2].ID != msgs[4].ID {
			t.Fatalf("after Delete: %+v", got)
		}
		got, _, err = s.Messages.List(ctx, other, store.PageRequest{})
		noErr(t, err, "List other")
		if len(got) != 1 || got[0].ID != bystander.ID {
			t.Fatalf("Delete reached another conversation: %+v", got)
		}
		noErr(t, s.Messages.Delete(ctx, newID(), []store.MessageKey{key(msgs[0])}), "Delete in an unknown conversation")
		if got, _, _ = s.Messages.List(ctx, conv, store.PageRequest{}); len(got) != 3 {
			t.Fatalf("a Delete naming another conversation removed messages: %d left", len(got))
		}
	})

	t.Run("Pagination", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		conv := newID()
		const n = 120
		var want []store.Message
		for i := range n {
			m := store.Message{ID: newID(), ConversationID: conv, Role: "user", Parts: []store.Part{{Text: fmt.Sprint(i)}},
				CreatedAt: t0.Add(time.Duration(i/4) * time.Microsecond)}
			want = append(want, m)
		}
		// Append out of order: the store orders by CreatedAt, then ID.
		for i := range want {
			noErr(t, s.Messages.Append(ctx, want[(i*7)%n]), "Append")
		}
		slices.SortFunc(want, func(x, y store.Message) int {
			if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
				return c
			}
			return cmp.Compare(x.ID, y.ID)
		})
		list := func(p store.PageRequest) ([]store.Message, string, error) { return s.Messages.List(ctx, conv, p) }
		got := collect(t, 25, list)
		if len(got) != n {
			t.Fatalf("listed %d messages, want %d", len(got), n)
		}
		for i := range got {
			if got[i].ID != want[i].ID {
				t.Fatalf("message %d is %s, want %s", i, got[i].ID, want[i].ID)
			}
		}
		checkBadCursors(t, list)
	})
	t.Run("Tree", func(t *testing.T) { testMessageTree(t, newStore) })
	t.Run("GrowingAnswer", func(t *testing.T) { testGrowingAnswer(t, newStore) })
}
