package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/region"
)

// TestRegionHealthPrometheus reads the same figures through a real
// Prometheus server (Debian package prometheus) that scrapes a real
// gateway: `region-health --prometheus-url --once --dry-run` sees the
// injected latency by PromQL and decides to weaken the route.
func TestRegionHealthPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed: the PromQL source test needs it (Debian package prometheus; .ci/run installs it with make region-deps)")
	}
	dir := t.TempDir()
	fault := filepath.Join(dir, "fault.json")
	writeFile(t, fault, `{"latency": "700ms"}`)
	gw := startServer(t, "--test-fault-file", fault)
	u, _ := url.Parse(gw.BaseURL)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	promAddr := ln.Addr().String()
	ln.Close()
	conf := filepath.Join(dir, "prometheus.yml")
	writeFile(t, conf, fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: parley\n    static_configs: [{targets: [%q]}]\n", u.Host))
	prom := exec.Command(bin, "--config.file", conf, "--storage.tsdb.path", filepath.Join(dir, "tsdb"),
		"--web.listen-address", promAddr)
	var promLog strings.Builder
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = prom.Process.Kill()
		_ = prom.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", promLog.String())
		}
	})

	ctx, stop := context.WithCancel(context.Background())
	var traffic sync.WaitGroup
	t.Cleanup(func() { stop(); traffic.Wait() })
	for range 6 {
		traffic.Add(1)
		go func() {
			defer traffic.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", gw.BaseURL+"/grpc.health.v1.Health/Check", strings.NewReader("{}"))
				req.Header.Set("Content-Type", "application/json")
				if res, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		}()
	}
	// Prometheus needs a few scrapes of slow answers before rate() sees them.
	waitFor(t, 30*time.Second, "Prometheus to scrape the gateway", func() bool {
		res, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(`sum(increase(parley_rpc_duration_seconds_count{job="parley"}[5s]))`))
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		_ = json.NewDecoder(res.Body).Decode(&r)
		return len(r.Data.Result) == 1 && r.Data.Result[0].Value[1] != "0"
	})

	cmd := exec.Command(parleyBin, "region-health", "--prometheus-url", "http://"+promAddr, "--prometheus-up-query", `sum(up{job="parley"})`,
		"--once", "--dry-run", "--interval", "500ms", "--latency-window", "5s", "--error-window", "5s", "--min-requests", "5",
		"--bird-include", filepath.Join(dir, "parley-anycast.conf"), "--listen", "")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("region-health --once: %v\n%s", err, out)
	}
	var d region.DecisionLine
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("one decision line expected, got %q: %v", out, err)
	}
	if d.Action != "announce" || d.Prepend == nil || *d.Prepend < 1 || !d.DryRun || d.Applied ||
		!strings.Contains(strings.Join(d.Reasons, "|"), "p95") || !strings.Contains(d.Origin, "1 gateways up") {
		t.Fatalf("decision %s", out)
	}
	t.Logf("decision by PromQL: %s", strings.TrimSpace(string(out)))
}
