package config

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "parley.yaml")
	if err := os.WriteFile(file, []byte("listen: 127.0.0.1:9000\ndata-dir: /from-file\nweb-origins: [https://a.example, https://b.example]\nshutdown-grace: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PARLEY_DATA_DIR": "/from-env", "PARLEY_LOG_LEVEL": "debug"}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := ServeFlags(fs)
	if err := Parse(fs, []string{"--config", file, "--log-level", "warn"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9000" {
		t.Errorf("listen from file: got %q", c.Listen)
	}
	if c.DataDir != "/from-env" {
		t.Errorf("env beats file: got %q", c.DataDir)
	}
	if c.LogLevel != "warn" {
		t.Errorf("flag beats env: got %q", c.LogLevel)
	}
	if want := []string{"https://a.example", "https://b.example"}; !reflect.DeepEqual(c.WebOrigins, want) {
		t.Errorf("list from file: got %q", c.WebOrigins)
	}
	if c.ShutdownGrace != 5*time.Second {
		t.Errorf("duration from file: got %v", c.ShutdownGrace)
	}
	if c.MaxBodyBytes != 32<<20 {
		t.Errorf("default kept: got %d", c.MaxBodyBytes)
	}
}

func TestUnknownFileKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "parley.yaml")
	if err := os.WriteFile(file, []byte("listen_addr: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	ServeFlags(fs)
	err := Parse(fs, []string{"--config", file}, func(string) string { return "" })
	if err == nil {
		t.Fatal("want an error naming the unknown key")
	}
}

func TestBadEnvValue(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	ServeFlags(fs)
	err := Parse(fs, nil, func(k string) string {
		if k == "PARLEY_MAX_BODY_BYTES" {
			return "lots"
		}
		return ""
	})
	if err == nil {
		t.Fatal("want an error for PARLEY_MAX_BODY_BYTES=lots")
	}
}

// TestStoresShareServeFile: the admin tasks and migrate read serve's YAML
// file, taking the store settings and skipping serve's others; a key no
// command knows is still refused.
func TestStoresShareServeFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "parley.yaml")
	if err := os.WriteFile(file, []byte("listen: 127.0.0.1:9000\ndata-dir: /from-file\nqueue-limit: 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	s := StoresFlags(fs)
	if err := Parse(fs, []string{"--config", file}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if s.DataDir != "/from-file" {
		t.Errorf("data-dir from file: got %q", s.DataDir)
	}
	if fs.Lookup("listen") != nil {
		t.Error("the store flags include --listen")
	}
	if err := os.WriteFile(file, []byte("data-dir: x\nlisten_addr: y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs = flag.NewFlagSet("migrate", flag.ContinueOnError)
	StoresFlags(fs)
	if err := Parse(fs, []string{"--config", file}, func(string) string { return "" }); err == nil {
		t.Error("want an error naming the unknown key listen_addr")
	}
}
