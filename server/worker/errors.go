package worker

import (
	"fmt"
	"net/http"
	"time"

	"github.com/parleyhq/parley/server/llm"
)

// UpstreamError is an OpenAI-compatible upstream's refusal: its HTTP status and
// the message it gave. It matches llm.ErrInvalidRequest for 400, 413 and 422,
// llm.ErrUnknownModel for 404 and llm.ErrOverloaded for 429; other statuses (401, 403,
// 5xx) are the worker's fault.
type UpstreamError struct {
	Status  int
	Message string
	// RetryAfter is the upstream's Retry-After, if it sent one.
	RetryAfter time.Duration
}

func (e *UpstreamError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("worker: upstream status %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("worker: upstream status %d: %s", e.Status, e.Message)
}

// Is makes an UpstreamError match the sentinel its status stands for.
func (e *UpstreamError) Is(target error) bool {
	switch target {
	case llm.ErrInvalidRequest:
		return e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge ||
			e.Status == http.StatusUnprocessableEntity
	case llm.ErrUnknownModel:
		return e.Status == http.StatusNotFound
	case llm.ErrOverloaded:
		return e.Status == http.StatusTooManyRequests
	case llm.ErrUpstreamTimeout:
		return e.Status == http.StatusRequestTimeout || e.Status == http.StatusGatewayTimeout
	}
	return false
}
