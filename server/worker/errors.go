package worker

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Errors an Engine returns from Generate when the backend behind it refused or
// failed before generation started; the scheduler reads them to decide between
// giving up, trying another worker, and ejecting this one.
var (
	// ErrOverloaded: the engine or its upstream is full (HTTP 429 upstream, or a
	// worker's resource_exhausted); another worker may take the request, and this
	// one is not at fault.
	ErrOverloaded = errors.New("worker: overloaded")
	// ErrUpstreamTimeout: the upstream sent nothing within its timeout.
	ErrUpstreamTimeout = errors.New("worker: upstream timed out")
)

// UpstreamError is an OpenAI-compatible upstream's refusal: its HTTP status and
// the message it gave. It matches ErrInvalidRequest for 400, 413 and 422,
// ErrUnknownModel for 404 and ErrOverloaded for 429; other statuses (401, 403,
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
	case ErrInvalidRequest:
		return e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge ||
			e.Status == http.StatusUnprocessableEntity
	case ErrUnknownModel:
		return e.Status == http.StatusNotFound
	case ErrOverloaded:
		return e.Status == http.StatusTooManyRequests
	case ErrUpstreamTimeout:
		return e.Status == http.StatusRequestTimeout || e.Status == http.StatusGatewayTimeout
	}
	return false
}

// CallerFault reports whether err, returned by Generate before generation began,
// is the request's fault (retrying it anywhere would fail the same way).
func CallerFault(err error) bool {
	return errors.Is(err, ErrInvalidRequest)
}
