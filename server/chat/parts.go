package chat

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif" // register decoders for DecodeConfig
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"unicode/utf8"

	_ "golang.org/x/image/webp"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/worker"
)

// MaxInlineImageBytes bounds an image sent inline in a request.
const MaxInlineImageBytes = 20 << 20

// MaxImagePixels bounds an image's area, read from its header before any
// decoding, so a small file claiming huge dimensions is refused undecoded.
const MaxImagePixels = 50_000_000

// InlineImage checks an image sent inline and reads its size from its
// header. field names it in errors.
func InlineImage(field string, data []byte, declared string) (*worker.Image, error) {
	if len(data) == 0 {
		return nil, apierr.InvalidArgument(field+".data", "is empty")
	}
	if len(data) > MaxInlineImageBytes {
		return nil, apierr.InvalidArgument(field+".data", fmt.Sprintf("is %d bytes, over the limit of %d", len(data), MaxInlineImageBytes))
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, apierr.InvalidArgument(field+".data", "is not a JPEG, PNG, GIF or WebP image")
	}
	mime := "image/" + format
	if declared != "" && declared != mime && !(declared == "image/jpg" && format == "jpeg") {
		return nil, apierr.InvalidArgument(field+".mime_type", fmt.Sprintf("says %s but the data is %s", declared, mime))
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return nil, apierr.InvalidArgument(field+".data", fmt.Sprintf("is %d×%d pixels, over the limit of %d pixels", cfg.Width, cfg.Height, MaxImagePixels))
	}
	return &worker.Image{Data: data, MimeType: mime, Width: cfg.Width, Height: cfg.Height}, nil
}

// InlineDocument checks a document sent inline and reduces it to text.
// Plain text, Markdown and CSV are taken as they are.
func InlineDocument(field string, data []byte, declared, filename string) (*worker.Document, error) {
	if len(data) == 0 {
		return nil, apierr.InvalidArgument(field+".data", "is empty")
	}
	sniffed := http.DetectContentType(data)
	switch declared {
	case "text/plain", "text/markdown", "text/csv", "":
		if !utf8.Valid(data) || !bytes.HasPrefix([]byte(sniffed), []byte("text/")) {
			return nil, apierr.InvalidArgument(field+".data", "is not UTF-8 text")
		}
		return &worker.Document{Filename: filename, MimeType: declared, Text: string(data)}, nil
	}
	return nil, apierr.InvalidArgument(field+".mime_type", fmt.Sprintf("%q is not accepted inline; use text/plain, text/markdown or text/csv", declared))
}
