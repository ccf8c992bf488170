package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/config"
)

var update = flag.Bool("update", false, "rewrite docs/config.md from the flag sets")

// storeFlags are the flags every admin task and migrate take: where the
// data lives, and --config.
var storeFlags = []string{
	"billing-postgres-url", "cassandra-hosts", "cassandra-keyspace", "clickhouse-cluster", "clickhouse-url", "config", "data-dir", "postgres-pgbouncer",
	"postgres-read-urls", "postgres-replica-max-lag", "postgres-url", "redis-url", "s3-bucket", "s3-endpoint",
}

// helpCases are every command and subcommand, with the flags its --help
// must list, exactly (nil: checked against its own flag set, below).
var helpCases = []struct {
	args []string
	want []string
}{
	{[]string{"serve"}, nil},
	{[]string{"worker"}, []string{"config", "debug-listen", "engine", "insecure-no-worker-token", "listen", "log-level", "max-batch",
		"models", "shutdown-grace", "time-scale", "upstream", "upstream-api-key", "worker-token", "worker-token-file"}},
	{[]string{"migrate"}, storeFlags},
	{[]string{"admin", "create-user"}, append([]string{"admin", "email", "password", "tier"}, storeFlags...)},
	{[]string{"admin", "topup"}, append([]string{"email", "usd"}, storeFlags...)},
	{[]string{"admin", "create-key"}, append([]string{"email", "name", "response-cache", "ttl"}, storeFlags...)},
	{[]string{"admin", "usage"}, append([]string{"email", "end-user", "limit"}, storeFlags...)},
	{[]string{"admin", "create-invite"}, append([]string{"note", "ttl", "uses"}, storeFlags...)},
	{[]string{"admin", "list-invites"}, append([]string{"limit"}, storeFlags...)},
	{[]string{"admin", "revoke-invite"}, append([]string{"id"}, storeFlags...)},
	{[]string{"bench"}, []string{"api-key", "concurrency", "config", "duration", "max-error-rate", "max-tokens", "model", "prompt",
		"protocol", "quiet", "requests", "stream", "target", "url"}},
	{[]string{"bench", "relay"}, []string{"answers", "api", "baseline-bin", "baseline-gateway-args", "baseline-worker-args", "bin", "burst", "burst-busy", "burst-delay", "burst-rate", "config",
		"cpus-load", "cpus-servers", "gateway-args", "hold", "hold-delay", "hold-for", "hold-opening", "learned-admission", "max-error-rate", "paths", "profile",
		"profile-seconds", "quiet", "streams", "token-delay", "tokens", "trials", "worker-args"}},
	{[]string{"bench", "mock"}, []string{"config", "listen", "model", "token-delay", "tokens"}},
	{[]string{"bench", "proxy"}, []string{"config", "listen", "upstream"}},
	{[]string{"bench", "users"}, []string{"attach-every", "config", "domain", "duration", "max-error-rate", "max-tokens", "model", "new-chat-every",
		"password", "quiet", "ramp", "think", "url", "users"}},
	{[]string{"models"}, []string{"api-key", "config", "gateway"}},
	{[]string{"workers"}, []string{"api-key", "config", "gateway"}},
	{[]string{"region-health"}, nil},
}

var flagLine = regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)

func listed(out string) []string {
	var names []string
	for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return names
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestHelp: --help of every command exits 0 and lists that command's flags
// and no other's; serve's testing-only flags only with --help-all.
func TestHelp(t *testing.T) {
	for _, tc := range helpCases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for _, h := range []string{"--help", "-h"} {
				code, out, errOut := runCLI(t, append(slices.Clone(tc.args), h)...)
				if code != 0 {
					t.Fatalf("%s: exit %d, stderr %s", h, code, errOut)
				}
				if !strings.HasPrefix(out, "usage: parley "+strings.Join(tc.args, " ")) {
					t.Errorf("%s: no usage line:\n%s", h, out)
				}
				got := listed(out)
				if tc.want != nil {
					want := slices.Sorted(slices.Values(tc.want))
					if !slices.Equal(got, want) {
						t.Errorf("%s lists\n%q\nwant\n%q", h, got, want)
					}
				}
				if slices.Contains(tc.args, "admin") && slices.Contains(got, "listen") {
					t.Errorf("an admin task lists serve's --listen")
				}
			}
		})
	}
}

