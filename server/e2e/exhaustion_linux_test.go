package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A gateway in direct mode that runs out of file descriptors refuses what
// it cannot open with 503 and says why, but does not take its inference
// server for broken: no ejection, no "upstream lost", and the first request
// once descriptors are free again is served at once. (It once marked the
// server lost for minutes, and every stream waited.)
func TestDescriptorExhaustionIsNotTheUpstreamsFault(t *testing.T) {
	up := startInference(t, 50*time.Millisecond)
	gw := startServer(t, append(fastAuth, "--workers", up.URL(), "--models-file", directCatalog(t))...)
	a := gw.newAccount(t, "exhausted@example.com")
	gw.topup(t, a, "10")
	waitFor(t, 10*time.Second, "the server ready", func() bool { return readyWorkers(t, gw) == 1 })
	if o := streamChatBody(ctxTimeout(t, 10*time.Second), gw, a.Key, directBody(2, "warm up")); !o.done {
		t.Fatalf("before: %+v", o)
	}

	pid := gw.cmd.Process.Pid
	var orig unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &orig); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	setLimit := func(n uint64) {
		t.Helper()
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: orig.Max}, nil); err != nil {
			t.Fatalf("prlimit: %v", err)
		}
	}
	t.Cleanup(func() { _ = unix.Prlimit(pid, unix.RLIMIT_NOFILE, &orig, nil) })
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	limit := uint64(len(fds)) + 1
	setLimit(limit)

	// Streams, one at a time, each holding a client connection and one to
	// the server, until one is refused. A client whose connection the
	// gateway cannot accept waits (net/http and detach retry accepting):
	// one more descriptor lets it in, to fail on the way to the server.
	ctx, cancel := context.WithCancel(ctxTimeout(t, 60*time.Second))
	defer cancel()
	client := &http.Client{Transport: &http.Transport{}}
	type answer struct {
		status int
		body   string
		err    error
	}
	refused := ""
	for i := 0; i < 16 && refused == ""; i++ {
		got := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", gw.BaseURL+"/v1/chat/completions",
				strings.NewReader(directBody(1000, fmt.Sprintf("stream %d", i))))
			req.Header.Set("Authorization", "Bearer "+a.Key)
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				got <- answer{err: err}
				return
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(res.Body)
				got <- answer{status: res.StatusCode, body: string(b)}
				return
			}
			got <- answer{status: http.StatusOK}
			_, _ = io.Copy(io.Discard, res.Body) // held until cancel
		}()
	wait:
		for {
			select {
			case r := <-got:
				switch {
				case r.err != nil:
					t.Fatalf("stream %d: %v", i, r.err)
				case r.status == http.StatusServiceUnavailable:
					refused = r.body
				case r.status != http.StatusOK:
					t.Fatalf("stream %d: HTTP %d %s", i, r.status, r.body)
				}
				break wait
			case <-time.After(1500 * time.Millisecond):
				limit++ // not accepted: one more descriptor
				setLimit(limit)
			}
		}
	}
	if refused == "" {
		t.Fatalf("no stream refused with descriptors at %d", limit)
	}
	if !strings.Contains(refused, "short of resources") || !strings.Contains(refused, "too many open files") {
		t.Errorf("refused with %q, want it to say the gateway is short of descriptors", refused)
	}
	time.Sleep(1500 * time.Millisecond) // a poll of the server or two while exhausted

	cancel()
	setLimit(orig.Cur)
	start := time.Now()
	if o := streamChatBody(ctxTimeout(t, 10*time.Second), gw, a.Key, directBody(3, "after")); !o.done || o.err != "" {
		t.Fatalf("the first request with descriptors free again: %+v", o)
	}
	t.Logf("refused at %d descriptors with %q; the next request once they were free served in %v", limit, strings.TrimSpace(refused), time.Since(start).Round(time.Millisecond))
	logs := gw.Logs()
	for _, bad := range []string{"worker ejected", "upstream lost"} {
		if strings.Contains(logs, bad) {
			t.Errorf("the gateway logged %q: it took its own shortage for the server's", bad)
		}
	}
	if n := readyWorkers(t, gw); n != 1 {
		t.Errorf("%v servers ready, want 1", n)
	}
}
