// Package detach lets a long HTTP/1.1 response leave the goroutine and the
// buffers net/http gave its request.
//
// net/http keeps, for every request in progress, the handler's goroutine
// (with however deep a stack it reached), a background goroutine reading
// the connection to notice the client leaving, and the connection's 4 KiB
// reader, 4 KiB writer and 2 KiB chunking buffer. A token stream that waits
// on its inference server for most of its life pays all of that while it
// waits. Go takes the connection from net/http (Hijack) and runs the rest of
// the response on a fresh goroutine: the handler returns, its stack and
// net/http's buffers are freed, and the response is written chunked
// straight to the connection from a pooled buffer. One epoll instance
// watches every detached connection for its client leaving (watch.go).
// When the response has ended and the client's next request begins, the
// connection goes back to the server through the listener
// (Conns.Listener), so keep-alive works as before.
//
// Middleware that acts after its handler returns (request logs, metrics)
// registers that work with Done, which runs it when the response has really
// ended. The server waits for detached responses on shutdown (Conns.Wait).
package detach

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Conns is one server's detached responses: the listener that takes their
// connections back, and what shutdown waits for.
type Conns struct {
	logger *slog.Logger
	base   context.Context // cancelled when the server's grace is over

	ready  chan struct{} // (capacity 1) signalled when returned gains a connection
	closed chan struct{} // the listener is closed: connections are closed, not returned
	close  sync.Once

	idleTimeout time.Duration // how long a connection waits for its next request
	poller      *poller       // watches the connections (nil: a goroutine each)

	mu        sync.Mutex
	returned  []net.Conn             // connections whose detached response ended, to serve again
	open      map[*response]struct{} // detached responses under way
	idleConns map[*response]struct{} // connections of ended ones, waiting for a next request
	drain     chan struct{}          // closed when open empties, if Wait is waiting
}

// New returns the detached responses of a server whose requests' contexts
// all derive from base: a detached response's context is cancelled with it.
// idle is how long the connection of an ended response waits for the
// client's next request (the server's IdleTimeout).
func New(base context.Context, idle time.Duration, logger *slog.Logger) *Conns {
	return &Conns{
		logger:      logger,
		base:        base,
		idleTimeout: idle,
		ready:       make(chan struct{}, 1),
		closed:      make(chan struct{}),
		open:        map[*response]struct{}{},
		idleConns:   map[*response]struct{}{},
		poller:      newPoller(logger),
	}
}

// Handler is the outermost middleware: it lets the handlers under it
// detach (Go) and their middleware defer work to the response's end (Done).
func (c *Conns) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 1 || r.Method != http.MethodPost {
			// HTTP/2 streams cannot be taken from net/http, and every
			// stream is a POST: the rest pay nothing here.
			next.ServeHTTP(w, r)
			return
		}
		rs := &response{conns: c}
		rs.w = writer{ResponseWriter: w, rs: rs}
		next.ServeHTTP(&rs.w, r.WithContext(context.WithValue(r.Context(), key{}, rs)))
	})
}

// Listener wraps ln so that connections whose detached response ended are
// accepted again, to be served their next request.
func (c *Conns) Listener(ln net.Listener) net.Listener {
	l := &listener{Listener: ln, conns: c, accepted: make(chan accepted)}
	go l.acceptLoop()
	return l
}

