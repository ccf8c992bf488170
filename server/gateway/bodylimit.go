package gateway

import (
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
)

// BodyLimit refuses request bodies over max bytes. A declared Content-Length
// over the limit is refused before a byte of the body is read, in the
// caller's protocol (a Connect, gRPC or gRPC-Web error for RPCs, 413 with a
// JSON error otherwise); a chunked body is cut off at the limit.
func BodyLimit(max int64) func(http.Handler) http.Handler {
	errorWriter := connect.NewErrorWriter()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > max {
				msg := fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", r.ContentLength, max)
				// The client may still be sending: close the connection rather than drain it.
				w.Header().Set("Connection", "close")
				if errorWriter.IsSupported(r) {
					_ = errorWriter.Write(w, r, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s", msg)))
					return
				}
				apierr.WriteJSON(w, http.StatusRequestEntityTooLarge, msg)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, max)
			next.ServeHTTP(w, r)
		})
	}
}
