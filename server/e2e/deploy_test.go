package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// conditionalMetrics are exported only in some modes or after some event,
// so a short run of `parley serve` does not show them; the test checks
// that the server's sources declare them instead.
var conditionalMetrics = map[string]string{
	"parley_scheduler_queue_depth":       "a series appears once a generation has waited for a worker",
	"parley_scheduler_rejections_total":  "a series appears once a generation was refused",
	"parley_usage_outbox_backlog":        "scale mode with --clickhouse-url",
	"parley_usage_outbox_oldest_seconds": "scale mode with --clickhouse-url",
	"parley_usage_relay_errors_total":    "scale mode with --clickhouse-url",
	"parley_scheduler_pool_spills_total": "a series appears once a generation spilled to the next pool",
}

// TestDeployMetricNames checks deploy/prometheus/alerts.yml,
// deploy/grafana/region-health.json and deploy/k8s/autoscale.yaml against what the real binaries
// export: every parley_* name either comes out of a running gateway's (or
// region-health checker's) /metrics, or is declared in the sources and
// listed above with why it did not show. It also runs promtool on the
// rules, their unit tests, and every dashboard query.
func TestDeployMetricNames(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed: the deploy/ checks need it (Debian package prometheus; .ci/run installs it with make region-deps)")
	}
	root, _ := filepath.Abs("../..")
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	rulesFile := filepath.Join(root, "deploy/prometheus/alerts.yml")
	run("check", "rules", rulesFile)
	run("test", "rules", filepath.Join(root, "deploy/prometheus/alerts_test.yml"))

	// Every expression: the rules' and the dashboard's.
	var exprs []string
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err = os.ReadFile(filepath.Join(root, "deploy/grafana/region-health.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var dashExprs []string
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			dashExprs = append(dashExprs, q.Expr)
		}
	}
	exprs = append(exprs, dashExprs...)
	// The worker autoscaler's query (deploy/k8s/autoscale.yaml, a KEDA
	// ScaledObject): checked by promtool with the dashboard's.
	var scaled struct {
		Kind string `yaml:"kind"`
		Spec struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			Triggers []struct {
				Type     string            `yaml:"type"`
				Metadata map[string]string `yaml:"metadata"`
			} `yaml:"triggers"`
		} `yaml:"spec"`
	}
	data, err = os.ReadFile(filepath.Join(root, "deploy/k8s/autoscale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &scaled); err != nil {
		t.Fatalf("autoscale.yaml: %v", err)
	}
	if scaled.Kind != "ScaledObject" || scaled.Spec.ScaleTargetRef.Kind != "StatefulSet" || scaled.Spec.ScaleTargetRef.Name != "parley-worker" ||
		len(scaled.Spec.Triggers) != 1 || scaled.Spec.Triggers[0].Type != "prometheus" || scaled.Spec.Triggers[0].Metadata["query"] == "" {
		t.Fatalf("autoscale.yaml: want a ScaledObject on StatefulSet parley-worker with one prometheus trigger, got %+v", scaled)
	}
	if worker, _ := os.ReadFile(filepath.Join(root, "deploy/k8s/worker.yaml")); !strings.Contains(string(worker), "kind: StatefulSet\nmetadata:\n  name: parley-worker\n") {
		t.Error("autoscale.yaml scales StatefulSet parley-worker, which deploy/k8s/worker.yaml no longer defines")
	}
	dashExprs = append(dashExprs, scaled.Spec.Triggers[0].Metadata["query"])
	exprs = append(exprs, scaled.Spec.Triggers[0].Metadata["query"])
	// promtool parses the dashboard's queries as recording rules (with the
	// dashboard's variables filled in).
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var recs []rule
	for _, e := range dashExprs {
		recs = append(recs, rule{Record: "dashboard:query", Expr: strings.ReplaceAll(e, "$job", "parley")})
	}
	out, _ := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": recs}}})
	dashRules := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(dashRules, out, 0o644); err != nil {
		t.Fatal(err)
	}
	run("check", "rules", dashRules)

	// What the real binaries export: a gateway that has served an RPC, an
	// OpenAI stream and a billed request, and a checker watching it.
	s := startServer(t)
	s.admin(t, "create-user", "--email", "metrics@example.com", "--password", "metrics password")
	s.admin(t, "topup", "--email", "metrics@example.com", "--usd", "5")
	key := strings.TrimSpace(s.admin(t, "create-key", "--email", "metrics@example.com"))
	req, _ := http.NewRequest("POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(
		`{"model":"sim-small","messages":[{"role":"user","content":"hello"}],"max_tokens":16,"stream":true}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("chat completion: %v %v", res, err)
	} else {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	if res, err := http.Post(s.BaseURL+"/grpc.health.v1.Health/Check", "application/json", strings.NewReader("{}")); err != nil || res.StatusCode != 200 {
		t.Fatalf("health check RPC: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	checker := startProcess(t, "region-health", "--gateways", s.BaseURL, "--dry-run", "--listen", "127.0.0.1:0", "--interval", "200ms")
	time.Sleep(500 * time.Millisecond) // a check or two
	exported := map[string]bool{}
	for _, base := range []string{s.BaseURL, checker.BaseURL} {
		res, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for name, f := range families {
			exported[name] = true
			if f.GetType().String() == "HISTOGRAM" {
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					exported[name+suffix] = true
				}
			}
		}
	}

	// Every hold of the finished request was settled.
	res, err := http.Get(s.BaseURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), "\nparley_billing_holds_outstanding 0\n") {
		t.Errorf("holds outstanding after the request ended: %s", regexp.MustCompile(`(?m)^parley_billing_holds_outstanding .*$`).Find(page))
	}

	for _, want := range []string{`parley_generation_ttft_seconds_count{model="sim-small"} 1`,
		`parley_generation_tokens_total{kind="completion",model="sim-small"} 16`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("after one stream of 16 tokens the gateway lacks %s", want)
		}
	}

	sources := serverSources(t, filepath.Join(root, "server"))
	nameRE := regexp.MustCompile(`\bparley_[a-z0-9_]+`)
	referenced := map[string]bool{}
	for _, e := range exprs {
		for _, name := range nameRE.FindAllString(e, -1) {
			referenced[name] = true
		}
	}
	for name := range referenced {
		switch {
		case exported[name]:
		case conditionalMetrics[name] != "":
			if !strings.Contains(sources, `"`+name+`"`) {
				t.Errorf("%s (%s) is not declared anywhere in server/", name, conditionalMetrics[name])
			}
		default:
			t.Errorf("%s is referenced by deploy/ but neither exported by parley serve or region-health nor listed as conditional", name)
		}
	}
	t.Logf("%d metric names in %d expressions checked", len(referenced), len(exprs))
}

// serverSources is the text of every non-test Go file under dir.
func serverSources(t *testing.T, dir string) string {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
