package detach_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/detach"
)

// byGoroutine: serve's connections are watched by a goroutine each, not
// the poller.
var byGoroutine bool

// both runs test with the connections watched by the poller (where there
// is one) and by a goroutine each.
func both(t *testing.T, test func(*testing.T)) {
	t.Run("poller", test)
	byGoroutine = true
	defer func() { byGoroutine = false }()
	t.Run("goroutine", test)
}

// serve runs h under Conns on a real loopback listener, as gateway.Server
// does, and returns its URL and Conns.
func serve(t *testing.T, h http.Handler) (string, *detach.Conns) {
	return serveIdle(t, h, time.Minute)
}

// serveIdle is serve with idle as the idle timeout, and a read header
// timeout far shorter, as a server has.
func serveIdle(t *testing.T, h http.Handler, idle time.Duration) (string, *detach.Conns) {
	t.Helper()
	base, cancel := context.WithCancel(context.Background())
	conns := detach.New(base, idle, slog.New(slog.DiscardHandler))
	if byGoroutine {
		detach.WithoutPoller(conns)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: conns.Handler(h), BaseContext: func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: idle}
	go func() { _ = srv.Serve(conns.Listener(ln)) }()
	t.Cleanup(func() {
		cancel()
		_ = srv.Close()
		ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		if err := conns.Wait(ctx); err != nil {
			t.Errorf("detached responses still open after the test: %d", detach.Len(conns))
		}
	})
	return "http://" + ln.Addr().String(), conns
}

// events is a handler that detaches and writes "data: i" events, flushed,
// each after next has a value; returned says whether the handler had
// returned by then.
func events(n int, next chan struct{}, returned *atomic.Bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Before", "set before detaching")
		handlerReturned := make(chan struct{})
		detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			// A detached stream goes on after its handler returns: wait
			// for that (for at most 5 s, which it never takes unless Go
			// ran the stream in place).
			select {
			case <-handlerReturned:
			case <-time.After(5 * time.Second):
			}
			for i := range n {
				if next != nil {
					select {
					case <-next:
					case <-r.Context().Done():
						return
					}
				}
				fmt.Fprintf(w, "data: %d returned=%v\n\n", i, returned.Load())
				w.(http.Flusher).Flush()
			}
		})
		returned.Store(true)
		close(handlerReturned)
	}
}

func TestDetachedResponseStreamsAsNetHTTPWould(t *testing.T) {
	both(t, testDetachedResponseStreamsAsNetHTTPWould)
}

func testDetachedResponseStreamsAsNetHTTPWould(t *testing.T) {
	var returned atomic.Bool
	next := make(chan struct{}, 1)
	url, _ := serve(t, events(3, next, &returned))
	next <- struct{}{}
	res, err := http.Post(url, "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("X-Before") == "" || res.Header.Get("Date") == "" {
		t.Fatalf("status %d, header %v", res.StatusCode, res.Header)
	}
	if len(res.TransferEncoding) != 1 || res.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer encoding %v, want chunked", res.TransferEncoding)
	}
	// Each event arrives while the stream is open (flushed, not held
	// back), and after the handler itself has returned.
	br := bufio.NewReader(res.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("data: %d returned=true\n", i); line != want {
			t.Fatalf("event %d: %q, want %q", i, line, want)
		}
		_, _ = br.ReadString('\n')
		next <- struct{}{}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the events: %q, %v", rest, err)
	}
}

func TestConnectionIsServedAgainAfterADetachedResponse(t *testing.T) {
	both(t, testConnectionIsServedAgainAfterADetachedResponse)
}

func testConnectionIsServedAgainAfterADetachedResponse(t *testing.T) {
	var returned atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("/stream", events(2, nil, &returned))
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "plain") })
	url, _ := serve(t, mux)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	var reused []bool
	for _, path := range []string{"/stream", "/stream", "/plain", "/stream"} {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", url+path, strings.NewReader("{}"))
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %d %q %v", path, res.StatusCode, body, err)
		}
	}
	if fmt.Sprint(reused) != "[false true true true]" {
		t.Fatalf("connection reused: %v, want [false true true true]", reused)
	}
}

func TestClientLeavingCancelsTheDetachedContext(t *testing.T) {
	both(t, testClientLeavingCancelsTheDetachedContext)
}

