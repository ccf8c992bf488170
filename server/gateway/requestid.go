package gateway

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/parleyhq/parley/server/obs"
)

// RequestIDHeader carries a request's id in and out. A client's value is kept
// when it looks sane, so ids can be followed across a proxy.
const RequestIDHeader = "X-Request-Id"

// RequestID gives every request an id, puts it in the context (logs show it
// as request_id) and echoes it in the response headers.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !saneID(id) {
			id = uuid.Must(uuid.NewV7()).String()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(obs.WithRequestID(r.Context(), id)))
	})
}

func saneID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
