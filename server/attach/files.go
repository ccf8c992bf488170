package attach

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/blob"
	"github.com/parleyhq/parley/server/store"
)

// A file (FileService, /v1/files) is an attachment with a purpose: the same
// record, quota, blob storage, checks and owner, usable as a message's
// attachment like any other, but listed as a file and kept until its owner
// deletes it or its expiry passes, whether a message references it or not.

// Purposes are the purposes a file may have: OpenAI's values.
var Purposes = []string{"assistants", "assistants_output", "batch", "batch_output", "fine-tune", "fine-tune-results", "vision", "user_data", "evals"}

// CreatablePurposes are the purposes a client may upload a file with; the
// others name files the server writes (a batch's output, say).
var CreatablePurposes = []string{"assistants", "batch", "fine-tune", "vision", "user_data", "evals"}

// The bounds of a file's expires_after, as OpenAI's: an hour to 30 days.
const (
	MinFileExpiry = time.Hour
	MaxFileExpiry = 30 * 24 * time.Hour
)

// MaxFileListLimit is the most files one list returns (OpenAI's own bound).
const MaxFileListLimit = 10000

// checkFile checks the purpose and expiry an upload declares.
func checkFile(req UploadRequest) error {
	switch {
	case req.Purpose == "" && req.ExpiresAfter != 0:
		return apierr.InvalidArgument("expires_after", "is only for files: give a purpose")
	case req.Purpose == "":
		return nil
	case !slices.Contains(CreatablePurposes, req.Purpose):
		if slices.Contains(Purposes, req.Purpose) {
			return apierr.InvalidArgument("purpose", fmt.Sprintf("%q names files the server writes; upload with one of %s", req.Purpose, strings.Join(CreatablePurposes, ", ")))
		}
		return apierr.InvalidArgument("purpose", fmt.Sprintf("%q is not a purpose; one of %s", req.Purpose, strings.Join(CreatablePurposes, ", ")))
	case req.ExpiresAfter != 0 && (req.ExpiresAfter < MinFileExpiry || req.ExpiresAfter > MaxFileExpiry):
		return apierr.InvalidArgument("expires_after", fmt.Sprintf("%v is outside %d to %d seconds", req.ExpiresAfter, int(MinFileExpiry.Seconds()), int(MaxFileExpiry.Seconds())))
	}
	return nil
}

// PutFile stores a file whose bytes come with the request (a multipart
// /v1/files upload, or FileService.CreateFile with content): registered
// against the quota as CreateUpload does, written to blob storage, and
// checked and prepared as Complete does. The type is req.MIME when it is an
// accepted one, else the one the file name's extension or the content says.
// It returns the ready file; on any failure it leaves nothing behind,
// neither record nor bytes.
func (s *Service) PutFile(ctx context.Context, owner Owner, req UploadRequest, content io.ReaderAt, size int64) (store.Attachment, error) {
	if s == nil {
		return store.Attachment{}, unavailable()
	}
	if req.Purpose == "" {
		return store.Attachment{}, apierr.InvalidArgument("purpose", "is required: one of "+strings.Join(CreatablePurposes, ", "))
	}
	if size < 1 {
		return store.Attachment{}, apierr.InvalidArgument("file", "is empty")
	}
	head := make([]byte, min(size, 512))
	if _, err := content.ReadAt(head, 0); err != nil && err != io.EOF {
		return store.Attachment{}, s.internal(ctx, "reading a file", err)
	}
	t, ok := fileType(req.MIME, req.Filename, head)
	if !ok {
		return store.Attachment{}, apierr.InvalidArgument("file", fmt.Sprintf("%s (%s) is not an accepted type; accepted types: %s", req.Filename, req.MIME, accepted()))
	}
	if max := s.Checker.Limits().MaxBytes(t); size > max {
		return store.Attachment{}, apierr.InvalidArgument("file", fmt.Sprintf("is %d bytes, over the limit of %d for a %s", size, max, t.Name))
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(content, 0, size)); err != nil {
		return store.Attachment{}, s.internal(ctx, "reading a file", err)
	}
	req.MIME, req.Size, req.SHA256 = t.MIME, size, hex.EncodeToString(h.Sum(nil))
	a, err := s.register(ctx, owner, req)
	if err != nil {
		return store.Attachment{}, err
	}
	if err := s.Blobs.Put(ctx, blobKey(a), io.NewSectionReader(content, 0, size), size); err != nil {
		s.discard(ctx, a)
		return store.Attachment{}, s.internal(ctx, "storing a file", err)
	}
	done, err := s.Complete(ctx, owner.UserID, a.ID)
	switch {
	case err != nil:
		s.discard(ctx, a)
		return store.Attachment{}, err
	case done.Status != store.AttachmentReady:
		s.discard(ctx, a)
		return store.Attachment{}, apierr.InvalidArgument("file", done.FailureReason)
	}
	return done, nil
}

