package attach

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/blob"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

// Service runs the attachment lifecycle: an upload is registered against
// the user's quota, its bytes go straight to blob storage by signed URL,
// and on completion they are checked and prepared once; messages then use
// the prepared form (the fitted image, the document's text), which is kept
// beside the original under key + ".prepared".
type Service struct {
	Store   store.Attachments
	Blobs   blob.Blobs
	Checker *Checker
	// URLExpiry is how long upload and download URLs live (at most
	// blob.MaxURLExpiry).
	URLExpiry time.Duration
	Now       func() time.Time
	Logger    *slog.Logger
	// Balance, when set, is the caller's available balance in nanodollars:
	// storing through an API key needs a positive one (the API channel
	// pays for what it uses; the web tiers have their quotas).
	Balance func(ctx context.Context, userID string) (int64, error)
	// FreeBytes, when set, is the free space of the filesystem the blobs
	// are written to (the embedded default's data directory); an upload
	// that would leave less than MinFreeBytes there is refused.
	FreeBytes    func() (int64, error)
	MinFreeBytes int64
	// UnreferencedTTL, when positive, is how long an upload may wait for a
	// message to reference it: past it, SweepOnce deletes it, bytes and
	// record (see sweep.go).
	UnreferencedTTL time.Duration
	// SweepLimit bounds the uploads one sweep deletes (0: DefaultSweepLimit).
	SweepLimit int
	// Metrics, when set, counts what the sweeps delete.
	Metrics *Metrics
	// OnFileDeleted, when set, is told of each file (an attachment with a
	// purpose) deleted by its owner or by the sweep, once its record is
	// gone: the vector stores take it out of their indexes.
	OnFileDeleted func(ctx context.Context, userID, fileID string)
}

// Owner is who stores an upload: the user, their tier (which sets the
// quota) and whether they came with an API key.
type Owner struct {
	UserID string
	Tier   store.Tier
	APIKey bool
}

// OwnerFrom is the authenticated caller of ctx as the owner of what it
// uploads.
func OwnerFrom(ctx context.Context) Owner {
	p, _ := auth.FromContext(ctx)
	return Owner{UserID: p.UserID, Tier: p.Tier, APIKey: p.Channel == auth.ChannelAPIKey}
}

// UploadRequest is what a client declares about a file before sending it.
type UploadRequest struct {
	Filename, MIME string
	Size           int64
	SHA256         string
	// Purpose, when set, makes the upload a file (files.go): one of
	// CreatablePurposes, kept until deleted or ExpiresAfter.
	Purpose string
	// ExpiresAfter, when positive, is how long after its creation a file is
	// deleted (MinFileExpiry to MaxFileExpiry); only with a Purpose.
	ExpiresAfter time.Duration
}

func blobKey(a store.Attachment) string     { return "attachments/" + a.UserID + "/" + a.ID }
func preparedKey(a store.Attachment) string { return blobKey(a) + ".prepared" }

// CreateUpload registers an upload (status uploading), counting its size
// against the user's quota atomically, and returns where to send the bytes.
func (s *Service) CreateUpload(ctx context.Context, owner Owner, req UploadRequest) (store.Attachment, blob.Upload, error) {
	a, err := s.register(ctx, owner, req)
	if err != nil {
		return store.Attachment{}, blob.Upload{}, err
	}
	up, err := s.Blobs.SignedUploadURL(ctx, blobKey(a), a.SizeBytes, a.MimeType, s.URLExpiry)
	if err != nil {
		_ = s.Store.Delete(ctx, owner.UserID, a.ID)
		return store.Attachment{}, blob.Upload{}, s.internal(ctx, "signing an upload URL", err)
	}
	return a, up, nil
}

