// Package blob stores attachment bytes. Clients upload and download them
// directly, by signed URL, never through an API call: the embedded Local
// store serves its own signed URLs under /blob/ on the gateway; the S3 store
// (scale mode) hands out presigned URLs behind the same interface.
package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// MaxURLExpiry is the longest a signed URL may stay valid.
const MaxURLExpiry = 15 * time.Minute

// ErrNotFound reports a key with no blob.
var ErrNotFound = errors.New("blob: not found")

// Blobs stores blobs by key. Keys are slash-separated paths of letters,
// digits, '-', '_' and '.', made by the server (never by a client).
type Blobs interface {
	// SignedUploadURL returns a URL that accepts one PUT of exactly size
	// bytes of type mime at key, until expiry (at most MaxURLExpiry) has
	// passed.
	SignedUploadURL(ctx context.Context, key string, size int64, mime string, expiry time.Duration) (Upload, error)
	// SignedDownloadURL returns a URL that GETs key's bytes, served as mime,
	// until expiry (at most MaxURLExpiry) has passed.
	SignedDownloadURL(ctx context.Context, key, mime string, expiry time.Duration) (string, time.Time, error)
	// Put stores size bytes from r at key (the server's own writes, such as
	// an attachment's processed form).
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens key's blob, or returns ErrNotFound.
	Get(ctx context.Context, key string) (Object, error)
	// Delete removes key's blob; a missing blob is not an error.
	Delete(ctx context.Context, key string) error
}

// Upload is where and how a client sends a blob's bytes.
type Upload struct {
	// URL takes the bytes; it may be relative to the gateway's base URL.
	URL string
	// Method is the HTTP method to use: PUT.
	Method string
	// Headers must be sent exactly as given, besides a Content-Length of
	// the declared size.
	Headers map[string]string
	// ExpiresAt is when URL stops working.
	ExpiresAt time.Time
}

// Object is a stored blob opened for reading, in order or at offsets (a
// PDF's cross-reference table and a zip's directory are at the end).
type Object interface {
	io.Reader
	io.ReaderAt
	io.Closer
	// Size is the blob's length in bytes.
	Size() int64
}
