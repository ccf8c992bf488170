package gateway

import (
	"net/http"
	"slices"
	"time"

	connectcors "connectrpc.com/cors"
	"github.com/rs/cors"
)

// CORS lets the configured browser origins call every surface with
// credentials (the session cookie), using the methods and headers the
// Connect, gRPC-Web and SSE protocols need. With no origins it adds no CORS
// headers at all: only same-origin pages (the embedded web app) can read a
// response. "*" among the origins lets any page call without credentials
// (API keys in headers), never with them: a wildcard with
// Allow-Credentials would hand every site its visitors' sessions.
func CORS(origins []string) func(http.Handler) http.Handler {
	if len(origins) == 0 {
		return func(h http.Handler) http.Handler { return h }
	}
	c := cors.New(cors.Options{
		AllowedOrigins:   origins,
		AllowCredentials: !slices.Contains(origins, "*"),
		AllowedMethods:   connectcors.AllowedMethods(),
		AllowedHeaders:   append(connectcors.AllowedHeaders(), "Authorization", "X-Api-Key", "Anthropic-Version", "Anthropic-Beta", "Last-Event-ID", RequestIDHeader),
		ExposedHeaders:   append(connectcors.ExposedHeaders(), RequestIDHeader, "Retry-After"),
		MaxAge:           int(2 * time.Hour / time.Second),
	})
	return c.Handler
}
