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
	s := &server{t: t, done: make(chan struct{})}
	s.cmd = exec.Command(parleyBin, args...)
	s.cmd.Env = append(os.Environ(), "PARLEY_LOG_LEVEL=debug")
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout = io.Discard
	start := time.Now()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
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
	select {
	case url := <-ready:
		s.BaseURL = url
		s.Ready = time.Since(start)
	case <-s.done:
		t.Fatalf("parley %s exited before listening: %v\n%s", args[0], s.err, s.Logs())
	case <-time.After(15 * time.Second):
		t.Fatalf("parley %s not listening after 15 s\n%s", args[0], s.Logs())
	}
	return s
}
