package attach

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/worker"
)

// InlineImage checks an image given inline in a request (API channel) as
// an upload is checked, and prepares it for the model. field names it in
// errors (e.g. "messages[0].parts[1].image").
func (c *Checker) InlineImage(field string, data []byte, declared string) (*worker.Image, error) {
	t, err := c.inline(field, data, declared, KindImage)
	if err != nil {
		return nil, err
	}
	img, err := c.Image(data, t)
	if err != nil {
		return nil, inlineError(field, err)
	}
	return &worker.Image{Data: img.Data, MimeType: img.MIME, Width: img.FitWidth, Height: img.FitHeight}, nil
}

// InlineDocument checks a document given inline in a request and reduces
// it to text.
func (c *Checker) InlineDocument(field string, data []byte, declared, filename string) (*worker.Document, error) {
	if len(filename) > 255 {
		return nil, apierr.InvalidArgument(field+".filename", "is over 255 bytes")
	}
	t, err := c.inline(field, data, declared, KindDocument)
	if err != nil {
		return nil, err
	}
	text, err := c.Text(bytes.NewReader(data), int64(len(data)), t)
	if err != nil {
		return nil, inlineError(field, err)
	}
	return &worker.Document{Filename: filename, MimeType: t.MIME, Text: text}, nil
}

func (c *Checker) inline(field string, data []byte, declared string, kind Kind) (Type, error) {
	if len(data) == 0 {
		return Type{}, apierr.InvalidArgument(field+".data", "is empty")
	}
	t, ok := Lookup(declared)
	if !ok || t.Kind != kind {
		want := "an image type: image/jpeg, image/png, image/webp or image/gif"
		if kind == KindDocument {
			want = "a document type: application/pdf, DOCX, PPTX, text/plain, text/markdown or text/csv"
		}
		return Type{}, apierr.InvalidArgument(field+".mime_type", fmt.Sprintf("%q is not accepted here; use %s", declared, want))
	}
	if max := c.limits.MaxBytes(t); int64(len(data)) > max {
		return Type{}, apierr.InvalidArgument(field+".data", fmt.Sprintf("is %d bytes, over the limit of %d", len(data), max))
	}
	if _, err := Detect(bytes.NewReader(data), int64(len(data)), t, c.limits); err != nil {
		return Type{}, inlineError(field, err)
	}
	return t, nil
}

func inlineError(field string, err error) error {
	var r *Refusal
	if errors.As(err, &r) {
		return apierr.InvalidArgument(field+".data", r.Reason)
	}
	return apierr.Internal()
}