// register checks what an upload declares and stores its record (status
// uploading), counting its size against the user's quota atomically.
func (s *Service) register(ctx context.Context, owner Owner, req UploadRequest) (store.Attachment, error) {
	if s == nil {
		return store.Attachment{}, unavailable()
	}
	lim := s.Checker.Limits()
	switch {
	case req.Filename == "" || len(req.Filename) > 255:
		return store.Attachment{}, apierr.InvalidArgument("filename", "must be 1 to 255 bytes")
	case !utf8.ValidString(req.Filename) || strings.ContainsAny(req.Filename, "/\\\x00"):
		return store.Attachment{}, apierr.InvalidArgument("filename", "must be valid UTF-8 without directories")
	}
	t, ok := Lookup(req.MIME)
	if !ok {
		return store.Attachment{}, apierr.InvalidArgument("mime_type", fmt.Sprintf("%q is not accepted; accepted types: %s", req.MIME, accepted()))
	}
	if max := lim.MaxBytes(t); req.Size < 1 || req.Size > max {
		return store.Attachment{}, apierr.InvalidArgument("size_bytes", fmt.Sprintf("%d is outside 1 to %d bytes, the limit for a %s", req.Size, max, t.Name))
	}
	sum := strings.ToLower(req.SHA256)
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		return store.Attachment{}, apierr.InvalidArgument("sha256", "must be 64 hex digits")
	}
	if err := checkFile(req); err != nil {
		return store.Attachment{}, err
	}
	if err := s.canStore(ctx, owner, req.Size); err != nil {
		return store.Attachment{}, err
	}
	quota := lim.QuotaBytes(owner.Tier)
	a := store.Attachment{
		ID: uuid.Must(uuid.NewV7()).String(), UserID: owner.UserID, Filename: req.Filename, MimeType: t.MIME,
		SizeBytes: req.Size, SHA256: sum, Status: store.AttachmentUploading, CreatedAt: s.Now(),
		// Past this, an upload never completed is failed by Sweep and its
		// quota freed: the URL's life plus an hour to call CompleteUpload.
		ExpiresAt: s.Now().Add(s.URLExpiry + time.Hour),
		Purpose:   req.Purpose,
	}
	if req.ExpiresAfter > 0 {
		a.DeleteAt = a.CreatedAt.Add(req.ExpiresAfter)
	}
	if err := s.Store.Create(ctx, a, quota); errors.Is(err, store.ErrQuotaExceeded) {
		return store.Attachment{}, apierr.ResourceExhausted(fmt.Sprintf(
			"storing %d more bytes would pass your attachment quota of %d bytes (the %s tier's); delete attachments to make room", req.Size, quota, tierName(owner.Tier)), 0)
	} else if err != nil {
		return store.Attachment{}, s.internal(ctx, "creating an attachment", err)
	}
	return a, nil
}

// canStore refuses an upload the owner's channel or the server's disk cannot
// take, before anything is written.
func (s *Service) canStore(ctx context.Context, owner Owner, size int64) error {
	if owner.APIKey && s.Balance != nil {
		bal, err := s.Balance(ctx, owner.UserID)
		if err != nil {
			return s.internal(ctx, "reading a balance for an upload", err)
		}
		if bal <= 0 {
			return apierr.FailedPrecondition("storing attachments through an API key needs a positive balance; top up to upload")
		}
	}
	if s.FreeBytes != nil && s.MinFreeBytes > 0 {
		free, err := s.FreeBytes()
		if err != nil {
			return s.internal(ctx, "reading the free space for an upload", err)
		}
		if free-size < s.MinFreeBytes {
			s.Logger.WarnContext(ctx, "upload refused: the attachment storage is below its free-space watermark", "free_bytes", free, "size_bytes", size, "min_free_bytes", s.MinFreeBytes)
			return apierr.ResourceExhausted("the server is low on storage space and takes no uploads now; try again later", 0)
		}
	}
	return nil
}

func tierName(t store.Tier) string {
	if t == "" {
		return string(store.TierFree)
	}
	return string(t)
}