// discard removes what a failed PutFile stored, record and bytes, even when
// its request was cancelled.
func (s *Service) discard(ctx context.Context, a store.Attachment) {
	ctx = context.WithoutCancel(ctx)
	if err := s.Store.Delete(ctx, a.UserID, a.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.Logger.WarnContext(ctx, "deleting a failed file's record", "attachment_id", a.ID, "err", err)
	}
	s.deleteBlobs(ctx, a)
}

// extTypes are the types file names say by their extension, beyond what the
// system's MIME table knows.
var extTypes = map[string]string{
	".md": "text/markdown", ".markdown": "text/markdown", ".csv": "text/csv", ".txt": "text/plain",
	".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp",
	".pdf": "application/pdf", ".docx": DOCX, ".pptx": PPTX,
}

// fileType is the accepted type of a file sent with its bytes: the declared
// one when accepted (multipart clients often send application/octet-stream
// instead), else the file name's extension's, else what the first bytes
// look like. Complete then checks the content against it.
func fileType(declared, filename string, head []byte) (Type, bool) {
	if t, ok := Lookup(declared); ok {
		return t, true
	}
	ext := strings.ToLower(path.Ext(filename))
	if m, ok := extTypes[ext]; ok {
		return Lookup(m)
	}
	if m := mime.TypeByExtension(ext); m != "" {
		if t, ok := Lookup(m); ok {
			return t, true
		}
	}
	return Lookup(http.DetectContentType(head))
}

// File returns the caller's file (an attachment with a purpose), or
// not_found: another user's, a plain attachment, or a deleted one.
func (s *Service) File(ctx context.Context, userID, id string) (store.Attachment, error) {
	if s == nil {
		return store.Attachment{}, unavailable()
	}
	if id == "" {
		return store.Attachment{}, apierr.InvalidArgument("file_id", "is required")
	}
	a, err := s.Get(ctx, userID, id)
	if connect.CodeOf(err) == connect.CodeNotFound || err == nil && a.Purpose == "" {
		return store.Attachment{}, apierr.NotFound("file")
	}
	return a, err
}

// FileQuery is a page of ListFiles: Purpose filters (empty: every purpose),
// After is the last ID of the page before, Limit is 1 to MaxFileListLimit.
type FileQuery = store.FileQuery

// ListFiles returns a page of the caller's files and whether more follow.
func (s *Service) ListFiles(ctx context.Context, userID string, q FileQuery) ([]store.Attachment, bool, error) {
	if s == nil {
		return nil, false, unavailable()
	}
	switch {
	case q.Limit < 1 || q.Limit > MaxFileListLimit:
		return nil, false, apierr.InvalidArgument("limit", fmt.Sprintf("must be 1 to %d", MaxFileListLimit))
	case q.Purpose != "" && !slices.Contains(Purposes, q.Purpose):
		return nil, false, apierr.InvalidArgument("purpose", fmt.Sprintf("%q is not a purpose; one of %s", q.Purpose, strings.Join(Purposes, ", ")))
	}
	if q.After != "" {
		if _, err := uuid.Parse(q.After); err != nil {
			return nil, false, apierr.InvalidArgument("after", "is not a file id")
		}
	}
	q.Limit++
	files, err := s.Store.ListFiles(ctx, userID, q)
	if err != nil {
		return nil, false, s.internal(ctx, "listing files", err)
	}
	more := len(files) == q.Limit
	if more {
		files = files[:q.Limit-1]
	}
	return files, more, nil
}