func testClientLeavingCancelsTheDetachedContext(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	url, conns := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "data: open\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			cancelled <- time.Now()
		})
	}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader("{}"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	cancel() // closes the connection
	select {
	case at := <-cancelled:
		t.Logf("context cancelled %v after the client left", at.Sub(left))
	case <-time.After(5 * time.Second):
		t.Fatal("the detached response's context was not cancelled when the client left")
	}
	deadline := time.Now().Add(5 * time.Second)
	for detach.Len(conns) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if detach.Len(conns) != 0 {
		t.Fatal("the detached response did not end")
	}
}

// Middleware work registered with Done runs once the detached response
// has ended, and sees what it wrote.
func TestDoneRunsWhenTheDetachedResponseEnds(t *testing.T) {
	both(t, testDoneRunsWhenTheDetachedResponseEnds)
}

func testDoneRunsWhenTheDetachedResponseEnds(t *testing.T) {
	release := make(chan struct{})
	type seen struct {
		status int
		after  bool // after the detached function returned
	}
	got := make(chan seen, 1)
	var fnReturned atomic.Bool
	recorder := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			detach.Done(r, func() { got <- seen{sw.status, fnReturned.Load()} })
		})
	}
	url, _ := serve(t, recorder(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			<-release
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, "done")
			fnReturned.Store(true)
		})
	})))
	resc := make(chan *http.Response, 1)
	go func() {
		res, err := http.Post(url, "text/plain", nil)
		if err != nil {
			t.Error(err)
			close(resc)
			return
		}
		resc <- res
	}()
	select {
	case s := <-got:
		t.Fatalf("Done's work ran before the response ended: %+v", s)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	s := <-got
	if s.status != http.StatusAccepted || !s.after {
		t.Fatalf("Done saw %+v, want status 202 after the response", s)
	}
	if res := <-resc; res != nil {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusAccepted || string(body) != "done" {
			t.Fatalf("response %d %q", res.StatusCode, body)
		}
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// A client that sends its next request before the stream has ended
// (pipelining) has it answered after the stream, on the same connection.
func TestPipelinedRequestIsServedAfterTheStream(t *testing.T) {
	both(t, testPipelinedRequestIsServedAfterTheStream)
}

func testPipelinedRequestIsServedAfterTheStream(t *testing.T) {
	var returned atomic.Bool
	url, _ := serve(t, events(2, nil, &returned))
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	if _, err := io.WriteString(conn, req+req); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for i := range 2 {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		body, err := io.ReadAll(res.Body)
		if err != nil || !strings.Contains(string(body), "data: 1") {
			t.Fatalf("response %d: %q, %v", i, body, err)
		}
	}
}

// A panic in a detached response closes its connection; the server goes
// on, and Done's work still runs.
func TestPanicInADetachedResponse(t *testing.T) { both(t, testPanicInADetachedResponse) }

func testPanicInADetachedResponse(t *testing.T) {
	done := make(chan struct{}, 1)
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "data: a\n\n")
			w.(http.Flusher).Flush()
			panic("boom")
		})
		detach.Done(r, func() { done <- struct{}{} })
	}))
	res, err := http.Post(url, "text/plain", nil)
	if err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err == nil {
		t.Fatal("a response cut by a panic read as whole")
	}
	<-done
	res, err = http.Get(url + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
}

// After a detached response the connection waits for the client's next
// request for the idle timeout (not the shorter time a new connection has
// to send its headers), and is closed after it.
func TestConnectionWaitsIdleForTheNextRequest(t *testing.T) {
	both(t, testConnectionWaitsIdleForTheNextRequest)
}

func testConnectionWaitsIdleForTheNextRequest(t *testing.T) {
	var returned atomic.Bool
	url, _ := serveIdle(t, events(1, nil, &returned), 700*time.Millisecond)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	ask := func() {
		t.Helper()
		if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if body, err := io.ReadAll(res.Body); err != nil || !strings.Contains(string(body), "data: 0") {
			t.Fatalf("%q, %v", body, err)
		}
	}
	ask()
	time.Sleep(300 * time.Millisecond) // past the header timeout, within the idle one
	ask()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if n, err := br.ReadByte(); err == nil {
		t.Fatalf("read %q from an idle connection", n)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond || waited > 3*time.Second {
		t.Fatalf("the idle connection was closed after %v, want about 700ms", waited)
	}
}

// Wait waits for the detached responses under way.
func TestWaitWaitsForDetachedResponses(t *testing.T) { both(t, testWaitWaitsForDetachedResponses) }

func testWaitWaitsForDetachedResponses(t *testing.T) {
	release := make(chan struct{})
	url, conns := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			<-release
		})
	}))
	go func() {
		if res, err := http.Post(url, "text/plain", nil); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for detach.Len(conns) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := conns.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a response open: %v, want the deadline", err)
	}
	close(release)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := conns.Wait(ctx2); err != nil {
		t.Fatalf("Wait after the response ended: %v", err)
	}
}

