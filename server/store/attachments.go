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
}
