package api

import (
	"errors"
	"mime"
	"net/http"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
)

// The plain-HTTP download routes (a conversation's export, an
// organisation's usage as CSV) answer errors as Connect's JSON does and
// files as attachments that are never cached or sniffed.

// downloadError is err as the *connect.Error a download route writes.
func downloadError(err error) *connect.Error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		ce = apierr.Internal()
	}
	return ce
}

func writeDownloadError(w http.ResponseWriter, r *http.Request, ce *connect.Error) {
	_ = connect.NewErrorWriter().Write(w, r, ce)
}

// downloadHeaders marks the response as a file named filename.
func downloadHeaders(h http.Header, contentType, filename string) {
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filename}))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}