// Wait waits for the detached responses under way to end, or for ctx.
func (c *Conns) Wait(ctx context.Context) error {
	c.mu.Lock()
	if len(c.open) == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.drain == nil {
		c.drain = make(chan struct{})
	}
	drain := c.drain
	c.mu.Unlock()
	select {
	case <-drain:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CloseAll closes the connections of the detached responses still under
// way: the last step of a shutdown whose streams did not end when asked.
func (c *Conns) CloseAll() {
	c.mu.Lock()
	open := make([]*response, 0, len(c.open))
	for rs := range c.open {
		open = append(open, rs)
	}
	c.mu.Unlock()
	for _, rs := range open {
		rs.unwatch(false, false)
		_ = rs.conn.Close()
	}
}

type key struct{}

// Go runs fn(w, r) with the rest of r's response. Where r's connection can
// be taken from net/http (an HTTP/1.1 POST under Conns.Handler, its body
// read to its end, the client still there), fn runs on a fresh goroutine
// and Go returns at once: the caller should return too, and must not touch
// w or r after. fn's request has a context of its own, cancelled when the
// client leaves, when the server's grace is over, or when fn returns.
// Anywhere else fn runs here, before Go returns.
func Go(w http.ResponseWriter, r *http.Request, fn func(w http.ResponseWriter, r *http.Request)) {
	rs, _ := r.Context().Value(key{}).(*response)
	if rs == nil || rs.detached || rs.w.started || r.Close || r.ProtoMinor == 0 || r.Context().Err() != nil ||
		!writesTo(w, &rs.w) || !drained(r) {
		fn(w, r)
		return
	}
	conn, brw, err := http.NewResponseController(rs.w.ResponseWriter).Hijack()
	if err != nil {
		fn(w, r)
		return
	}
	rs.detached = true
	rs.conn = conn
	if n := brw.Reader.Buffered(); n > 0 {
		// A client that sent its next request early (pipelining): kept
		// for when the connection is served again.
		b, _ := brw.Reader.Peek(n)
		rs.pending = append([]byte(nil), b...)
	}
	// The reader is ours now, and its 4 KiB buffer would stay with the
	// request's body, which the stream keeps (drained: nothing reads it).
	*brw.Reader = bufio.Reader{}
	rs.w.hijacked()
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	rs.cancel = cancel
	stop := context.AfterFunc(rs.conns.base, cancel)
	r = r.WithContext(ctx)

	rs.nextHere = len(rs.pending) > 0
	rs.conns.watch(rs)
	rs.conns.mu.Lock()
	rs.conns.open[rs] = struct{}{}
	rs.conns.mu.Unlock()
	go func() {
		defer func() {
			stop()
			if p := recover(); p != nil {
				rs.w.err = errPanic // the response is cut: the connection is closed
				if p != http.ErrAbortHandler {
					rs.conns.logger.Error("panic in a detached response", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				}
			}
			rs.finish()
		}()
		fn(w, r)
	}()
}

// Done runs fn when r's response has ended: when its handler has returned,
// or, for a response the handler detached (Go), when that has ended. It is
// for middleware whose work follows its handler (a request's log line, its
// duration); fns run in the order they were registered.
func Done(r *http.Request, fn func()) {
	rs, _ := r.Context().Value(key{}).(*response)
	if rs == nil || !rs.detached {
		fn()
		return
	}
	rs.mu.Lock()
	if rs.finished {
		rs.mu.Unlock()
		fn()
		return
	}
	rs.done = append(rs.done, fn)
	rs.mu.Unlock()
}

// maxDrain is how much of a request body Go reads past what its handler
// read, as net/http does before reusing a connection (256 KiB there).
const maxDrain = 256 << 10

// drained reads what is left of r's body; false if it was too much or
// failed, and the connection is then left to net/http.
// writesTo reports whether w is own, or a middleware's writer around it:
// a handler called in-process with a writer of its own (the SSE adapter's
// pipe) has its caller's context, and must not take its caller's
// connection.
func writesTo(w http.ResponseWriter, own *writer) bool {
	for {
		if w == http.ResponseWriter(own) {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// Streams lets h's server-streaming procedures, named by path, leave
// net/http as the compatible surfaces' streams do when called over the
// Connect, gRPC or gRPC-Web protocol (the SDKs' and the web app's streams):
// their one request message is the whole body, so it is read first (at most
// limit bytes), then h runs under Go. Other calls, and a body over limit or
// broken, run in place, h reading what is left as it would have.
func Streams(h http.Handler, limit int64, procedures ...string) http.Handler {
	streaming := make(map[string]bool, len(procedures))
	for _, p := range procedures {
		streaming[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.ProtoMajor != 1 || !streaming[r.URL.Path] || !detachable(r.Header.Get("Content-Type")) {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil || int64(len(body)) > limit {
			r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			h.ServeHTTP(w, r)
			return
		}
		Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		})
	})
}

// detachable reports whether a streaming call of this content type is
// detached: Connect's streaming protocol, gRPC (its status goes in the
// trailers, which a detached response sends) and gRPC-Web (its status goes
// in the body).
func detachable(contentType string) bool {
	return strings.HasPrefix(contentType, "application/connect+") || strings.HasPrefix(contentType, "application/grpc")
}

// readCloser reads what was read ahead, then the rest; Close closes the
// original body.
type readCloser struct {
	io.Reader
	io.Closer
}

func drained(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	n, err := io.CopyN(io.Discard, r.Body, maxDrain+1)
	return n <= maxDrain && (err == nil || errors.Is(err, io.EOF))
}

var errPanic = errors.New("detach: the response's goroutine panicked")

// ended forgets a detached response that has ended.
func (c *Conns) ended(rs *response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.open, rs)
	if len(c.open) == 0 && c.drain != nil {
		close(c.drain)
		c.drain = nil
	}
}

// idle notes (or forgets) a connection waiting for its next request, to
// be closed when the server stops listening; false if it has stopped.
func (c *Conns) idle(rs *response, waiting bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !waiting {
		delete(c.idleConns, rs)
		return true
	}
	select {
	case <-c.closed:
		return false
	default:
		c.idleConns[rs] = struct{}{}
		return true
	}
}

// give hands conn back to be served again, or closes it if the server has
// stopped listening.
func (c *Conns) give(conn net.Conn, pending []byte) {
	if len(pending) > 0 {
		conn = &prefixConn{Conn: conn, pending: pending}
	}
	// Under c.mu, as the listener's Close: a connection is either queued
	// before Close drains the queue, or closed here.
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		_ = conn.Close()
		return
	default:
	}
	// Its client has sent its next request: however many are queued, none
	// is closed on it.
	c.returned = append(c.returned, conn)
	c.signal()
}

// signal wakes an Accept waiting for a returned connection; c.mu is held.
func (c *Conns) signal() {
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// take is the first connection given back, or nil.
func (c *Conns) take() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.returned) == 0 {
		return nil
	}
	conn := c.returned[0]
	c.returned[0] = nil
	if c.returned = c.returned[1:]; len(c.returned) > 0 {
		c.signal() // more for the next Accept
	} else {
		c.returned = nil // (lets the backing array go)
	}
	return conn
}

// prefixConn is a connection with bytes already read from it.
type prefixConn struct {
	net.Conn
	pending []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pending) > 0 {
		n := copy(b, p.pending)
		p.pending = p.pending[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// listener accepts new connections and those given back.
type listener struct {
	net.Listener
	conns    *Conns
	accepted chan accepted
}

type accepted struct {
	conn net.Conn
	err  error
}

func (l *listener) acceptLoop() {
	var delay time.Duration
	for {
		conn, err := l.Listener.Accept()
		if ne, ok := err.(net.Error); ok && ne.Temporary() { // (as net/http reads it)
			// Too many open files: waited out here, not by net/http,
			// whose back-off (up to a second) would start again on an
			// error taken before the descriptors were freed.
			if delay == 0 {
				l.conns.logger.Warn("accepting connections failed; retrying", "err", err)
			}
			delay = min(max(2*delay, 5*time.Millisecond), 100*time.Millisecond)
			select {
			case <-time.After(delay):
				continue
			case <-l.conns.closed:
				return
			}
		}
		delay = 0
		select {
		case l.accepted <- accepted{conn, err}:
		case <-l.conns.closed:
			if conn != nil {
				_ = conn.Close()
			}
			return
		}
		if err != nil {
			return // closed, or an error net/http's Serve returns with
		}
	}
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		// A connection given back first: its client has a request waiting.
		if conn := l.conns.take(); conn != nil {
			return conn, nil
		}
		select {
		case <-l.conns.ready:
		case a := <-l.accepted:
			return a.conn, a.err
		case <-l.conns.closed:
			return nil, net.ErrClosed
		}
	}
}

func (l *listener) Close() error {
	l.conns.mu.Lock()
	l.conns.close.Do(func() { close(l.conns.closed) })
	l.conns.mu.Unlock()
	err := l.Listener.Close()
	// Connections waiting for a next request are closed, as net/http
	// closes its idle ones.
	l.conns.mu.Lock()
	idle := make([]*response, 0, len(l.conns.idleConns))
	for rs := range l.conns.idleConns {
		idle = append(idle, rs)
	}
	l.conns.mu.Unlock()
	for _, rs := range idle {
		rs.sawGone(false)
	}
	// Connections given back and not yet served again are closed.
	l.conns.mu.Lock()
	returned := l.conns.returned
	l.conns.returned = nil
	l.conns.mu.Unlock()
	for _, conn := range returned {
		_ = conn.Close()
	}
	return err
}
