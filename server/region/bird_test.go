package region

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startBird runs a real BIRD 2 (no network needed: a static route and the
// export filter of deploy/README.md, no BGP) on a socket in a temporary
// directory, reading the include file the checker writes.
func startBird(t *testing.T) (*Bird, string) {
	t.Helper()
	bin, err := exec.LookPath("bird")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/bird"); err != nil {
			t.Skip("bird not installed (Debian package bird2; .ci/run installs it with make region-deps)")
		}
		bin = "/usr/sbin/bird"
	}
	dir := t.TempDir()
	b := &Bird{Socket: filepath.Join(dir, "bird.ctl"), Include: filepath.Join(dir, "parley-anycast.conf"), Timeout: 5 * time.Second}
	if err := os.WriteFile(b.Include, b.Render(Route{}, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "bird.conf")
	if err := os.WriteFile(conf, []byte(`router id 10.255.0.1;
include "`+b.Include+`";
protocol device {}
protocol static anycast { ipv4; route 192.0.2.0/24 blackhole; }
filter anycast_out {
  if net != 192.0.2.0/24 then reject;
  if PARLEY_ANNOUNCE = 0 then reject;
  if PARLEY_PREPEND >= 1 then bgp_path.prepend(64500);
  accept;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "bird.pid")
	out, err := exec.Command(bin, "-c", conf, "-s", b.Socket, "-P", pidFile).CombinedOutput()
	if err != nil {
		t.Fatalf("starting bird: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if pid, err := os.ReadFile(pidFile); err == nil {
			_ = exec.Command("kill", strings.TrimSpace(string(pid))).Run()
		}
	})
	for range 50 {
		if _, err := b.Command(context.Background(), "show status"); err == nil {
			return b, conf
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("bird did not open its control socket")
	return nil, ""
}

func TestBirdApply(t *testing.T) {
	b, conf := startBird(t)
	ctx := context.Background()

	if err := b.Apply(ctx, Route{Announced: true, Prepend: 2}, []string{"p95 640ms > 500ms"}); err != nil {
		t.Fatal(err)
	}
	r, ok, err := b.Read()
	if err != nil || !ok || r != (Route{Announced: true, Prepend: 2}) {
		t.Fatalf("read back %+v %v %v", r, ok, err)
	}
	status, err := b.Command(ctx, "show status")
	if err != nil || !strings.Contains(status, "Daemon is up and running") {
		t.Fatalf("show status: %v %q", err, status)
	}

	// BIRD refuses its configuration (the operator broke bird.conf): the
	// error says so and the file goes back to what BIRD still runs.
	good, _ := os.ReadFile(conf)
	if err := os.WriteFile(conf, append(good, []byte("this is not bird config\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	err = b.Apply(ctx, Route{}, []string{"origin failed"})
	var refused *BirdError
	if !errors.As(err, &refused) || refused.Code < 8000 || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("broken config: got %v", err)
	}
	if r, _, _ := b.Read(); r != (Route{Announced: true, Prepend: 2}) {
		t.Fatalf("file not restored: %+v", r)
	}
	if err := os.WriteFile(conf, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(ctx, Route{}, nil); err != nil {
		t.Fatal(err)
	}

	// BIRD unreachable: an error, and the file keeps the last applied route.
	down := &Bird{Socket: filepath.Join(t.TempDir(), "none.ctl"), Include: b.Include}
	if err := down.Apply(ctx, Route{Announced: true}, nil); err == nil || !strings.Contains(err.Error(), "control socket") {
		t.Fatalf("unreachable bird: %v", err)
	}
	if r, _, _ := b.Read(); r != (Route{}) {
		t.Fatalf("file changed although bird was unreachable: %+v", r)
	}
}
