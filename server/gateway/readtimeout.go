package gateway

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// BodyReadTimeout gives every request body d to arrive in full, timed from
// the end of its headers: a client that trickles a body (or stops sending
// one) has its read fail at the deadline instead of holding a connection
// and a handler for ever. The deadline is lifted once the body has been
// read, so a long response stream — an SSE or gRPC stream of deltas — runs
// as long as it needs. Requests without a body get no deadline. d <= 0
// turns it off.
func BodyReadTimeout(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if d <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
				next.ServeHTTP(w, r) // the connection cannot take deadlines
				return
			}
			body := &deadlineBody{ReadCloser: r.Body, rc: rc}
			r.Body = body
			defer body.done()
			next.ServeHTTP(w, r)
		})
	}
}

// deadlineBody lifts its request's read deadline when the body has been
// read to its end or closed by the handler.
type deadlineBody struct {
	io.ReadCloser
	rc *http.ResponseController

	mu      sync.Mutex
	settled bool // the deadline is lifted, or the handler has returned
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.lift()
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.lift()
	return b.ReadCloser.Close()
}

// lift clears the deadline, unless the handler has returned: the
// connection may be serving the next request by then, under deadlines of
// the server's own.
func (b *deadlineBody) lift() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.settled {
		b.settled = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

func (b *deadlineBody) done() {
	b.mu.Lock()
	b.settled = true
	b.mu.Unlock()
}
