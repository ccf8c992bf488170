package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRegionHealthDrivesBGP is docs/scaling.md's region rules for real: two BIRD 2 daemons
// in two network namespaces, peered by BGP over a veth pair; `parley
// region-health` (the real binary) watches two real gateways and drives the
// first one; the test reads the second one's table and sees the anycast
// prefix's AS path grow under injected latency, shrink back, disappear when
// the gateways die and come back when they return — over one BGP session
// that is never reset.
func TestRegionHealthDrivesBGP(t *testing.T) {
	bird, birdc := lookBird(t)
	n := newNetns(t)

	dir := t.TempDir()
	include := filepath.Join(dir, "parley-anycast.conf")
	// The operator's first include: withdrawn until the checker knows better.
	writeFile(t, include, "define PARLEY_ANNOUNCE = 0;\ndefine PARLEY_PREPEND = 0;\n")
	// The edge runs the example of deploy/bird/bird.conf, with this test's
	// addresses, include file and one transit neighbour: the peer.
	example, err := os.ReadFile("../../deploy/bird/bird.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(example)
	for _, r := range [][2]string{
		{"router id 198.51.100.1;", "router id " + n.addrA + ";"},
		{"log syslog all;", ""},
		{`include "/etc/bird/parley/anycast.conf";`, fmt.Sprintf("include %q;", include)},
		{"protocol bgp transit_a from transit { neighbor 203.0.113.1 as 64496; }",
			fmt.Sprintf("protocol bgp transit_a from transit { neighbor %s as 64501; hold time 6; keepalive time 2; connect retry time 1; }", n.addrB)},
		{"protocol bgp transit_b from transit { neighbor 203.0.113.5 as 64497; }", ""},
	} {
		if !strings.Contains(conf, r[0]) {
			t.Fatalf("deploy/bird/bird.conf no longer has %q: update this test with it", r[0])
		}
		conf = strings.Replace(conf, r[0], r[1], 1)
	}
	edge := n.startBird(t, bird, "a", conf)
	peer := n.startBird(t, bird, "b", fmt.Sprintf(`router id %[2]s;
protocol device {}
protocol bgp edge {
  local %[2]s as 64501; neighbor %[1]s as 64500;
  hold time 6; keepalive time 2; connect retry time 1;
  ipv4 { import all; export none; };
}
`, n.addrA, n.addrB))
	route := func() (path string, ok bool) {
		out, err := exec.Command(birdc, "-s", peer, "show", "route", "all").CombinedOutput()
		if err != nil {
			t.Fatalf("birdc show route all: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`(?s)192\.0\.2\.0/24 .*?BGP\.as_path: ([0-9 ]*)`).FindSubmatch(out)
		if m == nil {
			return "", false
		}
		return strings.TrimSpace(string(m[1])), true
	}
	session := func() string { // "Established since HH:MM:SS.mmm"
		out, _ := exec.Command(birdc, "-s", peer, "show", "protocols", "edge").CombinedOutput()
		f := strings.Fields(string(out)[strings.LastIndex(string(out), "edge"):])
		if len(f) < 6 {
			return string(out)
		}
		return f[5] + " since " + f[4]
	}
	// Its "since" can move by a millisecond just after the session comes
	// up (BIRD notes the channel's own state change too): it is read once
	// it holds still, so that a later reset is told from that.
	var established string
	waitFor(t, 20*time.Second, "the BGP session to come up and settle", func() bool {
		established = session()
		if !strings.HasPrefix(established, "Established") {
			return false
		}
		time.Sleep(300 * time.Millisecond)
		return session() == established
	})
	if _, ok := route(); ok {
		t.Fatal("the prefix is announced before the checker said so")
	}

	// Two gateways with the fault switch, and clients keeping them busy.
	faults := []string{filepath.Join(dir, "fault-1.json"), filepath.Join(dir, "fault-2.json")}
	gw := []*server{startServer(t, "--test-fault-file", faults[0]), startServer(t, "--test-fault-file", faults[1])}
	ctx, stopTraffic := context.WithCancel(context.Background())
	var traffic sync.WaitGroup
	t.Cleanup(func() { stopTraffic(); traffic.Wait() })
	for _, g := range gw {
		for range 4 {
			traffic.Add(1)
			go func(base string) {
				defer traffic.Done()
				client := &http.Client{Timeout: 5 * time.Second}
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, "POST", base+"/grpc.health.v1.Health/Check", strings.NewReader("{}"))
					req.Header.Set("Content-Type", "application/json")
					if res, err := client.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
					} else {
						time.Sleep(50 * time.Millisecond) // the gateway is down
					}
					time.Sleep(20 * time.Millisecond)
				}
			}(g.BaseURL)
		}
	}

	checker := startProcess(t, "region-health",
		"--gateways", gw[0].BaseURL+","+gw[1].BaseURL,
		"--bird-socket", edge, "--bird-include", include, "--listen", "127.0.0.1:0",
		"--interval", "500ms", "--latency-window", "3s", "--error-window", "3s", "--min-requests", "5",
		"--fail-after", "3", "--recover-after", "4", "--raise-after", "3", "--lower-after", "8")
	start := time.Now()
	waitFor(t, 20*time.Second, "the checker to announce the prefix", func() bool { p, ok := route(); return ok && p == "64500" })
	t.Logf("announced %v after the checker started", time.Since(start).Round(time.Millisecond))

	// Latency: p95 over 500 ms → the region is weakened by prepending.
	for _, f := range faults {
		writeFile(t, f, `{"latency": "700ms"}`)
	}
	start = time.Now()
	waitFor(t, 20*time.Second, "the AS path to grow under 700 ms of latency", func() bool {
		p, ok := route()
		return ok && len(strings.Fields(p)) >= 2
	})
	p, _ := route()
	t.Logf("AS path %q %v after latency was injected", p, time.Since(start).Round(time.Millisecond))

	// Latency gone: once the window has slid and eight checks agree, back to one.
	for _, f := range faults {
		writeFile(t, f, `{}`)
	}
	start = time.Now()
	waitFor(t, 30*time.Second, "the AS path to shrink back", func() bool { p, ok := route(); return ok && p == "64500" })
	t.Logf("AS path back to 64500 %v after the latency was removed", time.Since(start).Round(time.Millisecond))

	// 5xx: a third of the answers fail → weakened again, then restored.
	for _, f := range faults {
		writeFile(t, f, `{"error_ratio": 0.3}`)
	}
	start = time.Now()
	waitFor(t, 20*time.Second, "the AS path to grow under 30 % of 5xx", func() bool {
		p, ok := route()
		return ok && len(strings.Fields(p)) >= 2
	})
	p, _ = route()
	t.Logf("AS path %q %v after 5xx were injected", p, time.Since(start).Round(time.Millisecond))
	for _, f := range faults {
		writeFile(t, f, `{}`)
	}
	waitFor(t, 30*time.Second, "the AS path to shrink back after the 5xx", func() bool { p, ok := route(); return ok && p == "64500" })

	// The gateways die: three failed checks withdraw the prefix.
	ports := []string{}
	for _, g := range gw {
		u, _ := url.Parse(g.BaseURL)
		ports = append(ports, u.Host)
		g.kill()
	}
	start = time.Now()
	waitFor(t, 15*time.Second, "the prefix to be withdrawn", func() bool { _, ok := route(); return !ok })
	t.Logf("withdrawn %v after the gateways died", time.Since(start).Round(time.Millisecond))

	// They come back on the same addresses: four good checks announce again.
	start = time.Now()
	for i := range gw {
		startServer(t, "--listen", ports[i], "--test-fault-file", faults[i])
	}
	waitFor(t, 20*time.Second, "the prefix to come back", func() bool { p, ok := route(); return ok && p == "64500" })
	t.Logf("announced again %v after the gateways were restarted", time.Since(start).Round(time.Millisecond))

	if got := session(); got != established {
		t.Errorf("the BGP session was reset: %s, then %s", established, got)
	}
	// The checker's own endpoints.
	body := []byte(metricsBody(t, checker.BaseURL))
	for _, want := range []string{`parley_region_route_changes_total{action="withdraw"} 1`,
		"parley_region_route_announced 1", "parley_region_route_prepend 0", "parley_region_bird_in_sync 1"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("checker metrics lack %q", want)
		}
	}
	// Announced; weakened and restored twice (one to three prepend steps
	// each way, as the raise and lower rules allow); announced again: 6 to
	// 14 changes. More would be flapping.
	m := regexp.MustCompile(`parley_region_route_changes_total\{action="announce"\} (\d+)`).FindSubmatch(body)
	if m == nil {
		t.Errorf("checker metrics lack parley_region_route_changes_total{action=\"announce\"}")
	} else if n, _ := strconv.Atoi(string(m[1])); n < 6 || n > 14 {
		t.Errorf("announce changes %d, want 6 to 14 (checker log above)", n)
	} else {
		t.Logf("%d announce changes", n)
	}
	if res, err := http.Get(checker.BaseURL + "/healthz"); err != nil || res.StatusCode != 200 {
		t.Errorf("checker healthz: %v %v", res, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lookBird finds BIRD 2's daemon and client (Debian package bird2).
func lookBird(t *testing.T) (bird, birdc string) {
	for _, name := range []string{"bird", "birdc"} {
		p, err := exec.LookPath(name)
		if err != nil {
			p = "/usr/sbin/" + name
			if _, err := os.Stat(p); err != nil {
				t.Skipf("%s not installed: the region test needs BIRD 2 (Debian package bird2; .ci/run installs it with make region-deps)", name)
			}
		}
		if name == "bird" {
			bird = p
		} else {
			birdc = p
		}
	}
	return bird, birdc
}

// netns is two network namespaces joined by a veth pair, each end with
// one address of a /30.
type netns struct {
	a, b         string
	addrA, addrB string
}

func newNetns(t *testing.T) *netns {
	id := os.Getpid() % 100000
	n := &netns{a: fmt.Sprintf("parley-rh%d-a", id), b: fmt.Sprintf("parley-rh%d-b", id),
		addrA: fmt.Sprintf("10.%d.%d.1", 200+id%50, id%250), addrB: fmt.Sprintf("10.%d.%d.2", 200+id%50, id%250)}
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network namespaces cannot be made here: no ip command (iproute2)")
	}
	va, vb := fmt.Sprintf("prh%da", id), fmt.Sprintf("prh%db", id)
	// Leftovers of a run of this process id that was killed: ours by name.
	_ = ip("netns", "del", n.a)
	_ = ip("netns", "del", n.b)
	_ = ip("link", "del", va)
	if err := ip("netns", "add", n.a); err != nil {
		t.Skipf("network namespaces cannot be made here (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { _ = ip("netns", "del", n.a) })
	if err := ip("netns", "add", n.b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ip("netns", "del", n.b) })
	for _, args := range [][]string{
		{"link", "add", va, "type", "veth", "peer", "name", vb},
		{"link", "set", va, "netns", n.a}, {"link", "set", vb, "netns", n.b},
		{"-n", n.a, "addr", "add", n.addrA + "/30", "dev", va}, {"-n", n.b, "addr", "add", n.addrB + "/30", "dev", vb},
		{"-n", n.a, "link", "set", va, "up"}, {"-n", n.b, "link", "set", vb, "up"},
		{"-n", n.a, "link", "set", "lo", "up"}, {"-n", n.b, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// startBird runs BIRD with conf in namespace a or b and returns its
// control socket.
func (n *netns) startBird(t *testing.T, bird, which, conf string) string {
	t.Helper()
	dir := t.TempDir()
	ns := n.a
	if which == "b" {
		ns = n.b
	}
	path, sock, pid := filepath.Join(dir, "bird.conf"), filepath.Join(dir, "bird.ctl"), filepath.Join(dir, "bird.pid")
	writeFile(t, path, conf)
	if out, err := exec.Command("ip", "netns", "exec", ns, bird, "-c", path, "-s", sock, "-P", pid).CombinedOutput(); err != nil {
		t.Fatalf("starting bird in %s: %v\n%s", ns, err, out)
	}
	t.Cleanup(func() {
		if p, err := os.ReadFile(pid); err == nil {
			_ = exec.Command("kill", strings.TrimSpace(string(p))).Run()
		}
	})
	waitFor(t, 10*time.Second, "bird's control socket", func() bool { _, err := os.Stat(sock); return err == nil })
	return sock
}
