package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startWorker runs `parley worker` on a free loopback port (sim engine at
// time scale 0 unless args say otherwise) and waits until it logs
// "listening on".
func startWorker(t *testing.T, args ...string) *server {
	t.Helper()
	full := append([]string{"worker", "--listen", "127.0.0.1:0"}, args...)
	if !hasFlag(args, "--time-scale") {
		full = append(full, "--time-scale", "0")
	}
	return startProcess(t, full...)
}

// Addr is the process's host:port.
func (s *server) Addr() string {
	return strings.TrimPrefix(s.BaseURL, "http://")
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// startProcess runs the parley binary with args and waits for its
// "listening on" line.
func startProcess(t *testing.T, args ...string) *server {
	t.Helper()
	s := spawnProcess(t, args...)
	s.waitListening(15 * time.Second)
	return s
}

// spawnProcess runs the parley binary with args and returns at once;
// waitListening waits for its "listening on" line.
func spawnProcess(t *testing.T, args ...string) *server {
	t.Helper()
	s := &server{t: t, done: make(chan struct{}), args: args, ready: make(chan string, 1)}
	s.cmd = exec.Command(parleyBin, args...)
	s.cmd.Env = append(os.Environ(), "PARLEY_LOG_LEVEL=debug")
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout = io.Discard
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := s.ready
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs.WriteString(line + "\n")
			s.mu.Unlock()
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.kill)
	return s
}

// waitListening waits up to timeout for a spawned process's "listening on"
// line and fails the test (from the test's goroutine) if it exits first or
// does not come.
func (s *server) waitListening(timeout time.Duration) {
	s.t.Helper()
	select {
	case url := <-s.ready:
		s.BaseURL = url
		s.Ready = time.Since(s.started)
	case <-s.done:
		s.t.Fatalf("parley %s exited before listening: %v\n%s", s.args[0], s.err, s.Logs())
	case <-time.After(timeout):
		s.t.Fatalf("parley %s not listening after %v\n%s", s.args[0], timeout, s.Logs())
	}
}
