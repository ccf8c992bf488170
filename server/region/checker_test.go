package region

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// replay is a Source that plays recorded observations back.
type replay struct {
	obs []obs
	i   int
}

func (r *replay) Observe(context.Context) Observation {
	o := r.obs[min(r.i, len(r.obs)-1)].observation()
	o.At = time.Now()
	r.i++
	return o
}

func lines(t *testing.T, out *bytes.Buffer) []DecisionLine {
	t.Helper()
	var ls []DecisionLine
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var d DecisionLine
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("decision line %q: %v", l, err)
		}
		ls = append(ls, d)
	}
	return ls
}

func TestCheckerAppliesOnlyChanges(t *testing.T) {
	b, _ := startBird(t)
	rules := DefaultRules()
	var out bytes.Buffer
	c := &Checker{Source: &replay{obs: series(repeat(5, healthy), repeat(5, slow))}, Decider: NewDecider(rules, Route{Announced: true}),
		Bird: b, Out: &out, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Interval: time.Second}
	reg := prometheus.NewRegistry()
	if err := c.Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Check(ctx) // BIRD's state is not known yet: applied once
	info, _ := os.Stat(b.Include)
	for range 4 {
		c.Check(ctx)
	}
	if after, _ := os.Stat(b.Include); !after.ModTime().Equal(info.ModTime()) {
		t.Fatal("an unchanged route was applied again")
	}
	for range 5 {
		c.Check(ctx)
	}
	ls := lines(t, &out)
	if len(ls) != 10 {
		t.Fatalf("%d decision lines, want 10", len(ls))
	}
	last := ls[len(ls)-1]
	if last.Action != "announce" || last.Prepend == nil || *last.Prepend != 1 || !last.Applied || last.Reasons[0] != "p95 640ms > 500ms" {
		t.Fatalf("last decision %+v", last)
	}
	if r, _, _ := b.Read(); r != (Route{Announced: true, Prepend: 1}) {
		t.Fatalf("bird has %+v", r)
	}
	if got := value(c.metrics.changes.WithLabelValues("announce")); got != 1 {
		t.Errorf("route changes %v, want 1", got)
	}
	if got := value(c.metrics.prepend); got != 1 {
		t.Errorf("prepend gauge %v", got)
	}
	rec := httptest.NewRecorder()
	c.Healthz().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Errorf("healthz %d %s", rec.Code, rec.Body)
	}
}

func TestCheckerBirdUnreachable(t *testing.T) {
	dir := t.TempDir()
	b := &Bird{Socket: filepath.Join(dir, "missing.ctl"), Include: filepath.Join(dir, "parley-anycast.conf"), Timeout: time.Second}
	if err := os.WriteFile(b.Include, b.Render(Route{Announced: true}, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, logs bytes.Buffer
	c := &Checker{Source: &replay{obs: repeat(4, down)}, Decider: NewDecider(DefaultRules(), Route{Announced: true}),
		Bird: b, Out: &out, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Interval: time.Second}
	if err := c.Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	c.Applied(Route{Announced: true})
	for range 4 {
		c.Check(context.Background())
	}
	ls := lines(t, &out)
	if ls[1].Action != "announce" || !ls[1].Applied {
		t.Fatalf("before the third failure: %+v", ls[1])
	}
	last := ls[3]
	if last.Action != "withdraw" || last.Applied || !strings.Contains(last.Error, "control socket") {
		t.Fatalf("withdraw with BIRD unreachable: %+v", last)
	}
	if r, _, _ := b.Read(); r != (Route{Announced: true}) {
		t.Fatalf("the file must keep the route BIRD has: %+v", r)
	}
	if !strings.Contains(logs.String(), "BIRD NOT UPDATED") {
		t.Errorf("no loud log line: %s", logs.String())
	}
	if got := value(c.metrics.birdErrors); got != 2 {
		t.Errorf("bird errors %v, want 2 (one per check since the decision)", got)
	}
	rec := httptest.NewRecorder()
	c.Healthz().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "bird not updated") {
		t.Errorf("healthz %d %s", rec.Code, rec.Body)
	}
}

// value reads a gauge's or counter's current value.
func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.Counter.GetValue()
}
