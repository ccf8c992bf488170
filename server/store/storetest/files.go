package storetest

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// file is a ready attachment of userID with a purpose, created at t0.
func file(t *testing.T, s store.Store, userID, purpose string, size int64, deleteAt time.Time) store.Attachment {
	t.Helper()
	a := attachment(userID, size)
	a.Purpose, a.DeleteAt = purpose, deleteAt
	noErr(t, s.Attachments.Create(t.Context(), a, 1<<40), "Create file")
	done, err := s.Attachments.SetStatus(t.Context(), a.ID, store.AttachmentResult{Status: store.AttachmentReady})
	noErr(t, err, "SetStatus file")
	return done
}

func fileIDs(as []store.Attachment) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

// testFiles: files (attachments with a purpose) keep their purpose and
// deletion time, are listed by purpose in pages either way, never to
// another user, and count against the quota as attachments do.
func testFiles(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	u := mustUser(t, s, "files@example.com")
	other := mustUser(t, s, "other@example.com")
	deleteAt := t0.Add(2 * time.Hour)
	a := file(t, s, u.ID, "assistants", 10, deleteAt)
	b := file(t, s, u.ID, "user_data", 20, time.Time{})
	c := file(t, s, u.ID, "assistants", 30, time.Time{})
	plain := ready(t, s, u.ID, 40, t0, store.AttachmentReady)
	file(t, s, other.ID, "assistants", 50, time.Time{})

	got, err := s.Attachments.Get(ctx, u.ID, a.ID)
	noErr(t, err, "Get file")
	if got.Purpose != "assistants" {
		t.Fatalf("Purpose = %q, want assistants", got.Purpose)
	}
	sameTime(t, got.DeleteAt, deleteAt, "DeleteAt")
	if got, _ := s.Attachments.Get(ctx, u.ID, b.ID); !got.DeleteAt.IsZero() || got.Purpose != "user_data" {
		t.Fatalf("file without expiry = %+v", got)
	}
	if got, _ := s.Attachments.Get(ctx, u.ID, plain.ID); got.Purpose != "" {
		t.Fatalf("a plain attachment has purpose %q", got.Purpose)
	}

	list := func(q store.FileQuery) []string {
		t.Helper()
		got, err := s.Attachments.ListFiles(ctx, u.ID, q)
		noErr(t, err, "ListFiles")
		return fileIDs(got)
	}
	if got, want := list(store.FileQuery{Limit: 10}), []string{c.ID, b.ID, a.ID}; !slices.Equal(got, want) {
		t.Fatalf("ListFiles newest first = %v, want %v (no plain attachment, no other user's)", got, want)
	}
	if got, want := list(store.FileQuery{Limit: 10, Ascending: true}), []string{a.ID, b.ID, c.ID}; !slices.Equal(got, want) {
		t.Fatalf("ListFiles oldest first = %v, want %v", got, want)
	}
	if got, want := list(store.FileQuery{Limit: 10, Purpose: "assistants"}), []string{c.ID, a.ID}; !slices.Equal(got, want) {
		t.Fatalf("ListFiles assistants = %v, want %v", got, want)
	}
	if got, want := list(store.FileQuery{Limit: 1, After: c.ID}), []string{b.ID}; !slices.Equal(got, want) {
		t.Fatalf("ListFiles after c, limit 1 = %v, want %v", got, want)
	}
	if got, want := list(store.FileQuery{Limit: 10, After: a.ID, Ascending: true}), []string{b.ID, c.ID}; !slices.Equal(got, want) {
		t.Fatalf("ListFiles after a, ascending = %v, want %v", got, want)
	}
	if got := list(store.FileQuery{Limit: 10, Purpose: "batch"}); len(got) != 0 {
		t.Fatalf("ListFiles batch = %v, want none", got)
	}
	_, err = s.Attachments.ListFiles(ctx, u.ID, store.FileQuery{})
	wantErr(t, err, store.ErrInvalidArgument, "ListFiles limit 0")

	// Files count against the quota like any attachment: 100 of 100 used.
	wantErr(t, s.Attachments.Create(ctx, attachment(u.ID, 1), 100), store.ErrQuotaExceeded, "files fill the quota")
	noErr(t, s.Attachments.Delete(ctx, u.ID, c.ID), "Delete file")
	noErr(t, s.Attachments.Create(ctx, attachment(u.ID, 30), 100), "a deleted file frees its bytes")
	if got, want := list(store.FileQuery{Limit: 10}), []string{b.ID, a.ID}; !slices.Equal(got, want) {
		t.Fatalf("ListFiles after Delete = %v, want %v", got, want)
	}
}