// OpenFile returns the caller's ready file with its original bytes, which
// the caller closes.
func (s *Service) OpenFile(ctx context.Context, userID, id string) (store.Attachment, blob.Object, error) {
	a, err := s.File(ctx, userID, id)
	if err != nil {
		return a, nil, err
	}
	if a.Status != store.AttachmentReady {
		return a, nil, apierr.FailedPrecondition(fmt.Sprintf("file %s is %s, not ready: its bytes are not uploaded and checked yet", a.ID, a.Status))
	}
	obj, err := s.Blobs.Get(ctx, blobKey(a))
	if errors.Is(err, blob.ErrNotFound) {
		return a, nil, apierr.NotFound("file")
	} else if err != nil {
		return a, nil, s.internal(ctx, "opening a file", err)
	}
	return a, obj, nil
}

// DeleteFile deletes the caller's file, bytes and record.
func (s *Service) DeleteFile(ctx context.Context, userID, id string) error {
	if _, err := s.File(ctx, userID, id); err != nil {
		return err
	}
	err := s.Delete(ctx, userID, id)
	if connect.CodeOf(err) == connect.CodeNotFound {
		return apierr.NotFound("file")
	}
	if err == nil && s.OnFileDeleted != nil {
		s.OnFileDeleted(ctx, userID, id)
	}
	return err
}

// MaxServerFileBytes bounds a file the server writes (a batch's output).
const MaxServerFileBytes = 1 << 30

// WriteFile stores a file the server writes for its owner — a batch's
// output or errors, of one of the purposes clients cannot upload with — as
// a ready plain-text file with data as its bytes, listed and downloadable
// like any file. Its size counts toward the owner's stored bytes but is
// never refused by the quota or the balance: the work it reports was done
// and paid for. It is not meant as a message's attachment (it has no
// prepared text).
func (s *Service) WriteFile(ctx context.Context, userID, filename, purpose string, data []byte) (store.Attachment, error) {
	if s == nil {
		return store.Attachment{}, unavailable()
	}
	if !slices.Contains(Purposes, purpose) || slices.Contains(CreatablePurposes, purpose) {
		return store.Attachment{}, fmt.Errorf("attach: %q is not a purpose the server writes", purpose)
	}
	if len(data) == 0 || len(data) > MaxServerFileBytes {
		return store.Attachment{}, fmt.Errorf("attach: a server file of %d bytes", len(data))
	}
	sum := sha256.Sum256(data)
	now := s.Now()
	a := store.Attachment{
		ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Filename: filename, MimeType: "text/plain",
		SizeBytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Status: store.AttachmentUploading, CreatedAt: now,
		ExpiresAt: now.Add(s.URLExpiry + time.Hour), Purpose: purpose,
	}
	if err := s.Store.Create(ctx, a, math.MaxInt64); err != nil {
		return store.Attachment{}, fmt.Errorf("attach: creating a server file: %w", err)
	}
	if err := s.Blobs.Put(ctx, blobKey(a), bytes.NewReader(data), int64(len(data))); err != nil {
		s.discard(ctx, a)
		return store.Attachment{}, fmt.Errorf("attach: storing a server file: %w", err)
	}
	done, err := s.Store.SetStatus(ctx, a.ID, store.AttachmentResult{Status: store.AttachmentReady})
	if err != nil {
		s.discard(ctx, a)
		return store.Attachment{}, fmt.Errorf("attach: completing a server file: %w", err)
	}
	return done, nil
}
