package storetest

import (
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

func attachment(userID string, size int64) store.Attachment {
	return store.Attachment{ID: newID(), UserID: userID, Filename: "cat.png", MimeType: "image/png", SizeBytes: size,
		SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Status: store.AttachmentUploading,
		CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
}

// TestAttachments is the conformance suite for store.Attachments.
func TestAttachments(t *testing.T, newStore NewStore) {
	t.Run("Lifecycle", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		a := mustUser(t, s, "a@example.com")
		b := mustUser(t, s, "b@example.com")
		at := attachment(a.ID, 1234)
		noErr(t, s.Attachments.Create(ctx, at, 1<<30), "Create")
		wantErr(t, s.Attachments.Create(ctx, at, 1<<30), store.ErrConflict, "Create duplicate ID")

		got, err := s.Attachments.Get(ctx, a.ID, at.ID)
		noErr(t, err, "Get")
		sameTime(t, got.CreatedAt, at.CreatedAt, "CreatedAt")
		sameTime(t, got.ExpiresAt, at.ExpiresAt, "ExpiresAt")
		got.CreatedAt, got.ExpiresAt = at.CreatedAt, at.ExpiresAt
		if got != at {
			t.Fatalf("Get = %+v, want %+v", got, at)
		}

		_, err = s.Attachments.Get(ctx, b.ID, at.ID)
		wantErr(t, err, store.ErrNotFound, "B Get A's")
		wantErr(t, s.Attachments.Delete(ctx, b.ID, at.ID), store.ErrNotFound, "B Delete A's")

		ready, err := s.Attachments.SetStatus(ctx, at.ID, store.AttachmentResult{Status: store.AttachmentReady,
			Width: 640, Height: 480, MimeType: "image/webp"})
		noErr(t, err, "SetStatus ready")
		if ready.Status != store.AttachmentReady || ready.Width != 640 || ready.Height != 480 || ready.MimeType != "image/webp" {
			t.Fatalf("SetStatus = %+v", ready)
		}
		_, err = s.Attachments.SetStatus(ctx, at.ID, store.AttachmentResult{Status: store.AttachmentFailed, FailureReason: "late"})
		wantErr(t, err, store.ErrConflict, "SetStatus after ready")
		_, err = s.Attachments.SetStatus(ctx, newID(), store.AttachmentResult{Status: store.AttachmentReady})
		wantErr(t, err, store.ErrNotFound, "SetStatus unknown")

		// Detected MIME left empty keeps the declared one; failures keep their reason.
		f := attachment(a.ID, 10)
		noErr(t, s.Attachments.Create(ctx, f, 1<<30), "Create f")
		failed, err := s.Attachments.SetStatus(ctx, f.ID, store.AttachmentResult{Status: store.AttachmentFailed,
			FailureReason: "sha256 mismatch"})
		noErr(t, err, "SetStatus failed")
		if failed.Status != store.AttachmentFailed || failed.FailureReason != "sha256 mismatch" || failed.MimeType != "image/png" {
			t.Fatalf("SetStatus failed = %+v", failed)
		}

		noErr(t, s.Attachments.Delete(ctx, a.ID, at.ID), "Delete")
		_, err = s.Attachments.Get(ctx, a.ID, at.ID)
		wantErr(t, err, store.ErrNotFound, "Get after Delete")
		wantErr(t, s.Attachments.Delete(ctx, a.ID, at.ID), store.ErrNotFound, "Delete twice")
	})

	t.Run("QuotaExact", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "q@example.com")
		other := mustUser(t, s, "other@example.com")
		const quota = 1000
		big := attachment(u.ID, 600)
		noErr(t, s.Attachments.Create(ctx, big, quota), "600 of 1000")
		rest := attachment(u.ID, 400)
		noErr(t, s.Attachments.Create(ctx, rest, quota), "exactly up to the quota")
		wantErr(t, s.Attachments.Create(ctx, attachment(u.ID, 1), quota), store.ErrQuotaExceeded, "one byte over")
		noErr(t, s.Attachments.Create(ctx, attachment(other.ID, 1000), quota), "another user's quota is separate")
		noErr(t, s.Attachments.Create(ctx, attachment(u.ID, 0), quota), "an empty file at the quota")

		// A failed attachment no longer counts.
		_, err := s.Attachments.SetStatus(ctx, big.ID, store.AttachmentResult{Status: store.AttachmentFailed, FailureReason: "bad magic"})
		noErr(t, err, "SetStatus failed")
		wantErr(t, s.Attachments.Create(ctx, attachment(u.ID, 601), quota), store.ErrQuotaExceeded, "601 after failure")
		noErr(t, s.Attachments.Create(ctx, attachment(u.ID, 600), quota), "600 after failure")
		// A deleted attachment no longer counts.
		noErr(t, s.Attachments.Delete(ctx, u.ID, rest.ID), "Delete")
		noErr(t, s.Attachments.Create(ctx, attachment(u.ID, 400), quota), "400 after delete")
		wantErr(t, s.Attachments.Create(ctx, attachment(u.ID, 1), quota), store.ErrQuotaExceeded, "full again")
		wantErr(t, s.Attachments.Create(ctx, attachment(newID(), 2000), quota), store.ErrQuotaExceeded, "larger than the quota")
	})

	t.Run("ExpireUploads", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "x@example.com")
		const quota = 1000
		stale := attachment(u.ID, 700) // expires at t0+24h
		noErr(t, s.Attachments.Create(ctx, stale, quota), "stale upload")
		done := attachment(u.ID, 300)
		noErr(t, s.Attachments.Create(ctx, done, quota), "completed upload")
		_, err := s.Attachments.SetStatus(ctx, done.ID, store.AttachmentResult{Status: store.AttachmentReady})
		noErr(t, err, "SetStatus ready")

		got, err := s.Attachments.ExpireUploads(ctx, t0.Add(24*time.Hour-time.Nanosecond))
		noErr(t, err, "ExpireUploads early")
		if len(got) != 0 {
			t.Fatalf("expired %d uploads before their time", len(got))
		}
		got, err = s.Attachments.ExpireUploads(ctx, t0.Add(24*time.Hour))
		noErr(t, err, "ExpireUploads")
		if len(got) != 1 || got[0].ID != stale.ID || got[0].Status != store.AttachmentFailed || got[0].FailureReason != store.UploadExpiredReason {
			t.Fatalf("expired %+v, want only the stale upload, failed", got)
		}
		if again, _ := s.Attachments.ExpireUploads(ctx, t0.Add(48*time.Hour)); len(again) != 0 {
			t.Fatalf("expired %d again", len(again))
		}
		// Its 700 bytes no longer count; the ready attachment's 300 still do.
		noErr(t, s.Attachments.Create(ctx, attachment(u.ID, 700), quota), "quota freed")
		wantErr(t, s.Attachments.Create(ctx, attachment(u.ID, 1), quota), store.ErrQuotaExceeded, "quota full again")
	})

	t.Run("Unreferenced", func(t *testing.T) { testUnreferenced(t, newStore) })
	t.Run("ClaimConcurrent", func(t *testing.T) { testClaimConcurrent(t, newStore) })
	t.Run("Files", func(t *testing.T) { testFiles(t, newStore) })
	t.Run("FilesKept", func(t *testing.T) { testFilesKept(t, newStore) })

	t.Run("QuotaConcurrent", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "c@example.com")
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range 60 {
			wg.Go(func() {
				err := s.Attachments.Create(ctx, attachment(u.ID, 100), 1000)
				switch {
				case err == nil:
					ok.Add(1)
				case !errors.Is(err, store.ErrQuotaExceeded):
					t.Errorf("Create: %v", err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 10 {
			t.Fatalf("%d uploads of 100 bytes fit a 1000-byte quota, want 10", ok.Load())
		}
	})
}

// ready stores an attachment of u created at created, completed (or failed
// when status says so).
func ready(t *testing.T, s store.Store, userID string, size int64, created time.Time, status store.AttachmentStatus) store.Attachment {
	t.Helper()
	a := attachment(userID, size)
	a.CreatedAt = created
	noErr(t, s.Attachments.Create(t.Context(), a, 1<<40), "Create")
	if status == store.AttachmentUploading {
		return a
	}
	done, err := s.Attachments.SetStatus(t.Context(), a.ID, store.AttachmentResult{Status: status, FailureReason: "bad"})
	noErr(t, err, "SetStatus")
	return done
}

func ids(as []store.Attachment) map[string]bool {
	m := map[string]bool{}
	for _, a := range as {
		m[a.ID] = true
	}
	return m
}

// testUnreferenced: only attachments ready or failed, never referenced and
// old enough are claimed; a claimed one is hidden and frees its quota, is
// claimed again once its claim is stale, and Purge removes it.
func testUnreferenced(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	u := mustUser(t, s, "sweep@example.com")
	other := mustUser(t, s, "other@example.com")
	old := ready(t, s, u.ID, 100, t0, store.AttachmentReady)
	failed := ready(t, s, u.ID, 10, t0, store.AttachmentFailed)
	kept := ready(t, s, u.ID, 200, t0, store.AttachmentReady)
	young := ready(t, s, u.ID, 300, t0.Add(time.Nanosecond), store.AttachmentReady) // just under the cutoff
	uploading := ready(t, s, u.ID, 400, t0.Add(-time.Hour), store.AttachmentUploading)
	theirs := ready(t, s, other.ID, 500, t0, store.AttachmentReady)

	noErr(t, s.Attachments.Reference(ctx, u.ID, []string{kept.ID, kept.ID}, t0), "Reference")
	noErr(t, s.Attachments.Reference(ctx, u.ID, []string{kept.ID}, t0.Add(time.Hour)), "Reference again")
	noErr(t, s.Attachments.Reference(ctx, u.ID, nil, t0), "Reference nothing")
	// All or none: with another user's or an unknown attachment, nothing is
	// marked (old and theirs are still claimed below).
	wantErr(t, s.Attachments.Reference(ctx, u.ID, []string{old.ID, theirs.ID}, t0), store.ErrNotFound, "Reference another user's")
	wantErr(t, s.Attachments.Reference(ctx, u.ID, []string{old.ID, newID()}, t0), store.ErrNotFound, "Reference an unknown one")

	_, err := s.Attachments.ClaimUnreferenced(ctx, t0, t0, t0, 0)
	wantErr(t, err, store.ErrInvalidArgument, "ClaimUnreferenced limit 0")
	claimAt := t0.Add(24 * time.Hour)
	got, err := s.Attachments.ClaimUnreferenced(ctx, claimAt, t0, claimAt.Add(-time.Hour), 100)
	noErr(t, err, "ClaimUnreferenced")
	if want := map[string]bool{old.ID: true, failed.ID: true, theirs.ID: true}; len(got) != 3 || !maps.Equal(ids(got), want) {
		t.Fatalf("claimed %v, want old, failed and theirs (not the referenced %s, the young %s, the uploading %s)", ids(got), kept.ID, young.ID, uploading.ID)
	}
	for _, a := range got {
		if a.ID == old.ID && (a.SizeBytes != 100 || a.UserID != u.ID || a.Status != store.AttachmentReady) {
			t.Fatalf("claimed %+v", a)
		}
	}
	// Claimed: hidden from its owner, not referable, and free of the quota.
	_, err = s.Attachments.Get(ctx, u.ID, old.ID)
	wantErr(t, err, store.ErrNotFound, "Get a claimed attachment")
	wantErr(t, s.Attachments.Delete(ctx, u.ID, old.ID), store.ErrNotFound, "Delete a claimed attachment")
	wantErr(t, s.Attachments.Reference(ctx, u.ID, []string{old.ID}, claimAt), store.ErrNotFound, "Reference a claimed attachment")
	noErr(t, s.Attachments.Create(ctx, attachment(other.ID, 1000), 1000), "the claimed bytes no longer count")

	// Claimed once: a sweeper beside gets nothing; after the claim is stale
	// they are claimed again (the first sweeper died).
	again, err := s.Attachments.ClaimUnreferenced(ctx, claimAt.Add(time.Minute), t0, claimAt.Add(-time.Minute), 100)
	noErr(t, err, "ClaimUnreferenced again")
	if len(again) != 0 {
		t.Fatalf("claimed %v twice", ids(again))
	}
	again, err = s.Attachments.ClaimUnreferenced(ctx, claimAt.Add(time.Hour), t0, claimAt, 1)
	noErr(t, err, "ClaimUnreferenced stale, limit 1")
	if len(again) != 1 {
		t.Fatalf("reclaimed %d, want 1 (the limit)", len(again))
	}

	for _, a := range got {
		noErr(t, s.Attachments.Purge(ctx, a.ID), "Purge")
		noErr(t, s.Attachments.Purge(ctx, a.ID), "Purge twice")
	}
	noErr(t, s.Attachments.Purge(ctx, kept.ID), "Purge an unclaimed one")
	if _, err := s.Attachments.Get(ctx, u.ID, kept.ID); err != nil {
		t.Fatalf("Purge removed an attachment never claimed: %v", err)
	}
	if left, _ := s.Attachments.ClaimUnreferenced(ctx, claimAt.Add(48*time.Hour), t0, claimAt.Add(48*time.Hour), 100); len(left) != 0 {
		t.Fatalf("claimable after Purge: %v", ids(left))
	}
	// The young one goes once the cutoff passes it; the referenced one never.
	later, err := s.Attachments.ClaimUnreferenced(ctx, claimAt.Add(72*time.Hour), claimAt.Add(72*time.Hour), claimAt, 100)
	noErr(t, err, "ClaimUnreferenced later")
	if !maps.Equal(ids(later), map[string]bool{young.ID: true}) {
		t.Fatalf("claimed %v later, want only the young one %s", ids(later), young.ID)
	}
}

// testClaimConcurrent: sweepers claiming at once each take different
// attachments, and an attachment referenced while sweepers run is either
// referenced (never claimed) or claimed (its Reference fails), not both.
func testClaimConcurrent(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	u := mustUser(t, s, "race@example.com")
	const n = 40
	all := make([]store.Attachment, n)
	for i := range all {
		all[i] = ready(t, s, u.ID, 1, t0, store.AttachmentReady)
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	referenced := map[string]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				got, err := s.Attachments.ClaimUnreferenced(ctx, t0.Add(time.Hour), t0, t0, 3)
				if err != nil {
					t.Errorf("ClaimUnreferenced: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, a := range got {
					claimed[a.ID]++
				}
				mu.Unlock()
			}
		})
	}
	for i := 0; i < n; i += 2 {
		wg.Go(func() {
			err := s.Attachments.Reference(ctx, u.ID, []string{all[i].ID}, t0.Add(time.Hour))
			switch {
			case err == nil:
				mu.Lock()
				referenced[all[i].ID] = true
				mu.Unlock()
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("Reference: %v", err)
			}
		})
	}
	wg.Wait()
	for _, a := range all {
		switch c := claimed[a.ID]; {
		case c > 1:
			t.Errorf("%s claimed %d times", a.ID, c)
		case c == 1 && referenced[a.ID]:
			t.Errorf("%s both referenced and claimed", a.ID)
		case c == 0 && !referenced[a.ID]:
			t.Errorf("%s neither referenced nor claimed", a.ID)
		}
	}
}