// TestServeHelp: serve's help shows its flags by group, hides the
// testing-only ones unless --help-all, and shows no sentinel defaults.
func TestServeHelp(t *testing.T) {
	code, out, _ := runCLI(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, g := range []string{"network:", "stores:", "workers and models:", "limits and billing:", "attachments:", "cache:", "observability:"} {
		if !strings.Contains(out, "\n"+g+"\n") {
			t.Errorf("no group %q in serve --help", g)
		}
	}
	if strings.Contains(out, "--test-fault-file") || strings.Contains(out, "TESTING ONLY") {
		t.Error("serve --help lists the testing-only --test-fault-file")
	}
	if strings.Contains(out, "(default -1)") {
		t.Error("serve --help shows a -1 sentinel default")
	}
	for _, notServe := range []string{"--upstream", "--engine", "--bird-socket", "--concurrency"} {
		if strings.Contains(out, notServe+" ") || strings.Contains(out, notServe+"\n") {
			t.Errorf("serve --help lists another command's %s", notServe)
		}
	}
	_, all, _ := runCLI(t, "serve", "--help-all")
	shown, every := listed(out), listed(all)
	if !slices.Contains(every, "test-fault-file") {
		t.Error("serve --help-all does not list --test-fault-file")
	}
	// Every flag of serve's flag set is listed by --help-all, once.
	fs := newFlagSet("serve")
	cfgFlags(fs)
	var want []string
	fs.VisitAll(func(f *flag.Flag) { want = append(want, f.Name) })
	if !slices.Equal(every, want) {
		t.Errorf("serve --help-all lists\n%q\nwant\n%q", every, want)
	}
	if !slices.Contains(every, "test-batch-window") {
		t.Error("serve --help-all does not list --test-batch-window")
	}
	if len(shown) != len(every)-2 {
		t.Errorf("serve --help lists %d flags, --help-all %d: want the two testing ones hidden", len(shown), len(every))
	}
}

// TestTopHelp: parley --help lists every command and admin task, exit 0.
func TestTopHelp(t *testing.T) {
	for _, h := range []string{"--help", "-h", "help"} {
		code, out, _ := runCLI(t, h)
		if code != 0 {
			t.Fatalf("%s: exit %d", h, code)
		}
		for _, c := range commands {
			if !strings.Contains(out, "  "+c.name+" ") {
				t.Errorf("%s omits the command %s", h, c.name)
			}
		}
		for _, task := range []string{"create-user", "topup", "create-key", "usage", "relay", "mock", "proxy"} {
			if !strings.Contains(out, "    "+task+" ") {
				t.Errorf("%s omits %s", h, task)
			}
		}
	}
	code, out, _ := runCLI(t, "admin", "--help")
	if code != 0 || !strings.Contains(out, "create-key") || strings.Contains(out, "unknown task") {
		t.Errorf("admin --help: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "admin", "no-such-task"); code != 2 {
		t.Errorf("admin no-such-task: exit %d, want 2", code)
	}
	if code, _, errOut := runCLI(t, "admin", "create-key", "--listen", "x"); code == 0 || !strings.Contains(errOut, "-listen") {
		t.Errorf("admin create-key --listen: exit %d, %s", code, errOut)
	}
}

// cfgFlags registers serve's flags as serve does.
func cfgFlags(fs *flag.FlagSet) {
	config.ServeFlags(fs)
	config.AddConfigFlag(fs)
}

// TestVersion: parley --version and parley version print the build's
// version, and the real binary prints the one set at link time.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, _ := runCLI(t, args...)
		if code != 0 || out != "parley "+buildVersion()+"\n" || buildVersion() == "" {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "parley")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || string(out) != "parley v9.8.7-test\n" {
		t.Errorf("parley --version: %q %v", out, err)
	}
	// Serve's first log line and /healthz carry it.
	serve := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--sim-time-scale", "0")
	logs, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	lines := bufio.NewScanner(logs)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"version":"v9.8.7-test"`) {
		t.Errorf("serve's first log line: %q", lines.Text())
	}
	addr := ""
	for addr == "" && lines.Scan() {
		if m := regexp.MustCompile(`listening on (http://[0-9.:]+)`).FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	res, err := http.Get(addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if v := res.Header.Get("Parley-Version"); v != "v9.8.7-test" {
		t.Errorf("/healthz Parley-Version: %q", v)
	}
	go func() { _, _ = io.Copy(io.Discard, logs) }()

	// The real binary answers --help with exit 0 too, on stdout.
	out, err = exec.Command(bin, "admin", "create-key", "--help").Output()
	if err != nil || slices.Contains(listed(string(out)), "listen") || !slices.Contains(listed(string(out)), "ttl") {
		t.Errorf("parley admin create-key --help: %v\n%s", err, out)
	}
}

// TestConfigDoc: docs/config.md is what the flag sets say (go test
// ./server/cmd/parley -run TestConfigDoc -update rewrites it).
func TestConfigDoc(t *testing.T) {
	var b bytes.Buffer
	if err := writeConfigDoc(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "..", "docs", "config.md")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("docs/config.md differs from the flag sets: run make docs-config (go test ./server/cmd/parley -run TestConfigDoc -update)")
	}
}
