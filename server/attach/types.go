// Package attach checks and prepares what users attach to messages: the
// real type of a file from its bytes (never the declared one), images
// bounded, decoded and resized to fit 1024×1024, documents reduced to text
// with bounded decompression. Uploaded attachments (Service) and inline
// parts of API requests go through the same Checker.
package attach

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Kind is what the model receives of a file: an image or a document's text.
type Kind uint8

// The kinds of attachment.
const (
	KindImage Kind = iota + 1
	KindDocument
)

// Type is one accepted file type.
type Type struct {
	// MIME is the canonical media type.
	MIME string
	// Kind says how it reaches the model.
	Kind Kind
	// Name is how people call it, for messages.
	Name string
}

// The MIME types of Office Open XML documents.
const (
	DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
)

// Types are the accepted file types, images first.
var Types = []Type{
	{"image/jpeg", KindImage, "JPEG image"},
	{"image/png", KindImage, "PNG image"},
	{"image/webp", KindImage, "WebP image"},
	{"image/gif", KindImage, "GIF image"},
	{"application/pdf", KindDocument, "PDF document"},
	{DOCX, KindDocument, "DOCX document"},
	{PPTX, KindDocument, "PPTX presentation"},
	{"text/plain", KindDocument, "plain text"},
	{"text/markdown", KindDocument, "Markdown text"},
	{"text/csv", KindDocument, "CSV text"},
}

// Lookup returns the accepted type a declared MIME type names; parameters
// (charset) and case are ignored, and image/jpg is taken as image/jpeg.
func Lookup(declared string) (Type, bool) {
	m, _, err := mime.ParseMediaType(declared)
	if err != nil {
		return Type{}, false
	}
	if m == "image/jpg" {
		m = "image/jpeg"
	}
	for _, t := range Types {
		if t.MIME == m {
			return t, true
		}
	}
	return Type{}, false
}

// accepted lists the accepted MIME types for messages.
func accepted() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = t.MIME
	}
	return strings.Join(names, ", ")
}

// Refusal is why a file is not accepted, in words for its owner.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

func refuse(format string, args ...any) error { return &Refusal{Reason: fmt.Sprintf(format, args...)} }

// isText says whether a type is one of the plain-text documents, which have
// no magic bytes of their own.
func (t Type) isText() bool { return strings.HasPrefix(t.MIME, "text/") }

// Detect finds a file's real type from its content: magic bytes for images
// and PDF, the archive's parts for DOCX and PPTX, valid UTF-8 without NUL
// bytes for text (whose flavour, plain, Markdown or CSV, is taken from
// declared). It refuses a type that is not accepted, naming it, and a
// content that contradicts declared.
func Detect(r io.ReaderAt, size int64, declared Type, limits Limits) (Type, error) {
	head := make([]byte, 512)
	n, err := r.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return Type{}, err
	}
	head = head[:n]
	var got Type
	switch {
	case n == 0:
		return Type{}, refuse("the file is empty")
	case bytes.HasPrefix(head, []byte("\xFF\xD8\xFF")):
		got, _ = Lookup("image/jpeg")
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		got, _ = Lookup("image/png")
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		got, _ = Lookup("image/gif")
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WEBP")):
		got, _ = Lookup("image/webp")
	case bytes.HasPrefix(head, []byte("%PDF-")):
		got, _ = Lookup("application/pdf")
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		m, err := officeType(r, size, limits)
		if err != nil {
			return Type{}, err
		}
		got, _ = Lookup(m)
	case looksLikeText(head, size > int64(n)):
		if !declared.isText() {
			return Type{}, refuse("the content is text, not a %s (%s) as declared", declared.Name, declared.MIME)
		}
		return declared, nil
	default:
		sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(head))
		return Type{}, refuse("the content is %s, which is not accepted; accepted types: %s", sniffed, accepted())
	}
	if got.MIME != declared.MIME {
		return Type{}, refuse("the content is a %s (%s), not a %s (%s) as declared", got.Name, got.MIME, declared.Name, declared.MIME)
	}
	return got, nil
}

// looksLikeText says whether head is UTF-8 text without NUL bytes; when
// more follows, a rune cut at the end of head is allowed.
func looksLikeText(head []byte, more bool) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	if more {
		for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
	}
	return utf8.Valid(head)
}
