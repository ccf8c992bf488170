package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A body that stops arriving fails its read at the deadline; once a body
// has been read, the response may stream far past it.
func TestBodyReadTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	readErr := make(chan error, 1)
	srv := httptest.NewServer(BodyReadTimeout(timeout)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
		if err != nil {
			http.Error(w, "slow body", http.StatusRequestTimeout)
			return
		}
		// Stream for five times the body timeout.
		for i := range 5 {
			fmt.Fprintf(w, "tick %d\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(timeout)
		}
	})))
	defer srv.Close()

	// A stalled body.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
	select {
	case err := <-readErr:
		if took := time.Since(start); err == nil || took < timeout/2 || took > 10*timeout {
			t.Errorf("stalled body: read error %v after %v, want a timeout at about %v", err, took, timeout)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled body was never cut")
	}

	// A whole body, then a long stream, over a kept-alive connection twice.
	client := srv.Client()
	for range 2 {
		res, err := client.Post(srv.URL, "text/plain", strings.NewReader("hello"))
		if err != nil {
			t.Fatal(err)
		}
		if err := <-readErr; err != nil {
			t.Fatal(err)
		}
		lines := 0
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines++
		}
		res.Body.Close()
		if lines != 5 || sc.Err() != nil {
			t.Errorf("stream cut: %d lines, %v", lines, sc.Err())
		}
	}
}

// With no origins, no CORS headers at all: never a wildcard with
// credentials. A "*" among the origins drops credentials.
func TestCORSNeverWildcardWithCredentials(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, tc := range []struct {
		origins              []string
		origin, allow, creds string
	}{
		{nil, "https://evil.example", "", ""},
		{[]string{"https://app.example"}, "https://app.example", "https://app.example", "true"},
		{[]string{"https://app.example"}, "https://evil.example", "", ""},
		{[]string{"*"}, "https://evil.example", "*", ""},
	} {
		for _, method := range []string{"GET", "OPTIONS"} {
			req := httptest.NewRequest(method, "/parley.v1.ChatService/Complete", nil)
			req.Header.Set("Origin", tc.origin)
			if method == "OPTIONS" {
				req.Header.Set("Access-Control-Request-Method", "POST")
			}
			rec := httptest.NewRecorder()
			CORS(tc.origins)(ok).ServeHTTP(rec, req)
			allow, creds := rec.Header().Get("Access-Control-Allow-Origin"), rec.Header().Get("Access-Control-Allow-Credentials")
			if allow != tc.allow || creds != tc.creds {
				t.Errorf("origins %v, %s from %s: allow %q creds %q; want %q %q", tc.origins, method, tc.origin, allow, creds, tc.allow, tc.creds)
			}
		}
	}
}