// Complete checks an upload — its size, its SHA-256, its real type and
// content — and marks it ready with its prepared form stored, or failed
// with the reason (its bytes deleted). An attachment no longer uploading
// is returned as it is.
func (s *Service) Complete(ctx context.Context, userID, id string) (store.Attachment, error) {
	a, err := s.Get(ctx, userID, id)
	if err != nil || a.Status != store.AttachmentUploading {
		return a, err
	}
	obj, err := s.Blobs.Get(ctx, blobKey(a))
	if errors.Is(err, blob.ErrNotFound) {
		return a, apierr.FailedPrecondition("nothing has been uploaded yet: PUT the bytes to the upload URL first")
	} else if err != nil {
		return a, s.internal(ctx, "opening an upload", err)
	}
	res, prepared, err := s.check(ctx, a, obj)
	obj.Close()
	if err != nil {
		var r *Refusal
		switch {
		case errors.Is(err, ErrBusy):
			return a, Busy()
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return a, err
		case !errors.As(err, &r):
			return a, s.internal(ctx, "checking an upload", err)
		}
		res = store.AttachmentResult{Status: store.AttachmentFailed, FailureReason: r.Reason}
	} else if err := s.Blobs.Put(ctx, preparedKey(a), bytes.NewReader(prepared), int64(len(prepared))); err != nil {
		return a, s.internal(ctx, "storing a prepared attachment", err)
	}
	done, err := s.Store.SetStatus(ctx, a.ID, res)
	if errors.Is(err, store.ErrConflict) { // completed meanwhile by another call
		return s.Get(ctx, userID, id)
	} else if err != nil {
		return a, s.internal(ctx, "completing an attachment", err)
	}
	if done.Status == store.AttachmentFailed {
		s.deleteBlobs(ctx, done)
	}
	return done, nil
}

// check verifies an upload against its declaration and prepares it (in
// the owner's share of the preparation pool).
func (s *Service) check(ctx context.Context, a store.Attachment, obj blob.Object) (store.AttachmentResult, []byte, error) {
	if obj.Size() != a.SizeBytes {
		return store.AttachmentResult{}, nil, refuse("the upload is %d bytes, not the declared %d", obj.Size(), a.SizeBytes)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(obj, 0, obj.Size())); err != nil {
		return store.AttachmentResult{}, nil, err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != a.SHA256 {
		return store.AttachmentResult{}, nil, refuse("the upload's SHA-256 is %s, not the declared %s", sum, a.SHA256)
	}
	declared, _ := Lookup(a.MimeType)
	t, err := Detect(obj, obj.Size(), declared, s.Checker.Limits())
	if err != nil {
		return store.AttachmentResult{}, nil, err
	}
	res := store.AttachmentResult{Status: store.AttachmentReady, MimeType: t.MIME}
	if t.Kind == KindImage {
		data := make([]byte, obj.Size()) // at most ImageBytes: checked at CreateUpload
		if _, err := obj.ReadAt(data, 0); err != nil && err != io.EOF {
			return res, nil, err
		}
		img, err := s.Checker.ImageFor(ctx, a.UserID, data, t)
		if err != nil {
			return res, nil, err
		}
		res.Width, res.Height = img.Width, img.Height
		return res, img.Data, nil
	}
	text, err := s.Checker.TextFor(ctx, a.UserID, obj, obj.Size(), t)
	return res, []byte(text), err
}

// Get returns the caller's attachment, or not_found.
func (s *Service) Get(ctx context.Context, userID, id string) (store.Attachment, error) {
	if s == nil {
		return store.Attachment{}, unavailable()
	}
	if id == "" {
		return store.Attachment{}, apierr.InvalidArgument("attachment_id", "is required")
	}
	if _, err := uuid.Parse(id); err != nil {
		return store.Attachment{}, apierr.NotFound("attachment")
	}
	a, err := s.Store.Get(ctx, userID, id)
	if errors.Is(err, store.ErrNotFound) {
		return a, apierr.NotFound("attachment")
	} else if err != nil {
		return a, s.internal(ctx, "reading an attachment", err)
	}
	return a, nil
}

// DownloadURL returns a short-lived URL of a ready attachment's original
// bytes ("" for one not ready).
func (s *Service) DownloadURL(ctx context.Context, a store.Attachment) (string, time.Time, error) {
	if a.Status != store.AttachmentReady {
		return "", time.Time{}, nil
	}
	u, exp, err := s.Blobs.SignedDownloadURL(ctx, blobKey(a), a.MimeType, s.URLExpiry)
	if err != nil {
		return "", time.Time{}, s.internal(ctx, "signing a download URL", err)
	}
	return u, exp, nil
}

// Delete removes the caller's attachment: its bytes, its prepared form and
// its record.
func (s *Service) Delete(ctx context.Context, userID, id string) error {
	a, err := s.Get(ctx, userID, id)
	if err != nil {
		return err
	}
	if err := s.Store.Delete(ctx, userID, a.ID); errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("attachment")
	} else if err != nil {
		return s.internal(ctx, "deleting an attachment", err)
	}
	s.deleteBlobs(ctx, a)
	return nil
}

