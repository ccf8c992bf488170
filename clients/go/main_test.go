package parley_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMain builds the parley binary, starts it on a free port with a user
// who has a balance and an API key, and exports PARLEY_URL and
// PARLEY_API_KEY for the examples. Without a Go toolchain to build it (or
// with PARLEY_URL already set) it uses what the environment gives.
func TestMain(m *testing.M) {
	if os.Getenv("PARLEY_URL") != "" {
		os.Exit(m.Run())
	}
	stop, err := startParley()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting parley:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func startParley() (func(), error) {
	dir, err := os.MkdirTemp("", "parley-go-sdk-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "parley")
	build := exec.Command("go", "build", "-o", bin, "../../server/cmd/parley")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	admin := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"admin"}, append(args, "--data-dir", data)...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := admin("create-user", "--email", "sdk@example.com", "--password", "sdk-password-123"); err != nil {
		return nil, fmt.Errorf("create-user: %v: %s", err, out)
	}
	if out, err := admin("topup", "--email", "sdk@example.com", "--usd", "100"); err != nil {
		return nil, fmt.Errorf("topup: %v: %s", err, out)
	}
	// The secret is all create-key prints on stdout.
	keyOut, err := exec.Command(bin, "admin", "create-key", "--email", "sdk@example.com", "--data-dir", data).Output()
	if err != nil {
		return nil, fmt.Errorf("create-key: %v", err)
	}
	key := strings.TrimSpace(string(keyOut))
	out := string(keyOut)
	if !strings.HasPrefix(key, "pk_") {
		return nil, fmt.Errorf("no key in %q", out)
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", data, "--insecure-cookies", "--sim-time-scale", "0", "--rate-limits", "off")
	// Logs go to stderr (and stdout in older builds): read both.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w.Close()
	stop := func() { cmd.Process.Kill(); cmd.Wait(); os.RemoveAll(dir) }
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := regexp.MustCompile(`listening on (http://[0-9.:]+)`).FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case url := <-found:
		os.Setenv("PARLEY_URL", strings.TrimSpace(url))
		os.Setenv("PARLEY_API_KEY", key)
		return stop, nil
	case <-time.After(60 * time.Second):
		stop()
		return nil, fmt.Errorf("parley not listening after 60 s")
	}
}