// Without Conns (a test recorder, HTTP/2) Go runs the function in place.
func TestGoRunsInPlaceWithoutConns(t *testing.T) {
	rec := httptest.NewRecorder()
	ran := false
	detach.Go(rec, httptest.NewRequest("POST", "/", nil), func(w http.ResponseWriter, r *http.Request) {
		ran = true
		_, _ = io.WriteString(w, "x")
	})
	if !ran || rec.Body.String() != "x" {
		t.Fatalf("ran %v, body %q", ran, rec.Body.String())
	}
}

// An accept that fails for a while (too many open files) does not stop the
// server accepting once it passes, as net/http's own loop does not.
func TestAcceptGoesOnAfterTemporaryErrors(t *testing.T) {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	conns := detach.New(base, time.Minute, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: conns.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})), ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(conns.Listener(&flakyListener{Listener: ln, failures: 3})) }()
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatalf("after failed accepts: %v", err)
	}
	res.Body.Close()
}

type flakyListener struct {
	net.Listener
	failures int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failures > 0 {
		l.failures--
		return nil, tooManyFiles{}
	}
	return l.Listener.Accept()
}

type tooManyFiles struct{}

func (tooManyFiles) Error() string   { return "accept: too many open files" }
func (tooManyFiles) Timeout() bool   { return false }
func (tooManyFiles) Temporary() bool { return true }

// A client that sends its next request the moment a stream ends, or
// leaves then, leaves no connection noted as waiting for one.
func TestNoIdleConnectionOutlivesItsClient(t *testing.T) {
	both(t, testNoIdleConnectionOutlivesItsClient)
}

func testNoIdleConnectionOutlivesItsClient(t *testing.T) {
	var returned atomic.Bool
	url, conns := serve(t, events(1, nil, &returned))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for range 100 {
		res, err := client.Post(url, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	client.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for detach.Idle(conns) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := detach.Idle(conns); n != 0 {
		t.Fatalf("%d connections still noted as waiting after their clients left", n)
	}
}

// However many connections are given back before net/http accepts again
// (thousands of streams ending at once, each client's next request sent),
// none is closed on its client: each is served, in order.
func TestEveryConnectionGivenBackIsServed(t *testing.T) {
	conns := detach.New(context.Background(), time.Minute, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := conns.Listener(ln)
	defer l.Close()
	const n = 1000
	clients := make([]net.Conn, n)
	for i := range n {
		a, b := net.Pipe()
		clients[i] = b
		detach.Give(conns, a)
	}
	accept := func() (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() { c, err := l.Accept(); ch <- result{c, err} }()
		select {
		case r := <-ch:
			return r.c, r.err
		case <-time.After(5 * time.Second):
			return nil, errors.New("nothing to accept after 5 s: the connection was not given back")
		}
	}
	for i := range n {
		got, err := accept()
		if err != nil {
			t.Fatalf("accept %d: %v", i, err)
		}
		go func() { _, _ = got.Write([]byte{byte(i)}) }()
		var b [1]byte
		if _, err := io.ReadFull(clients[i], b[:]); err != nil || b[0] != byte(i) {
			t.Fatalf("connection %d: %v %v (closed, or out of order)", i, b[0], err)
		}
	}
	// And a new connection is still accepted after them.
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	if c, err := accept(); err != nil {
		t.Fatalf("a new connection after those given back: %v", err)
	} else {
		c.Close()
	}
}

// A status with no standard text gets net/http's words for it, not an
// empty reason phrase.
func TestUnknownStatusLine(t *testing.T) {
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(599)
			_, _ = io.WriteString(w, "x")
		})
	}))
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "HTTP/1.1 599 status code 599\r\n" {
		t.Fatalf("status line %q, %v", line, err)
	}
}