// deleteBlobs deletes an attachment's bytes and prepared form, reporting
// whether both are gone.
func (s *Service) deleteBlobs(ctx context.Context, a store.Attachment) bool {
	ok := true
	for _, key := range []string{blobKey(a), preparedKey(a)} {
		if err := s.Blobs.Delete(ctx, key); err != nil {
			s.Logger.WarnContext(ctx, "deleting an attachment's blob", "key", key, "err", err)
			ok = false
		}
	}
	return ok
}

// Ref is what a message's reference to an attachment costs, known before
// its prepared form is loaded.
type Ref struct {
	store.Attachment
	// Kind is how it reaches the model.
	Kind Kind
	// PreparedBytes is the size of its prepared form (the fitted image, the
	// document's text): what loading it reads.
	PreparedBytes int64
}

// Ref checks a reference to the caller's attachment from its record and the
// size of its prepared form, without reading it: another user's or a
// deleted attachment is not_found, one not ready failed_precondition.
func (s *Service) Ref(ctx context.Context, userID, id string) (Ref, error) {
	a, err := s.Get(ctx, userID, id)
	if err != nil {
		return Ref{}, err
	}
	if a.Status != store.AttachmentReady {
		return Ref{}, apierr.FailedPrecondition(fmt.Sprintf("attachment %s is %s, not ready", a.ID, a.Status))
	}
	obj, err := s.Blobs.Get(ctx, preparedKey(a))
	if errors.Is(err, blob.ErrNotFound) {
		return Ref{}, apierr.NotFound("attachment")
	} else if err != nil {
		return Ref{}, s.internal(ctx, "opening a prepared attachment", err)
	}
	size := obj.Size()
	obj.Close()
	kind := KindDocument
	if strings.HasPrefix(a.MimeType, "image/") {
		kind = KindImage
	}
	return Ref{Attachment: a, Kind: kind, PreparedBytes: size}, nil
}

// Part returns what the model receives of the caller's ready attachment:
// the fitted image or the document's text. Another user's attachment, or a
// deleted one, is not_found; one not ready is failed_precondition.
func (s *Service) Part(ctx context.Context, userID, id string) (llm.Part, error) {
	a, err := s.Get(ctx, userID, id)
	if err != nil {
		return llm.Part{}, err
	}
	if a.Status != store.AttachmentReady {
		return llm.Part{}, apierr.FailedPrecondition(fmt.Sprintf("attachment %s is %s, not ready", a.ID, a.Status))
	}
	obj, err := s.Blobs.Get(ctx, preparedKey(a))
	if errors.Is(err, blob.ErrNotFound) {
		return llm.Part{}, apierr.NotFound("attachment")
	} else if err != nil {
		return llm.Part{}, s.internal(ctx, "opening a prepared attachment", err)
	}
	defer obj.Close()
	data, err := io.ReadAll(io.LimitReader(obj, max(s.Checker.Limits().ImageBytes, int64(s.Checker.Limits().TextBytes)+1024)))
	if err != nil {
		return llm.Part{}, s.internal(ctx, "reading a prepared attachment", err)
	}
	if strings.HasPrefix(a.MimeType, "image/") {
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return llm.Part{}, s.internal(ctx, "reading a prepared image", err)
		}
		return llm.Part{Image: &llm.Image{Data: data, MimeType: "image/" + format, Width: cfg.Width, Height: cfg.Height}}, nil
	}
	return llm.Part{Document: &llm.Document{Filename: a.Filename, MimeType: a.MimeType, Text: string(data)}}, nil
}

// Inline returns the Checker for parts given inline; on a server without
// attachments, one with the default limits.
func (s *Service) Inline() *Checker {
	if s == nil || s.Checker == nil {
		return NewChecker(Limits{})
	}
	return s.Checker
}

func (s *Service) internal(ctx context.Context, what string, err error) error {
	s.Logger.ErrorContext(ctx, what, "err", err)
	return apierr.Store(err)
}

func unavailable() error {
	return apierr.FailedPrecondition("attachments are not available on this server")
}
