package gateway

import (
	"net/http"
	"time"

	connectcors "connectrpc.com/cors"
	"github.com/rs/cors"
)

// CORS lets the configured browser origins call every surface with
// credentials (the session cookie), using the methods and headers the
// Connect, gRPC-Web and SSE protocols need. With no origins it only serves
// same-origin callers.
func CORS(origins []string) func(http.Handler) http.Handler {
	c := cors.New(cors.Options{
		AllowedOrigins:   origins,
		AllowCredentials: true,
		AllowedMethods:   connectcors.AllowedMethods(),
		AllowedHeaders:   append(connectcors.AllowedHeaders(), "Authorization", "Last-Event-ID", RequestIDHeader),
		ExposedHeaders:   append(connectcors.ExposedHeaders(), RequestIDHeader, "Retry-After"),
		MaxAge:           int(2 * time.Hour / time.Second),
	})
	return c.Handler
}
