package store

import (
	"context"
	"time"
)

// AttachmentStatus is where an attachment is in its upload lifecycle.
type AttachmentStatus string

// The attachment statuses: uploading, then ready or failed.
const (
	// AttachmentUploading means the upload URL was issued and the blob is not
	// verified yet.
	AttachmentUploading AttachmentStatus = "uploading"
	// AttachmentReady means the blob was verified and may be used in messages.
	AttachmentReady AttachmentStatus = "ready"
	// AttachmentFailed means verification failed; FailureReason says why.
	AttachmentFailed AttachmentStatus = "failed"
)

// Attachment is the metadata of an uploaded image or document; the bytes live
// in the Blobs store.
type Attachment struct {
	// ID is the caller-made UUIDv7.
	ID string
	// UserID is the owner.
	UserID string
	// Filename is the name the client gave.
	Filename string
	// MimeType is the declared type, replaced by the detected one when the
	// upload completes.
	MimeType string
	// SizeBytes is the declared size; it counts against the user's quota.
	SizeBytes int64
	// SHA256 is the declared hex digest.
	SHA256 string
	// Status is the lifecycle state.
	Status AttachmentStatus
	// FailureReason says why a failed attachment failed.
	FailureReason string
	// Width is an image's width in pixels, 0 otherwise.
	Width int
	// Height is an image's height in pixels, 0 otherwise.
	Height int
	// CreatedAt is when the upload was created.
	CreatedAt time.Time
	// ExpiresAt is when the attachment may be garbage-collected.
	ExpiresAt time.Time
	// Purpose, when set, makes the attachment a file (FileService,
	// /v1/files): it is listed as one, and it is kept until its owner
	// deletes it or DeleteAt passes, whether a message references it or
	// not. Empty for an attachment uploaded for a message.
	Purpose string
	// DeleteAt, when set, is when a file is deleted, bytes and record (its
	// expires_after); zero: kept until its owner deletes it.
	DeleteAt time.Time
}

// FileQuery selects a page of a user's files (attachments with a purpose),
// ordered by ID, which follows creation time (UUIDv7).
type FileQuery struct {
	// Purpose, when set, keeps only the files of that purpose.
	Purpose string
	// After, when set, starts the page after the file of that ID.
	After string
	// Ascending orders oldest first; otherwise newest first.
	Ascending bool
	// Limit is the most files returned (positive).
	Limit int
}

// AttachmentResult is the outcome of verifying an upload.
type AttachmentResult struct {
	// Status is AttachmentReady or AttachmentFailed.
	Status AttachmentStatus
	// FailureReason says why, for AttachmentFailed.
	FailureReason string
	// Width and Height are an image's dimensions.
	Width, Height int
	// MimeType, if not empty, replaces the declared type with the detected
	// one.
	MimeType string
}

// UploadExpiredReason is the failure reason of uploads never completed.
const UploadExpiredReason = "the upload was not completed in time"

// Attachments stores attachment metadata. Methods taking a user ID report
// another user's attachment as ErrNotFound.
type Attachments interface {
	// Create stores a (normally with status uploading) if the user's
	// attachments that are not failed, plus a.SizeBytes, stay within
	// quotaBytes; otherwise it returns ErrQuotaExceeded. The check and the
	// insert are atomic. It returns ErrConflict if the ID exists.
	Create(ctx context.Context, a Attachment, quotaBytes int64) error
	// Get returns the user's attachment, or ErrNotFound.
	Get(ctx context.Context, userID, id string) (Attachment, error)
	// SetStatus completes an upload: it moves an uploading attachment to
	// ready or failed and returns the result. It returns ErrNotFound for an
	// unknown ID and ErrConflict if the attachment is no longer uploading.
	SetStatus(ctx context.Context, id string, r AttachmentResult) (Attachment, error)
	// Delete removes the user's attachment, or returns ErrNotFound.
	Delete(ctx context.Context, userID, id string) error
	// ExpireUploads marks every attachment still uploading whose ExpiresAt
	// has passed as failed ("the upload was not completed in time"), which
	// frees its quota, and returns them so their bytes can be deleted.
	ExpireUploads(ctx context.Context, now time.Time) ([]Attachment, error)
	// Reference marks the user's attachments ids as referenced by a message
	// (call it before the message is saved): a referenced attachment is
	// never claimed by ClaimUnreferenced. It returns ErrNotFound, marking
	// nothing, if any of them is unknown, another user's, or claimed for
	// deletion. Marking an attachment again is a no-op.
	Reference(ctx context.Context, userID string, ids []string, at time.Time) error
	// ListFiles returns a page of the user's files (attachments with a
	// purpose), claimed ones left out.
	ListFiles(ctx context.Context, userID string, q FileQuery) ([]Attachment, error)
	// ClaimUnreferenced claims for deletion at most limit attachments that
	// have no purpose (files are kept until deleted or DeleteAt), are ready
	// or failed, were created at or before createdBefore, and were never
	// referenced: from then on they are hidden (Get, Delete and
	// Reference report them as ErrNotFound) and count against no quota. An
	// attachment claimed at or before reclaimBefore (its sweeper died, or
	// could not delete its bytes) is claimed again. Claims are atomic: of
	// several callers at once, each claims different attachments. The
	// caller deletes their bytes, then Purge removes them.
	ClaimUnreferenced(ctx context.Context, now, createdBefore, reclaimBefore time.Time, limit int) ([]Attachment, error)
	// ClaimExpired claims for deletion, as ClaimUnreferenced does, at most
	// limit attachments whose DeleteAt is at or before now, whatever their
	// status and references.
	ClaimExpired(ctx context.Context, now, reclaimBefore time.Time, limit int) ([]Attachment, error)
	// Purge removes a claimed attachment's record; an ID that names none
	// (another sweeper purged it) is not an error.
	Purge(ctx context.Context, id string) error
}