// testFilesKept: a file is never claimed as unreferenced, however old; it
// is claimed once its DeleteAt passes (referenced or not), then hidden from
// Get and ListFiles, claimed again once the claim is stale, and purged.
func testFilesKept(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	u := mustUser(t, s, "kept@example.com")
	kept := file(t, s, u.ID, "assistants", 10, time.Time{})
	expiring := file(t, s, u.ID, "user_data", 20, t0.Add(time.Hour))
	referenced := file(t, s, u.ID, "vision", 30, t0.Add(time.Hour))
	noErr(t, s.Attachments.Reference(ctx, u.ID, []string{referenced.ID}, t0), "Reference")
	plain := ready(t, s, u.ID, 40, t0, store.AttachmentReady)

	later := t0.Add(365 * 24 * time.Hour)
	got, err := s.Attachments.ClaimUnreferenced(ctx, later, later, later.Add(-time.Hour), 100)
	noErr(t, err, "ClaimUnreferenced")
	if !maps.Equal(ids(got), map[string]bool{plain.ID: true}) {
		t.Fatalf("claimed %v as unreferenced, want only the plain attachment %s", ids(got), plain.ID)
	}
	noErr(t, s.Attachments.Purge(ctx, plain.ID), "Purge plain")

	_, err = s.Attachments.ClaimExpired(ctx, t0, t0, 0)
	wantErr(t, err, store.ErrInvalidArgument, "ClaimExpired limit 0")
	early, err := s.Attachments.ClaimExpired(ctx, t0.Add(time.Hour-time.Nanosecond), t0, 100)
	noErr(t, err, "ClaimExpired early")
	if len(early) != 0 {
		t.Fatalf("claimed %v before their time", ids(early))
	}
	at := t0.Add(time.Hour)
	got, err = s.Attachments.ClaimExpired(ctx, at, at.Add(-time.Hour), 100)
	noErr(t, err, "ClaimExpired")
	if !maps.Equal(ids(got), map[string]bool{expiring.ID: true, referenced.ID: true}) {
		t.Fatalf("claimed %v as expired, want %s and %s", ids(got), expiring.ID, referenced.ID)
	}
	_, err = s.Attachments.Get(ctx, u.ID, expiring.ID)
	wantErr(t, err, store.ErrNotFound, "Get a claimed file")
	if list, _ := s.Attachments.ListFiles(ctx, u.ID, store.FileQuery{Limit: 10}); !slices.Equal(fileIDs(list), []string{kept.ID}) {
		t.Fatalf("ListFiles with claimed files = %v, want only %s", fileIDs(list), kept.ID)
	}
	if again, _ := s.Attachments.ClaimExpired(ctx, at.Add(time.Minute), at.Add(-time.Minute), 100); len(again) != 0 {
		t.Fatalf("claimed %v twice", ids(again))
	}
	again, err := s.Attachments.ClaimExpired(ctx, at.Add(time.Hour), at, 1)
	noErr(t, err, "ClaimExpired stale, limit 1")
	if len(again) != 1 {
		t.Fatalf("reclaimed %d, want 1 (the limit)", len(again))
	}
	for _, a := range got {
		noErr(t, s.Attachments.Purge(ctx, a.ID), "Purge")
	}
	if left, _ := s.Attachments.ClaimExpired(ctx, later, later, 100); len(left) != 0 {
		t.Fatalf("claimable after Purge: %v", ids(left))
	}
	if _, err := s.Attachments.Get(ctx, u.ID, kept.ID); err != nil {
		t.Fatalf("the file without expiry is gone: %v", err)
	}
}
