package respcache

import (
	"context"
	"net/http"
	"sync/atomic"
)

// The response cache's headers (fixed public names: docs/architecture.md,
// docs/scaling.md#response-cache).
const (
	// RequestHeader opts a request in (on) or out (off) of the cache.
	RequestHeader = "Parley-Cache"
	// StatusHeader answers hit or miss on a request the cache considered.
	StatusHeader = "Parley-Cache-Status"
)

// Ticket is one HTTP request's business with the cache: what the caller
// asked in RequestHeader, and the status the core decided, written into
// StatusHeader before the response's first byte.
type Ticket struct {
	// Asked is RequestHeader's value as sent ("" when absent).
	Asked  string
	status atomic.Pointer[string]
}

// Hit and MissStatus are StatusHeader's values.
const (
	StatusHit  = "hit"
	StatusMiss = "miss"
)

// SetStatus records the cache's answer for the response header; the core
// calls it before it emits anything.
func (t *Ticket) SetStatus(s string) {
	if t != nil {
		t.status.Store(&s)
	}
}

// Status returns the recorded status, "" when none.
func (t *Ticket) Status() string {
	if t == nil {
		return ""
	}
	if s := t.status.Load(); s != nil {
		return *s
	}
	return ""
}

type ticketKey struct{}

// FromContext returns the request's ticket; nil outside Headers.
func FromContext(ctx context.Context) *Ticket {
	t, _ := ctx.Value(ticketKey{}).(*Ticket)
	return t
}

// WithTicket returns ctx carrying t (as Headers does; for tests and
// surfaces that are not HTTP).
func WithTicket(ctx context.Context, t *Ticket) context.Context {
	return context.WithValue(ctx, ticketKey{}, t)
}

// Headers is the HTTP middleware of the cache's headers: it gives every POST
// (every generation is one, on every protocol: Connect, gRPC, gRPC-Web, SSE,
// OpenAI) a Ticket, and writes the ticket's status into StatusHeader when the
// response's header goes out.
func Headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		t := &Ticket{Asked: r.Header.Get(RequestHeader)}
		next.ServeHTTP(&statusWriter{ResponseWriter: w, t: t}, r.WithContext(WithTicket(r.Context(), t)))
	})
}

// statusWriter stamps StatusHeader on the first write of the header.
type statusWriter struct {
	http.ResponseWriter
	t       *Ticket
	stamped bool
}

func (w *statusWriter) stamp() {
	if w.stamped {
		return
	}
	w.stamped = true
	if s := w.t.Status(); s != "" {
		w.ResponseWriter.Header().Set(StatusHeader, s)
	}
}

// WriteHeader implements http.ResponseWriter.
func (w *statusWriter) WriteHeader(code int) {
	w.stamp()
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *statusWriter) Write(b []byte) (int, error) {
	w.stamp()
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher (streams flush each event).
func (w *statusWriter) Flush() {
	w.stamp()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
