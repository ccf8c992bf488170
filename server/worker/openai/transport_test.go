package openai

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// streamServer streams n SSE events 'gap' apart on every request and counts
// the connections it accepted.
type streamServer struct {
	*httptest.Server
	conns     atomic.Int64
	cancelled chan time.Time // a request's context ended before its stream did
}

// idle, when set, is the server's IdleTimeout: it closes connections that
// sit idle that long.
func newStreamServer(t *testing.T, n int, gap time.Duration, idle ...time.Duration) *streamServer {
	s := &streamServer{cancelled: make(chan time.Time, 100)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			if _, err := fmt.Fprintf(w, "data: %d %s\n\n", i, body); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				s.cancelled <- time.Now()
				return
			case <-time.After(gap):
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if len(idle) > 0 {
		s.Config.IdleTimeout = idle[0] // before Start: the server reads it from its own goroutine
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func post(t *testing.T, c *http.Client, ctx context.Context, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestStreamTransportStreamsAndReuses(t *testing.T) {
	srv := newStreamServer(t, 3, 0)
	c := &http.Client{Transport: UpstreamTransport()}
	for i := range 5 {
		resp, err := post(t, c, context.Background(), srv.URL+"/v1/chat/completions", fmt.Sprintf("req%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		want := fmt.Sprintf("data: 0 req%[1]d\n\ndata: 1 req%[1]d\n\ndata: 2 req%[1]d\n\ndata: [DONE]\n\n", i)
		if got := readAll(t, resp); got != want {
			t.Fatalf("body %q, want %q", got, want)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("5 requests one after another used %d connections, want 1", n)
	}
}

// A stream left before its end cannot be reused: its connection closes, and
// the next request dials.
func TestStreamTransportUnreadBodyIsNotReused(t *testing.T) {
	srv := newStreamServer(t, 3, 10*time.Millisecond)
	c := &http.Client{Transport: UpstreamTransport()}
	resp, err := post(t, c, context.Background(), srv.URL, "a")
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: 0 a\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	resp.Body.Close()
	if got := readAll(t, must(post(t, c, context.Background(), srv.URL, "b"))); !strings.HasSuffix(got, "[DONE]\n\n") {
		t.Fatalf("second body %q", got)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	select {
	case <-srv.cancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("the server never saw the first stream end")
	}
}

func must(resp *http.Response, err error) *http.Response {
	if err != nil {
		panic(err)
	}
	return resp
}

// Cancelling the context ends a stream at once: the read returns and the
// server sees its request end, within 100 ms.
func TestStreamTransportCancel(t *testing.T) {
	srv := newStreamServer(t, 1000, 20*time.Millisecond)
	c := &http.Client{Transport: UpstreamTransport()}
	ctx, cancel := context.WithCancelCause(context.Background())
	resp, err := post(t, c, ctx, srv.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	errStop := errors.New("stop")
	cancelled := time.Now()
	cancel(errStop)
	for {
		if _, err = resp.Body.Read(buf); err != nil {
			break
		}
	}
	resp.Body.Close()
	if d := time.Since(cancelled); d > 100*time.Millisecond {
		t.Fatalf("the read ended %v after the cancel", d)
	}
	select {
	case at := <-srv.cancelled:
		if d := at.Sub(cancelled); d > 100*time.Millisecond {
			t.Fatalf("the server saw the request end %v after the cancel", d)
		}
	case <-time.After(time.Second):
		t.Fatal("the server never saw the request end")
	}
	// A request on a cancelled context fails with its cause, not a
	// connection error.
	if _, err := post(t, c, ctx, srv.URL, "y"); !errors.Is(err, errStop) {
		t.Fatalf("a request on a cancelled context: %v", err)
	}
}

// A pooled connection the server closed while it sat idle: the request goes
// again on a new connection instead of failing.
func TestStreamTransportReplaysOnAClosedIdleConnection(t *testing.T) {
	srv := newStreamServer(t, 1, 0, 30*time.Millisecond)
	c := &http.Client{Transport: UpstreamTransport()}
	for i := range 3 {
		if got := readAll(t, must(post(t, c, context.Background(), srv.URL, "z"))); got != "data: 0 z\n\ndata: [DONE]\n\n" {
			t.Fatalf("request %d: body %q", i, got)
		}
		time.Sleep(100 * time.Millisecond) // the server closes the idle connection
	}
	if n := srv.conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (each closed by the server while idle)", n)
	}
}

// https goes through net/http's Transport.
func TestStreamTransportHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	defer srv.Close()
	rt := UpstreamTransport().(*streamTransport)
	rt.next.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	c := &http.Client{Transport: rt}
	if got := readAll(t, must(post(t, c, context.Background(), srv.URL, ""))); got != "HTTP/1.1" && got != "HTTP/2.0" {
		t.Fatalf("body %q", got)
	}
}

// An open stream costs the client no goroutine: 100 streams held open add
// the server's two goroutines each (its connection and its background
// read), where net/http's Transport would add two more.
func TestStreamTransportNoGoroutinePerStream(t *testing.T) {
	srv := newStreamServer(t, 50, 20*time.Millisecond)
	c := &http.Client{Transport: UpstreamTransport()}
	const n = 100
	before := runtime.NumGoroutine()
	var bodies []io.ReadCloser
	var mu sync.Mutex
	for range n {
		resp, err := post(t, c, context.Background(), srv.URL, "g")
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		bodies = append(bodies, resp.Body)
		mu.Unlock()
	}
	time.Sleep(50 * time.Millisecond)
	added := runtime.NumGoroutine() - before
	for _, b := range bodies {
		b.Close()
	}
	if added > 2*n+5 {
		t.Fatalf("%d open streams added %d goroutines, want at most %d (the server's)", n, added, 2*n+5)
	}
	t.Logf("%d open streams: %d goroutines (the in-process server's included)", n, added)
}
