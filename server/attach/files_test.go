package attach

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// putFile stores text as a file of purpose with the request's bytes.
func (e *sweepEnv) putFile(t *testing.T, name, mime, purpose, text string, expiresAfter time.Duration) (store.Attachment, error) {
	t.Helper()
	data := []byte(text)
	return e.svc.PutFile(t.Context(), e.owner, UploadRequest{Filename: name, MIME: mime, Purpose: purpose, ExpiresAfter: expiresAfter},
		bytes.NewReader(data), int64(len(data)))
}

// blobFiles counts the blobs under the blob directory (not the tombstones
// of deleted keys).
func blobFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() && !strings.Contains(p, ".gone") {
			n++
		}
		return nil
	})
	return n
}

func wantField(t *testing.T, err error, field string) {
	t.Helper()
	var fv parleyv1.FieldViolation
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !apierr.Detail(err, &fv) || fv.GetField() != field {
		t.Fatalf("err = %v, want invalid_argument naming %s", err, field)
	}
}

// A file sent with its bytes is stored ready, typed from its name when the
// client said octet-stream, listed, readable, and deletable; only as a file
// of its owner.
func TestPutFileLifecycle(t *testing.T) {
	e := newSweepEnv(t, 1<<20, 0)
	f, err := e.putFile(t, "notes.md", "application/octet-stream", "assistants", "# The white rabbit", 0)
	if err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	if f.Status != store.AttachmentReady || f.MimeType != "text/markdown" || f.Purpose != "assistants" || f.SizeBytes != 18 || !f.DeleteAt.IsZero() {
		t.Fatalf("PutFile = %+v", f)
	}
	e.kept(t, f, "# The white rabbit")
	got, more, err := e.svc.ListFiles(t.Context(), e.owner.UserID, FileQuery{Limit: 10})
	if err != nil || more || len(got) != 1 || got[0].ID != f.ID {
		t.Fatalf("ListFiles = %v, %v, %v", got, more, err)
	}
	a, obj, err := e.svc.OpenFile(t.Context(), e.owner.UserID, f.ID)
	if err != nil || a.ID != f.ID || obj.Size() != 18 {
		t.Fatalf("OpenFile = %+v, %v", a, err)
	}
	obj.Close()
	if _, err := e.svc.File(t.Context(), "someone-else", f.ID); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("another user's File: %v, want not_found", err)
	}
	plain := e.upload(t, "a message's attachment")
	if _, err := e.svc.File(t.Context(), e.owner.UserID, plain.ID); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("a plain attachment as a file: %v, want not_found", err)
	}
	if err := e.svc.DeleteFile(t.Context(), e.owner.UserID, plain.ID); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("DeleteFile of a plain attachment: %v, want not_found", err)
	}
	if err := e.svc.DeleteFile(t.Context(), e.owner.UserID, f.ID); err != nil {
		t.Fatalf("DeleteFile: %v", err)
	}
	e.gone(t, f)
}

// Bad input is refused naming the field, and a refused file leaves neither
// record nor bytes.
func TestPutFileRefusals(t *testing.T) {
	e := newSweepEnv(t, 100, 0)
	cases := []struct {
		name, file, mime, purpose, text string
		expires                         time.Duration
		field                           string
	}{
		{"no purpose", "a.txt", "text/plain", "", "hi", 0, "purpose"},
		{"unknown purpose", "a.txt", "text/plain", "training", "hi", 0, "purpose"},
		{"server's purpose", "a.txt", "text/plain", "batch_output", "hi", 0, "purpose"},
		{"expiry too short", "a.txt", "text/plain", "user_data", "hi", time.Minute, "expires_after"},
		{"expiry too long", "a.txt", "text/plain", "user_data", "hi", 31 * 24 * time.Hour, "expires_after"},
		{"empty", "a.txt", "text/plain", "user_data", "", 0, "file"},
		{"unknown type", "a.bin", "application/octet-stream", "user_data", "\x00\x01\x02", 0, "file"},
		{"content contradicts the type", "a.pdf", "application/pdf", "user_data", "plain words", 0, "file"},
		{"directory in the name", "../a.txt", "text/plain", "user_data", "hi", 0, "filename"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.putFile(t, c.file, c.mime, c.purpose, c.text, c.expires)
			wantField(t, err, c.field)
		})
	}
	_, err := e.putFile(t, "big.txt", "text/plain", "user_data", strings.Repeat("x", 101), 0)
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("a file past the quota: %v, want resource_exhausted", err)
	}
	if files, _, _ := e.svc.ListFiles(t.Context(), e.owner.UserID, FileQuery{Limit: 10}); len(files) != 0 {
		t.Fatalf("refused files left records: %v", files)
	}
	if n := blobFiles(t, e.dir); n != 0 {
		t.Fatalf("refused files left %d blobs", n)
	}
	// Nothing refused counts: the whole quota is still free.
	if _, err := e.putFile(t, "full.txt", "text/plain", "user_data", strings.Repeat("x", 100), 0); err != nil {
		t.Fatalf("a file of exactly the quota after refusals: %v", err)
	}
}

// The sweep never deletes a file as unreferenced, however old; it deletes
// a file once its expires_after has passed, even with the TTL off, and a
// plain attachment keeps today's TTL.
func TestSweepKeepsFiles(t *testing.T) {
	e := newSweepEnv(t, 1<<20, 24*time.Hour)
	kept, err := e.putFile(t, "kept.txt", "text/plain", "assistants", "kept for ever", 0)
	if err != nil {
		t.Fatal(err)
	}
	expiring, err := e.putFile(t, "brief.txt", "text/plain", "user_data", "kept two days", 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !expiring.DeleteAt.Equal(expiring.CreatedAt.Add(48 * time.Hour)) {
		t.Fatalf("DeleteAt = %v, want created_at + 48h", expiring.DeleteAt)
	}
	plain := e.upload(t, "a message's attachment")

	e.clock.Add(25 * time.Hour)
	if res := e.sweep(t); res.Deleted != 1 || res.ExpiredFiles != 0 {
		t.Fatalf("sweep after 25h = %+v, want only the plain attachment deleted", res)
	}
	e.gone(t, plain)
	e.kept(t, kept, "kept for ever")
	e.kept(t, expiring, "kept two days")

	e.svc.UnreferencedTTL = 0
	e.clock.Add(23 * time.Hour)
	if res := e.sweep(t); res.ExpiredFiles != 1 || res.ExpiredFileBytes != expiring.SizeBytes {
		t.Fatalf("sweep at 48h = %+v, want the expiring file deleted", res)
	}
	e.gone(t, expiring)
	e.clock.Add(365 * 24 * time.Hour)
	e.svc.UnreferencedTTL = time.Hour
	e.sweep(t)
	e.kept(t, kept, "kept for ever")
}

func TestFileType(t *testing.T) {
	for _, c := range []struct{ declared, name, head, want string }{
		{"text/plain", "x.bin", "hi", "text/plain"},
		{"application/octet-stream", "report.PDF", "%PDF-1.7", "application/pdf"},
		{"", "notes.csv", "a,b", "text/csv"},
		{"", "noext", "plain words", "text/plain"},
		{"", "noext", "\x89PNG\r\n\x1a\n....", "image/png"},
	} {
		got, ok := fileType(c.declared, c.name, []byte(c.head))
		if !ok || got.MIME != c.want {
			t.Errorf("fileType(%q, %q) = %v, %v; want %s", c.declared, c.name, got.MIME, ok, c.want)
		}
	}
	if _, ok := fileType("application/zip", "a.zip", []byte("PK\x03\x04")); ok {
		t.Error("fileType accepted a zip")
	}
}
