package apierr

import (
	"encoding/json"
	"net/http"
)

// WriteJSON writes the plain-HTTP error body {"error": {"message": msg,
// "code": status}} with status, for endpoints that are not RPCs (blob
// uploads and downloads, the body limit's refusal).
func WriteJSON(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "code": status}})
}
