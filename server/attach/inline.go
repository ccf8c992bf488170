package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/llm"
)

// InlineImage checks an image given inline in a request (API channel) as
// an upload is checked, and prepares it for the model. field names it in
// errors (e.g. "messages[0].parts[1].image"). It runs in the shared pool
// as an anonymous user: a request path should use PrepareImage, after the
// request is admitted.
func (c *Checker) InlineImage(field string, data []byte, declared string) (*llm.Image, error) {
	return c.PrepareImage(context.Background(), "", field, data, declared)
}

// InlineDocument checks a document given inline in a request and reduces
// it to text, as InlineImage does (see PrepareDocument).
func (c *Checker) InlineDocument(field string, data []byte, declared, filename string) (*llm.Document, error) {
	return c.PrepareDocument(context.Background(), "", field, data, declared, filename)
}

// PrepareImage is InlineImage for user's request: the decode waits for a
// slot within user's share of the pool, or until ctx ends.
func (c *Checker) PrepareImage(ctx context.Context, user, field string, data []byte, declared string) (*llm.Image, error) {
	t, err := c.inline(field, data, declared, KindImage)
	if err != nil {
		return nil, err
	}
	img, err := c.ImageFor(ctx, user, data, t)
	if err != nil {
		return nil, inlineError(field, err)
	}
	return &llm.Image{Data: img.Data, MimeType: img.MIME, Width: img.FitWidth, Height: img.FitHeight}, nil
}

// PrepareDocument is InlineDocument for user's request (see PrepareImage).
func (c *Checker) PrepareDocument(ctx context.Context, user, field string, data []byte, declared, filename string) (*llm.Document, error) {
	if err := c.CheckInline(field, len(data), declared, KindDocument, filename); err != nil {
		return nil, err
	}
	t, err := c.inline(field, data, declared, KindDocument)
	if err != nil {
		return nil, err
	}
	text, err := c.TextFor(ctx, user, bytes.NewReader(data), int64(len(data)), t)
	if err != nil {
		return nil, inlineError(field, err)
	}
	return &llm.Document{Filename: filename, MimeType: t.MIME, Text: text}, nil
}

// CheckInline is what can be checked of an inline part without reading its
// bytes: a size, a declared type of the right kind, a filename. It is cheap
// enough to run before a request is admitted.
func (c *Checker) CheckInline(field string, size int, declared string, kind Kind, filename string) error {
	if len(filename) > 255 {
		return apierr.InvalidArgument(field+".filename", "is over 255 bytes")
	}
	if size == 0 {
		return apierr.InvalidArgument(field+".data", "is empty")
	}
	t, ok := Lookup(declared)
	if !ok || t.Kind != kind {
		want := "an image type: image/jpeg, image/png, image/webp or image/gif"
		if kind == KindDocument {
			want = "a document type: application/pdf, DOCX, PPTX, text/plain, text/markdown or text/csv"
		}
		return apierr.InvalidArgument(field+".mime_type", fmt.Sprintf("%q is not accepted here; use %s", declared, want))
	}
	if max := c.limits.MaxBytes(t); int64(size) > max {
		return apierr.InvalidArgument(field+".data", fmt.Sprintf("is %d bytes, over the limit of %d", size, max))
	}
	return nil
}

// MaxTextBytes bounds a document's prepared text: the text budget and the
// marker where it is cut.
func (c *Checker) MaxTextBytes() int { return c.limits.TextBytes + 128 }

func (c *Checker) inline(field string, data []byte, declared string, kind Kind) (Type, error) {
	if err := c.CheckInline(field, len(data), declared, kind, ""); err != nil {
		return Type{}, err
	}
	t, _ := Lookup(declared)
	if _, err := Detect(bytes.NewReader(data), int64(len(data)), t, c.limits); err != nil {
		return Type{}, inlineError(field, err)
	}
	return t, nil
}

func inlineError(field string, err error) error {
	var r *Refusal
	switch {
	case errors.As(err, &r):
		return apierr.InvalidArgument(field+".data", r.Reason)
	case errors.Is(err, ErrBusy):
		return Busy()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return apierr.Internal()
}

// Busy is the error of a user whose share of the preparation pool is full.
func Busy() error {
	return apierr.ResourceExhausted("too many of your attachments are being prepared at once; retry when they are done", time.Second)
}
