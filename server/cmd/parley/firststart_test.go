package main

import (
	"bytes"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/config"
)

// TestFirstStartHuman: the lines a person sees at a terminal on a first
// start say the URL, what was created and where, that the engine is
// simulated and how to change it, and the first admin's command; a data
// directory with its database and secret is no first start. (The e2e
// test, whose stderr is a pipe, checks the structured record.)
func TestFirstStartHuman(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := config.ServeFlags(fs)
	if err := fs.Parse([]string{"--data-dir", dir}); err != nil {
		t.Fatal(err)
	}
	f := noteFirstStart(cfg)()
	if f == nil {
		t.Fatal("fresh data directory: no first start")
	}
	f.URL = webURL(&net.TCPAddr{IP: net.IPv4zero, Port: 8080})
	var b bytes.Buffer
	f.Human(&b)
	out := b.String()
	for _, want := range []string{
		"Parley is running: open http://localhost:8080/",
		"created the data directory " + dir,
		"created the database " + filepath.Join(dir, "parley.db"),
		"created the secret " + filepath.Join(dir, "secret.key"),
		"SIMULATED", realWorkerCommand, realServeFlag,
		"parley admin create-user --admin --email you@example.com --password 'at least 10 characters' --data-dir " + dir,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first start lines lack %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n > 14 {
		t.Errorf("%d lines: a few are wanted\n%s", n, out)
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"parley.db", "secret.key"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if f := noteFirstStart(cfg)(); f != nil {
		t.Errorf("second start said a first start: %+v", f)
	}
}

func TestWebURL(t *testing.T) {
	for addr, want := range map[net.Addr]string{
		&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8080}: "http://127.0.0.1:8080/",
		&net.TCPAddr{IP: net.IPv6unspecified, Port: 80}:        "http://localhost:80/",
		&net.TCPAddr{IP: net.ParseIP("::1"), Port: 9}:          "http://[::1]:9/",
	} {
		if got := webURL(addr); got != want {
			t.Errorf("webURL(%v) = %q, want %q", addr, got, want)
		}
	}
}
