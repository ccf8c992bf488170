// Package e2e tests the real parley binary over real HTTP: it builds the
// binary once, starts it on a free port with a temporary data directory, and
// talks to it with the generated clients and plain HTTP.
package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var parleyBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "parley-e2e-")
	if err != nil {
		panic(err)
	}
	parleyBin = filepath.Join(dir, "parley")
	build := exec.Command("go", "build", "-o", parleyBin, "../cmd/parley")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building parley:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running parley process.
type server struct {
	t       *testing.T
	cmd     *exec.Cmd
	BaseURL string
	DataDir string
	Ready   time.Duration // from start to the "listening on" line

	args    []string
	started time.Time
	ready   chan string // the "listening on" address

	mu   sync.Mutex
	logs strings.Builder
	done chan struct{}
	err  error
}

var listeningRE = regexp.MustCompile(`listening on (http://[0-9.:\[\]a-z]+)`)

// startServer runs `parley serve` on a free loopback port with a temporary
// data dir (unless args give one) and waits until it logs "listening on".
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	s := spawnServer(t, args...)
	s.waitListening(15 * time.Second)
	return s
}

// spawnServer is startServer without the wait: waitListening waits.
func spawnServer(t *testing.T, args ...string) *server {
	t.Helper()
	dataDir := ""
	if !hasFlag(args, "--data-dir") {
		dataDir = t.TempDir()
		args = append([]string{"--data-dir", dataDir}, args...)
	}
	if !hasFlag(args, "--auto-titles") {
		// Exact counts of requests and usage elsewhere count the messages
		// sent; the generated titles have a test of their own.
		args = append([]string{"--auto-titles=false"}, args...)
	}
	if !hasFlag(args, "--rate-limits") {
		// Tests fire requests faster than a person; the request rates have
		// tests of their own (ratelimit_test.go).
		args = append([]string{"--rate-limits", "off"}, args...)
	}
	s := spawnProcess(t, append([]string{"serve", "--listen", "127.0.0.1:0", "--insecure-cookies", "--sim-time-scale", "0"}, args...)...)
	s.DataDir = dataDir
	if dataDir == "" {
		for i, a := range args {
			if a == "--data-dir" && i+1 < len(args) {
				s.DataDir = args[i+1]
			}
		}
	}
	return s
}

// Logs returns everything the process has logged so far.
func (s *server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// Signal sends sig to the process.
func (s *server) Signal(sig syscall.Signal) {
	_ = s.cmd.Process.Signal(sig)
}

// Wait waits for the process to exit and returns its exit code.
func (s *server) Wait(timeout time.Duration) (int, error) {
	select {
	case <-s.done:
		return s.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		return -1, fmt.Errorf("still running after %v", timeout)
	}
}

func (s *server) kill() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	if s.t.Failed() {
		s.t.Logf("server logs:\n%s", s.Logs())
	}
}

// h1Client speaks HTTP/1.1 (Connect and gRPC-Web work over it).
func h1Client() *http.Client {
	return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: false, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
}

// h2cClient speaks cleartext HTTP/2, as gRPC needs.
func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p, DialContext: (&net.Dialer{}).DialContext}}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
