package gateway

import (
	"net/http"
	"strings"
)

// Except applies middleware to every request but those whose path starts
// with prefix: e.g. the request body limit, which signed blob uploads
// replace with their own exact length.
func Except(prefix string, middleware func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		wrapped := middleware(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, prefix) {
				next.ServeHTTP(w, r)
				return
			}
			wrapped.ServeHTTP(w, r)
		})
	}
}
