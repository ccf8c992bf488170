package openai

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// streamTransport sends requests to plain-HTTP upstreams over HTTP/1.1 on
// the caller's goroutine: it writes the request, reads the response head and
// hands back a body that reads the connection directly. net/http's Transport
// keeps two goroutines (its read and write loops) and two buffers for every
// open connection — about 17 KB for each stream held open, measured with
// 2,000 of them — and passes each response through them; this keeps one
// 2 KiB read buffer and no goroutine. A cancelled context closes the
// connection at once (context.AfterFunc: nothing waits for it). Connections
// whose response was read to its end go back to a pool per address.
//
// Requests it does not handle — https, a proxy configured for the address,
// a body it cannot replay — go to next.
type streamTransport struct {
	next   *http.Transport
	dialer net.Dialer

	mu   sync.Mutex
	idle map[string][]*streamConn // by host:port, most recently used last
}

// streamIdleTimeout is how long a connection stays pooled unused: below the
// keep-alive bound of the usual servers would only cost reconnects, above it
// the server has closed it (llama.cpp after 5 s), which a replay covers.
const (
	streamIdleTimeout = 90 * time.Second
	streamMaxIdle     = 4096 // per address: every open stream is a connection
	streamReadBuffer  = 2048
)

type streamConn struct {
	net.Conn
	addr   string // the pool's key
	br     *bufio.Reader
	idleAt time.Time
}

func newStreamTransport(next *http.Transport) *streamTransport {
	return &streamTransport{next: next, dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		idle: map[string][]*streamConn{}}
}

func (t *streamTransport) handles(req *http.Request) bool {
	if req.URL.Scheme != "http" || req.Method == http.MethodConnect || (req.Body != nil && req.GetBody == nil) {
		return false
	}
	if t.next.Proxy != nil {
		if u, err := t.next.Proxy(req); err != nil || u != nil {
			return false
		}
	}
	return true
}

// RoundTrip implements http.RoundTripper.
func (t *streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.next.RoundTrip(req)
	}
	addr := canonicalAddr(req)
	for attempt := 0; ; attempt++ {
		c, reused, err := t.conn(req.Context(), addr)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(req, c)
		if err == nil {
			return resp, nil
		}
		c.Close()
		// A pooled connection the server closed while it sat idle fails
		// before any response: nothing was answered, so the request goes
		// again on a new one (once; a new connection's failure is final).
		if !reused || attempt > 0 || req.Context().Err() != nil {
			if cerr := context.Cause(req.Context()); cerr != nil {
				return nil, cerr
			}
			return nil, err
		}
		if req.GetBody != nil {
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, gerr
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// exchange writes req on c and reads the response head. The body it returns
// owns c: read to its end and closed, c goes back to the pool.
func (t *streamTransport) exchange(req *http.Request, c *streamConn) (*http.Response, error) {
	// Cancelling the request closes the connection, which ends a write or
	// read in progress; stop reports whether that happened.
	stop := context.AfterFunc(req.Context(), func() { c.Close() })
	buf := writeBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	err := req.Write(buf)
	if err == nil {
		_, err = c.Write(buf.Bytes())
	}
	if buf.Cap() <= 64<<10 {
		writeBuffers.Put(buf)
	}
	if err != nil {
		stop()
		return nil, err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		stop()
		return nil, err
	}
	resp.Body = &streamBody{rc: resp.Body, c: c, t: t, stop: stop, reusable: !resp.Close && !req.Close}
	return resp, nil
}

var writeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// conn takes a pooled connection to addr or dials one.
func (t *streamTransport) conn(ctx context.Context, addr string) (*streamConn, bool, error) {
	now := time.Now()
	t.mu.Lock()
	for pool := t.idle[addr]; len(pool) > 0; pool = t.idle[addr] {
		c := pool[len(pool)-1]
		pool[len(pool)-1] = nil
		t.idle[addr] = pool[:len(pool)-1]
		if now.Sub(c.idleAt) < streamIdleTimeout {
			t.mu.Unlock()
			return c, true, nil
		}
		c.Close()
	}
	t.mu.Unlock()
	nc, err := t.dial(ctx, addr)
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			return nil, false, cerr
		}
		return nil, false, err
	}
	return &streamConn{Conn: nc, addr: addr, br: bufio.NewReaderSize(nc, streamReadBuffer)}, false, nil
}

// dial connects to addr on a goroutine of its own. net's dial path runs
// deep: on the caller's goroutine it doubled the stack of every request
// that opened a connection (16 to 32 KiB), and that request then keeps the
// stack while it streams. The dial honours ctx, so the wait ends with it.
func (t *streamTransport) dial(ctx context.Context, addr string) (net.Conn, error) {
	type dialed struct {
		c   net.Conn
		err error
	}
	done := make(chan dialed, 1)
	go func() {
		c, err := t.dialer.DialContext(ctx, "tcp", addr)
		done <- dialed{c, err}
	}()
	d := <-done
	return d.c, d.err
}

// put pools c, dropping those that have been idle too long.
func (t *streamTransport) put(c *streamConn) {
	addr := c.addr
	c.idleAt = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	pool := t.idle[addr]
	for len(pool) > 0 && c.idleAt.Sub(pool[0].idleAt) >= streamIdleTimeout {
		pool[0].Close()
		pool = pool[1:]
	}
	if len(pool) >= streamMaxIdle {
		c.Close()
		t.idle[addr] = pool
		return
	}
	t.idle[addr] = append(pool, c)
}

// CloseIdleConnections closes the pooled connections (http.Client calls it).
func (t *streamTransport) CloseIdleConnections() {
	t.mu.Lock()
	for addr, pool := range t.idle {
		for _, c := range pool {
			c.Close()
		}
		delete(t.idle, addr)
	}
	t.mu.Unlock()
	t.next.CloseIdleConnections()
}

// streamBody is a response body on a streamConn.
type streamBody struct {
	rc       io.ReadCloser // http.ReadResponse's body: chunked or sized
	c        *streamConn
	t        *streamTransport
	stop     func() bool
	reusable bool
	eof      bool
	closed   bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("openai: read on a closed response body")
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close pools the connection if the body was read to its end and nothing
// cancelled the request; otherwise it closes it (unread bytes would be the
// next response's start).
func (b *streamBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.stop() && b.eof && b.reusable && b.c.br.Buffered() == 0 {
		b.t.put(b.c)
		return nil
	}
	return b.c.Close()
}

// canonicalAddr is the URL's host:port, port 80 when it names none.
func canonicalAddr(req *http.Request) string {
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}
