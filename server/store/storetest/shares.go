package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestShares is the conformance suite for store.Shares.
func TestShares(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	u, v := mustUser(t, s, "share@example.com"), mustUser(t, s, "share2@example.com")
	c := titledConv(t, s, u.ID, "Shared", t0)
	theirs := titledConv(t, s, v.ID, "Theirs", t0)

	_, err := s.Shares.Put(ctx, store.Share{ID: newID(), UserID: u.ID, ConversationID: theirs.ID, Snapshot: []byte("x"), CreatedAt: t0})
	wantErr(t, err, store.ErrNotFound, "Put another user's conversation")
	_, err = s.Shares.Put(ctx, store.Share{ID: newID(), UserID: u.ID, ConversationID: newID(), Snapshot: []byte("x"), CreatedAt: t0})
	wantErr(t, err, store.ErrNotFound, "Put an unknown conversation")

	first, err := s.Shares.Put(ctx, store.Share{ID: "share-1", UserID: u.ID, ConversationID: c.ID, Snapshot: []byte(`{"v":1}`), CreatedAt: t0})
	noErr(t, err, "Put")
	// A store spread over clusters names the user's shard in the ID's
	// first character; the rest is the caller's.
	if len(first.ID) != len("share-1") || first.ID[1:] != "hare-1" {
		t.Fatalf("Put returned id %q", first.ID)
	}
	id1, id2 := first.ID, first.ID[:1]+"hare-2"
	// Sharing again keeps the id and takes the new snapshot.
	again, err := s.Shares.Put(ctx, store.Share{ID: "share-2", UserID: u.ID, ConversationID: c.ID, Snapshot: []byte(`{"v":2}`), CreatedAt: t0.Add(time.Hour)})
	noErr(t, err, "Put again")
	if again.ID != id1 {
		t.Fatalf("re-share got id %q, want %s", again.ID, id1)
	}
	got, err := s.Shares.Get(ctx, id1)
	noErr(t, err, "Get")
	if got.UserID != u.ID || got.ConversationID != c.ID || !bytes.Equal(got.Snapshot, []byte(`{"v":2}`)) {
		t.Fatalf("Get = %+v", got)
	}
	sameTime(t, got.CreatedAt, t0.Add(time.Hour), "CreatedAt")
	_, err = s.Shares.Get(ctx, id2)
	wantErr(t, err, store.ErrNotFound, "Get the id a re-share did not keep")

	ok, err := s.Shares.Delete(ctx, v.ID, c.ID)
	noErr(t, err, "Delete by another user")
	if ok {
		t.Fatal("another user deleted the share")
	}
	ok, err = s.Shares.Delete(ctx, u.ID, c.ID)
	noErr(t, err, "Delete")
	if !ok {
		t.Fatal("Delete reported no share")
	}
	_, err = s.Shares.Get(ctx, id1)
	wantErr(t, err, store.ErrNotFound, "Get after Delete")
	ok, err = s.Shares.Delete(ctx, u.ID, c.ID)
	noErr(t, err, "Delete again")
	if ok {
		t.Fatal("Delete of nothing reported a share")
	}

	// A share goes with its conversation.
	third, err := s.Shares.Put(ctx, store.Share{ID: "share-3", UserID: u.ID, ConversationID: c.ID, Snapshot: []byte("x"), CreatedAt: t0})
	noErr(t, err, "Put after Delete")
	noErr(t, s.Conversations.Delete(ctx, u.ID, c.ID), "Delete conversation")
	_, err = s.Shares.Get(ctx, third.ID)
	wantErr(t, err, store.ErrNotFound, "Get after the conversation was deleted")
}
