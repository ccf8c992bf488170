package attach

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/blob"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
)

// clock is the test's time, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type sweepEnv struct {
	svc   *Service
	blobs *blob.Local
	dir   string
	clock *clock
	owner Owner
}

// newSweepEnv is a Service on a real SQLite database and a real blob
// directory, with a quota of quota bytes and the given TTL.
func newSweepEnv(t *testing.T, quota int64, ttl time.Duration) *sweepEnv {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := db.Store()
	clk := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	local, err := blob.NewLocal(dir, []byte("0123456789abcdef0123456789abcdef"), "", clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	u := store.User{ID: uuid.NewString(), Email: "sweep@example.com", DisplayName: "Sweep", PasswordHash: "$argon2id$x", Tier: store.TierFree, CreatedAt: clk.Now()}
	if err := s.Accounts.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	lim := DefaultLimits()
	lim.UserBytes = quota
	svc := &Service{Store: s.Attachments, Blobs: local, Checker: NewChecker(lim), URLExpiry: 15 * time.Minute,
		Now: clk.Now, Logger: slog.New(slog.DiscardHandler), UnreferencedTTL: ttl}
	return &sweepEnv{svc: svc, blobs: local, dir: dir, clock: clk, owner: Owner{UserID: u.ID, Tier: store.TierFree}}
}

// upload registers, stores and completes a text file now.
func (e *sweepEnv) upload(t *testing.T, text string) store.Attachment {
	t.Helper()
	data := []byte(text)
	sum := sha256.Sum256(data)
	a, _, err := e.svc.CreateUpload(t.Context(), e.owner, UploadRequest{Filename: "notes.txt", MIME: "text/plain", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
	if err != nil {
		t.Fatalf("CreateUpload: %v", err)
	}
	if err := e.blobs.Put(t.Context(), blobKey(a), bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	done, err := e.svc.Complete(t.Context(), e.owner.UserID, a.ID)
	if err != nil || done.Status != store.AttachmentReady {
		t.Fatalf("Complete: %+v, %v", done, err)
	}
	return done
}

func (e *sweepEnv) sweep(t *testing.T) SweepResult {
	t.Helper()
	res, err := e.svc.SweepOnce(t.Context(), e.clock.Now())
	if err != nil {
		t.Fatalf("SweepOnce: %v", err)
	}
	return res
}

// gone checks that a is deleted: its record not found, both blobs gone,
// and a reference to it refused as not_found.
func (e *sweepEnv) gone(t *testing.T, a store.Attachment) {
	t.Helper()
	if _, err := e.svc.Get(t.Context(), e.owner.UserID, a.ID); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("Get %s after the sweep: %v, want not_found", a.ID, err)
	}
	for _, key := range []string{blobKey(a), preparedKey(a)} {
		if _, err := e.blobs.Get(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("blob %s after the sweep: %v, want not found", key, err)
		}
	}
	err := e.svc.Reference(t.Context(), e.owner.UserID, []store.Part{{AttachmentID: a.ID}})
	if connect.CodeOf(err) != connect.CodeNotFound || err.Error() != "not_found: attachment not found" {
		t.Errorf("Reference %s after the sweep: %v, want not_found", a.ID, err)
	}
}

// kept checks that a is whole: its record and its prepared text.
func (e *sweepEnv) kept(t *testing.T, a store.Attachment, text string) {
	t.Helper()
	p, err := e.svc.Part(t.Context(), e.owner.UserID, a.ID)
	if err != nil || p.Document == nil || p.Document.Text != text {
		t.Errorf("Part %s: %+v, %v; want its text %q", a.ID, p, err, text)
	}
	obj, err := e.blobs.Get(t.Context(), blobKey(a))
	if err != nil {
		t.Errorf("blob of %s: %v", a.ID, err)
		return
	}
	data, _ := io.ReadAll(obj)
	obj.Close()
	if string(data) != text {
		t.Errorf("blob of %s is %q, want %q", a.ID, data, text)
	}
}

// An upload no message references is deleted, record and blobs, once its
// TTL has passed, and its bytes leave the quota; a referenced one stays,
// and so does one just under the TTL until it passes too.
func TestSweepDeletesUnreferencedUploads(t *testing.T) {
	const ttl = 24 * time.Hour
	e := newSweepEnv(t, 30, ttl) // room for three 10-byte files
	ctx := t.Context()
	referenced := e.upload(t, "kept text.")
	unreferenced := e.upload(t, "lost text.")
	e.clock.Add(time.Minute)
	young := e.upload(t, "late text.")
	if _, _, err := e.svc.CreateUpload(ctx, e.owner, UploadRequest{Filename: "x.txt", MIME: "text/plain", Size: 10, SHA256: hex.EncodeToString(make([]byte, 32))}); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("a fourth file over the quota: %v", err)
	}
	e.clock.Add(time.Hour)
	if err := e.svc.Reference(ctx, e.owner.UserID, []store.Part{{Text: "look"}, {AttachmentID: referenced.ID}}); err != nil {
		t.Fatalf("Reference: %v", err)
	}

	// Just under the TTL of the first two: nothing goes.
	e.clock.Set(referenced.CreatedAt.Add(ttl - time.Nanosecond))
	if res := e.sweep(t); res.Deleted != 0 {
		t.Fatalf("deleted %d before the TTL", res.Deleted)
	}
	e.kept(t, unreferenced, "lost text.")

	// At the TTL: the unreferenced one goes; the referenced one and the one
	// a minute younger stay.
	e.clock.Set(referenced.CreatedAt.Add(ttl))
	if res := e.sweep(t); res.Deleted != 1 || res.DeletedBytes != 10 {
		t.Fatalf("sweep at the TTL: %+v, want 1 upload of 10 bytes deleted", res)
	}
	e.gone(t, unreferenced)
	e.kept(t, referenced, "kept text.")
	e.kept(t, young, "late text.")
	// Its 10 bytes are free again.
	e.upload(t, "next text.")

	// A minute later the younger one goes too; the referenced one never.
	e.clock.Add(time.Minute)
	if res := e.sweep(t); res.Deleted != 1 {
		t.Fatalf("sweep a minute later: %+v, want the young upload deleted", res)
	}
	e.gone(t, young)
	e.clock.Add(365 * 24 * time.Hour)
	e.sweep(t)
	e.kept(t, referenced, "kept text.")
	if res := e.sweep(t); res.Deleted != 0 {
		t.Fatalf("a second sweep deleted %d", res.Deleted)
	}
}

// A TTL of 0 keeps every upload.
func TestSweepTTLZeroKeeps(t *testing.T) {
	e := newSweepEnv(t, 1000, 0)
	a := e.upload(t, "forever.")
	e.clock.Add(10 * 365 * 24 * time.Hour)
	if res := e.sweep(t); res.Deleted != 0 {
		t.Fatalf("deleted %d with the TTL off", res.Deleted)
	}
	e.kept(t, a, "forever.")
}

// One sweep deletes at most SweepLimit uploads; the next takes the rest.
func TestSweepIsBounded(t *testing.T) {
	e := newSweepEnv(t, 1000, time.Hour)
	e.svc.SweepLimit = 3
	var all []store.Attachment
	for range 5 {
		all = append(all, e.upload(t, "some text"))
	}
	e.clock.Add(time.Hour)
	if res := e.sweep(t); res.Deleted != 3 {
		t.Fatalf("first sweep deleted %d, want the limit of 3", res.Deleted)
	}
	if res := e.sweep(t); res.Deleted != 2 {
		t.Fatalf("second sweep deleted %d, want the other 2", res.Deleted)
	}
	for _, a := range all {
		e.gone(t, a)
	}
}

// When a blob cannot be deleted, the upload stays claimed: hidden (never
// served without its bytes), its record kept, and a sweep after the claim's
// lease deletes it whole.
func TestSweepRetriesWhatItCouldNotDelete(t *testing.T) {
	e := newSweepEnv(t, 1000, time.Hour)
	a := e.upload(t, "stubborn.")
	e.clock.Add(time.Hour)
	// A real filesystem fault: the tombstone directory replaced by a file,
	// so Local.Delete fails.
	gone := filepath.Join(e.dir, ".gone")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gone, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := e.sweep(t); res.Deleted != 0 {
		t.Fatalf("deleted %d although its blobs could not be", res.Deleted)
	}
	if _, err := e.svc.Get(t.Context(), e.owner.UserID, a.ID); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("Get of a claimed upload: %v, want not_found (hidden)", err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	if res := e.sweep(t); res.Deleted != 0 {
		t.Fatalf("reclaimed within the lease: %+v", res)
	}
	e.clock.Add(claimLease)
	if res := e.sweep(t); res.Deleted != 1 {
		t.Fatalf("sweep after the lease: %+v, want it deleted", res)
	}
	e.gone(t, a)
}
