//go:build linux

package detach_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/detach"
)

// On Linux an open stream costs one goroutine (its own), not two: the
// poller notices its client leave.
func TestPollerWatchesWithoutAGoroutineEach(t *testing.T) {
	release := make(chan struct{})
	url, conns := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "data: open\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
	}))
	const streams = 50
	before := runtime.NumGoroutine()
	var clients []net.Conn
	for range streams {
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for detach.Len(conns) < streams && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the handlers' goroutines end
	if added := runtime.NumGoroutine() - before; added > streams+5 {
		t.Errorf("%d streams open added %d goroutines, want about %d", streams, added, streams)
	}
	// They still notice their clients leave.
	for _, c := range clients {
		_ = c.Close()
	}
	deadline = time.Now().Add(5 * time.Second)
	for detach.Len(conns) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if detach.Len(conns) != 0 {
		t.Fatalf("%d streams still open after their clients left", detach.Len(conns))
	}
	close(release)
}

// The poller waits in Go's netpoller, not in a system call: a goroutine
// parked in epoll_wait for good keeps a thread in a system call, which the
// runtime's monitor keeps taking its processor back from.
func TestPollerWaitsInTheNetpoller(t *testing.T) {
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "data: done\n\n")
		})
	}))
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for range 3 { // requests on one connection: the poller sees each next one
		if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		pollers, waiting, last := 0, 0, ""
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "detach.(*poller).loop") {
				pollers++
				last = g
				if strings.Contains(strings.SplitN(g, "\n", 2)[0], "[IO wait") {
					waiting++
				}
			}
		}
		switch {
		case pollers == 0:
			t.Fatal("no poller goroutine")
		case waiting == pollers:
			return
		case time.Now().After(deadline):
			t.Fatalf("%d of %d pollers wait elsewhere than in the netpoller, as:\n%s", pollers-waiting, pollers, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
