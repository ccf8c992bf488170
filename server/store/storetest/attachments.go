package storetest

import (
	"errors"
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