// A handler called in-process with a writer of its own (as the SSE adapter
// calls the Connect handlers) runs in place: its caller's connection is
// not taken.
func TestGoWithAnotherWriterRunsInPlace(t *testing.T) {
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		inPlace := false
		detach.Go(rec, r, func(w http.ResponseWriter, r *http.Request) {
			inPlace = true
			_, _ = io.WriteString(w, "inner")
		})
		_, _ = fmt.Fprintf(w, "%s in place=%v", rec.Body.String(), inPlace)
	}))
	res, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if string(b) != "inner in place=true" {
		t.Fatalf("got %q", b)
	}
}

// Streams reads a streaming procedure's body, then detaches its handler,
// which reads the body as if it had not been; a body over the limit,
// another path, or a gRPC-Web or unary call, runs in place with all of its
// body.
func TestStreams(t *testing.T) {
	both(t, testStreams)
}

func testStreams(t *testing.T) {
	var outerReturned chan struct{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		detached := false
		select {
		case <-outerReturned: // only a detached handler sees its caller return
			detached = true
		case <-time.After(300 * time.Millisecond):
		}
		_, _ = fmt.Fprintf(w, "got %s", body)
		w.(http.Flusher).Flush()
		_, _ = fmt.Fprintf(w, ", detached=%v", detached)
	})
	streams := detach.Streams(h, 8, "/stream")
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streams.ServeHTTP(w, r)
		close(outerReturned)
	}))
	post := func(path, contentType, body string) string {
		t.Helper()
		outerReturned = make(chan struct{})
		res, err := http.Post(url+path, contentType, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	for _, c := range []struct{ path, contentType, body, want string }{
		{"/stream", "application/connect+json", "hello", "got hello, detached=true"},
		{"/stream", "application/connect+proto", "hello", "got hello, detached=true"},
		{"/stream", "application/grpc", "hello", "got hello, detached=true"},
		{"/stream", "application/grpc+proto", "hello", "got hello, detached=true"},
		{"/stream", "application/grpc-web+proto", "hello", "got hello, detached=true"},
		{"/stream", "application/grpc-web-text", "hello", "got hello, detached=true"},
		{"/stream", "application/json", "hello", "got hello, detached=false"},
		{"/stream", "application/connect+json", "a body longer than eight", "got a body longer than eight, detached=false"},
		{"/other", "application/connect+json", "hello", "got hello, detached=false"},
	} {
		if got := post(c.path, c.contentType, c.body); got != c.want {
			t.Errorf("POST %s (%s) %q: %q, want %q", c.path, c.contentType, c.body, got, c.want)
		}
	}
}

// A detached response's trailers (declared in the Trailer header, or set
// under http.TrailerPrefix, as gRPC over HTTP/1.1 sends its status) reach
// the client as net/http's would, and are not sent in the head.
func TestDetachedResponseSendsTrailers(t *testing.T) {
	both(t, testDetachedResponseSendsTrailers)
}

func testDetachedResponseSendsTrailers(t *testing.T) {
	trailing := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Grpc-Status")
		w.Header().Set("Content-Type", "application/grpc")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "message")
		w.(http.Flusher).Flush()
		w.Header().Set("Grpc-Status", "0")
		w.Header().Set(http.TrailerPrefix+"Grpc-Message", "all well")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/in-place", trailing)
	mux.HandleFunc("/detached", func(w http.ResponseWriter, r *http.Request) { detach.Go(w, r, trailing) })
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "plain") })
	url, _ := serve(t, mux)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	got := map[string]string{}
	for _, path := range []string{"/in-place", "/detached", "/plain"} {
		res, err := client.Post(url+path, "application/grpc", strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %d %q %v", path, res.StatusCode, body, err)
		}
		got[path] = fmt.Sprintf("body %q, head %q %q, trailer %v", body, res.Header.Get("Grpc-Status"), res.Header.Get("Grpc-Message"), res.Trailer)
	}
	want := `body "message", head "" "", trailer map[Grpc-Message:[all well] Grpc-Status:[0]]`
	if got["/in-place"] != want || got["/detached"] != want {
		t.Fatalf("net/http: %s\ndetached: %s\nwant:     %s", got["/in-place"], got["/detached"], want)
	}
}
