package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// Memories over Connect and gRPC: saved, listed, edited and deleted; the
// few most relevant join a web chat's prompt (GenerationStarted.memory_ids
// names them, and the prompt grows by their text); turned off, none do;
// another user reaches none of them; bad input names its field.
func TestMemoriesJoinWebChats(t *testing.T) {
	s := startServer(t, fastAuth...)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			a := s.newAccount(t, "memory-"+p.name+"@example.com")
			b := s.newAccount(t, "memory-other-"+p.name+"@example.com")
			ctx := ctxTimeout(t, 60*time.Second)
			c := s.api(p, cred{cookie: a.Cookie})
			other := s.api(p, cred{cookie: b.Cookie})
			question := "Suggest a vegetarian dinner for tonight."
			ask := func(c apiClients) (*parleyv1.GenerationStarted, int64) {
				t.Helper()
				st, _, fin := send(t, ctx, c, &parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart(question), MaxOutputTokens: 5})
				return st, fin.GetUsage().GetPromptTokens()
			}
			st, baseline := ask(c)
			if len(st.GetMemoryIds()) != 0 {
				t.Fatalf("memory ids %v before any memory was saved", st.GetMemoryIds())
			}

			save := func(text string) *parleyv1.Memory {
				t.Helper()
				res, err := c.Memories.CreateMemory(ctx, connect.NewRequest(&parleyv1.CreateMemoryRequest{Text: text}))
				if err != nil {
					t.Fatal(err)
				}
				return res.Msg.GetMemory()
			}
			veg := save("  I am vegetarian and cook dinner for two.  ")
			if veg.GetText() != "I am vegetarian and cook dinner for two." || veg.GetMemoryId() == "" || veg.GetCreatedAt() == nil {
				t.Fatalf("saved memory %v: want it trimmed, with an id and a time", veg)
			}
			city := save("I live in Lisbon.")
			st, withTwo := ask(c)
			if got := st.GetMemoryIds(); len(got) != 2 || got[0] != veg.GetMemoryId() || got[1] != city.GetMemoryId() {
				t.Fatalf("memory ids %v: want the vegetarian one (%s), then Lisbon (%s)", got, veg.GetMemoryId(), city.GetMemoryId())
			}
			if withTwo < baseline+12 {
				t.Fatalf("prompt of %d tokens with two memories, %d without: their text is not in it", withTwo, baseline)
			}

			// Of many, the most relevant few: the vegetarian one first, and 5 in all.
			for _, text := range []string{"My daughter is called Ada.", "I work as a nurse on night shifts.", "I play the cello.",
				"My car is a blue Fiat.", "I am learning Portuguese."} {
				save(text)
			}
			st, _ = ask(c)
			if got := st.GetMemoryIds(); len(got) != 5 || got[0] != veg.GetMemoryId() || slices.Contains(got[1:], veg.GetMemoryId()) {
				t.Fatalf("memory ids %v with 7 memories: want 5, the vegetarian one (%s) first", got, veg.GetMemoryId())
			}

			// Listed newest first; edited; deleted.
			list, err := c.Memories.ListMemories(ctx, connect.NewRequest(&parleyv1.ListMemoriesRequest{PageSize: 3}))
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Msg.GetMemories()) != 3 || list.Msg.GetMemories()[0].GetText() != "I am learning Portuguese." || list.Msg.GetNextPageToken() == "" {
				t.Fatalf("first page %v", list.Msg)
			}
			edited, err := c.Memories.UpdateMemory(ctx, connect.NewRequest(&parleyv1.UpdateMemoryRequest{MemoryId: city.GetMemoryId(), Text: "I live in Porto."}))
			if err != nil || edited.Msg.GetMemory().GetText() != "I live in Porto." {
				t.Fatalf("UpdateMemory: %v %v", edited, err)
			}
			first, err := c.Memories.ListMemories(ctx, connect.NewRequest(&parleyv1.ListMemoriesRequest{PageSize: 1}))
			if err != nil || first.Msg.GetMemories()[0].GetMemoryId() != city.GetMemoryId() {
				t.Fatalf("after the edit the first memory is %v (%v), want %s", first, err, city.GetMemoryId())
			}

			// Another user reaches none of them, and their chats use none.
			_, err = other.Memories.UpdateMemory(ctx, connect.NewRequest(&parleyv1.UpdateMemoryRequest{MemoryId: veg.GetMemoryId(), Text: "pwned"}))
			wantCode(t, "UpdateMemory of another user's memory", err, connect.CodeNotFound)
			_, err = other.Memories.DeleteMemory(ctx, connect.NewRequest(&parleyv1.DeleteMemoryRequest{MemoryId: veg.GetMemoryId()}))
			wantCode(t, "DeleteMemory of another user's memory", err, connect.CodeNotFound)
			theirs, err := other.Memories.ListMemories(ctx, connect.NewRequest(&parleyv1.ListMemoriesRequest{}))
			if err != nil || len(theirs.Msg.GetMemories()) != 0 {
				t.Fatalf("another user's ListMemories: %v %v", theirs, err)
			}
			if st, _ := ask(other); len(st.GetMemoryIds()) != 0 {
				t.Fatalf("another user's chat used memories %v", st.GetMemoryIds())
			}

			// Bad input names its field and saves nothing.
			for _, tc := range []struct{ what, text string }{{"no text", "   "}, {"1001 characters", strings.Repeat("m", 1001)}} {
				_, err := c.Memories.CreateMemory(ctx, connect.NewRequest(&parleyv1.CreateMemoryRequest{Text: tc.text}))
				wantField(t, tc.what, err, connect.CodeInvalidArgument, "text")
			}
			_, err = c.Memories.UpdateMemory(ctx, connect.NewRequest(&parleyv1.UpdateMemoryRequest{Text: "x"}))
			wantField(t, "UpdateMemory without an id", err, connect.CodeInvalidArgument, "memory_id")
			_, err = c.Memories.UpdateMemorySettings(ctx, connect.NewRequest(&parleyv1.UpdateMemorySettingsRequest{}))
			wantField(t, "UpdateMemorySettings without settings", err, connect.CodeInvalidArgument, "settings")
			all, err := c.Memories.ListMemories(ctx, connect.NewRequest(&parleyv1.ListMemoriesRequest{}))
			if err != nil || len(all.Msg.GetMemories()) != 7 {
				t.Fatalf("memories after the refused saves: %v %v, want 7", all, err)
			}

			// Turned off, none join; the memories are kept; on again, they do.
			setting := func(on bool) {
				t.Helper()
				if _, err := c.Memories.UpdateMemorySettings(ctx, connect.NewRequest(&parleyv1.UpdateMemorySettingsRequest{
					Settings: &parleyv1.MemorySettings{Enabled: on}})); err != nil {
					t.Fatal(err)
				}
				got, err := c.Memories.GetMemorySettings(ctx, connect.NewRequest(&parleyv1.GetMemorySettingsRequest{}))
				if err != nil || got.Msg.GetSettings().GetEnabled() != on {
					t.Fatalf("GetMemorySettings after setting %v: %v %v", on, got, err)
				}
			}
			setting(false)
			if st, tokens := ask(c); len(st.GetMemoryIds()) != 0 || tokens != baseline {
				t.Fatalf("memory off: ids %v, prompt %d tokens (want none, and %d)", st.GetMemoryIds(), tokens, baseline)
			}
			setting(true)
			if st, _ := ask(c); len(st.GetMemoryIds()) != 5 {
				t.Fatalf("memory on again: ids %v", st.GetMemoryIds())
			}

			// Deleted, it joins no chat again.
			if _, err := c.Memories.DeleteMemory(ctx, connect.NewRequest(&parleyv1.DeleteMemoryRequest{MemoryId: veg.GetMemoryId()})); err != nil {
				t.Fatal(err)
			}
			_, err = c.Memories.DeleteMemory(ctx, connect.NewRequest(&parleyv1.DeleteMemoryRequest{MemoryId: veg.GetMemoryId()}))
			wantCode(t, "deleting it again", err, connect.CodeNotFound)
			if st, _ := ask(c); slices.Contains(st.GetMemoryIds(), veg.GetMemoryId()) {
				t.Fatalf("a deleted memory joined a chat: %v", st.GetMemoryIds())
			}
		})
	}
}
