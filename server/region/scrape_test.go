package region

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// fakeGateway serves /metrics with the families (names, labels, buckets)
// a parley gateway exports, and a /readyz whose answer the test sets.
type fakeGateway struct {
	*httptest.Server
	duration *prometheus.HistogramVec
	requests *prometheus.CounterVec
	rpc      *prometheus.CounterVec
	rejected *prometheus.CounterVec
	queue    *prometheus.GaugeVec
	readyz   atomic.Value // string: "ok", "workers" (only workers failing), "store", "down"
}

func newFakeGateway(t *testing.T) *fakeGateway {
	g := &fakeGateway{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: httpDuration,
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"route"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: httpRequests}, []string{"route", "status"}),
		rpc:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: rpcRequests}, []string{"procedure", "code"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: rejections}, []string{"reason"}),
		queue:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: schedulerQueue}, []string{"model"}),
	}
	g.readyz.Store("ok")
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.duration, g.requests, g.rpc, g.rejected, g.queue)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		switch g.readyz.Load().(string) {
		case "ok":
			w.Write([]byte(`{"workers":"ok","relational":"ok"}`))
		case "workers":
			w.WriteHeader(503)
			w.Write([]byte(`{"workers":"scheduler: no worker ready","relational":"ok"}`))
		case "store":
			w.WriteHeader(503)
			w.Write([]byte(`{"workers":"ok","relational":"connection refused"}`))
		default:
			w.WriteHeader(500)
		}
	})
	g.Server = httptest.NewServer(mux)
	t.Cleanup(g.Close)
	return g
}

// serve records n answers of route taking d, with status.
func (g *fakeGateway) serve(route string, n int, d time.Duration, status string) {
	for range n {
		g.duration.WithLabelValues(route).Observe(d.Seconds())
		g.requests.WithLabelValues(route, status).Inc()
	}
}

func TestGatewaysWindows(t *testing.T) {
	a, b := newFakeGateway(t), newFakeGateway(t)
	now := time.Unix(1_700_000_000, 0)
	src := &Gateways{URLs: []string{a.URL, b.URL}, Client: &http.Client{Timeout: 2 * time.Second},
		LatencyWindow: 10 * time.Second, ErrorWindow: 10 * time.Second, IgnoreChecks: []string{"workers"},
		LatencyExclude: regexp.MustCompile(DefaultLatencyExclude), ErrorExclude: regexp.MustCompile(DefaultErrorExclude),
		QueueMetrics: []string{schedulerQueue}, Now: func() time.Time { return now }}
	ctx := context.Background()
	tick := func() Observation { now = now.Add(time.Second); return src.Observe(ctx) }

	// Before the gateways start: lots of fast history that the window must not count.
	a.serve("openai_models", 1000, 10*time.Millisecond, "200")
	o := tick()
	if o.Origin != OriginUp || o.LatencyRequests != 0 || o.Requests != 0 {
		t.Fatalf("first check has no window yet: %+v", o)
	}
	// Slow answers on both; generations and probes are slow too but excluded.
	a.serve("openai_models", 60, 700*time.Millisecond, "200")
	b.serve("openai_models", 40, 700*time.Millisecond, "200")
	a.serve("openai_chat_completions", 50, 20*time.Second, "200")
	a.serve("readyz", 50, 3*time.Second, "503")
	o = tick()
	if o.LatencyRequests != 100 || o.P95 < 500*time.Millisecond || o.P95 > 2048*time.Millisecond {
		t.Fatalf("slow window: %d requests, p95 %v", int(o.LatencyRequests), o.P95)
	}
	if o.Requests != 150 || o.Errors != 0 {
		t.Fatalf("requests %v errors %v (readyz's 503s are not errors)", o.Requests, o.Errors)
	}
	// 5xx: internal errors count, the schedulers' backpressure does not.
	a.rpc.WithLabelValues("/parley.v1.ModelService/ListModels", "ok").Add(90)
	a.rpc.WithLabelValues("/parley.v1.ModelService/ListModels", "internal").Add(4)
	a.rpc.WithLabelValues("/parley.v1.ChatService/Complete", "unavailable").Add(6)
	a.rejected.WithLabelValues("queue_full").Add(6)
	a.rpc.WithLabelValues("/parley.v1.ModelService/ListModels", "invalid_argument").Add(10)
	a.queue.WithLabelValues("sim-small").Set(700)
	b.queue.WithLabelValues("sim-small").Set(500)
	o = tick()
	if o.Requests != 260 || o.Errors != 4 {
		t.Fatalf("requests %v errors %v, want 260 and 4", o.Requests, o.Errors)
	}
	if !o.QueueKnown || o.QueueDepth != 1200 {
		t.Fatalf("queue %v %v", o.QueueKnown, o.QueueDepth)
	}
	p, reasons, reports := DefaultRules().Target(o)
	if p < 1 || len(reports) != 1 {
		t.Fatalf("target %d %q %q", p, reasons, reports)
	}

	// The window slides: ten quiet seconds later nothing of that is left.
	for range 10 {
		o = tick()
	}
	if o.LatencyRequests != 0 || o.Requests != 0 {
		t.Fatalf("window did not slide: %+v", o)
	}
	// Fast answers now.
	a.serve("openai_models", 100, 3*time.Millisecond, "200")
	o = tick()
	if o.LatencyRequests != 100 || o.P95 > 8*time.Millisecond {
		t.Fatalf("fast window: %v requests p95 %v", o.LatencyRequests, o.P95)
	}
}

func TestGatewaysOrigin(t *testing.T) {
	a, b := newFakeGateway(t), newFakeGateway(t)
	src := &Gateways{URLs: []string{a.URL, b.URL}, Client: &http.Client{Timeout: time.Second},
		LatencyWindow: time.Minute, ErrorWindow: time.Minute, IgnoreChecks: []string{"workers"}}
	ctx := context.Background()
	check := func(sa, sb string, want Origin, detail string) {
		t.Helper()
		a.readyz.Store(sa)
		b.readyz.Store(sb)
		o := src.Observe(ctx)
		if o.Origin != want || !strings.Contains(o.OriginDetail, detail) {
			t.Errorf("readyz %s/%s: origin %v %q, want %v %q", sa, sb, o.Origin, o.OriginDetail, want, detail)
		}
	}
	check("ok", "ok", OriginUp, "2/2 gateways ready")
	check("workers", "workers", OriginUp, "2/2 gateways ready") // no GPUs: backpressure, not BGP
	check("store", "ok", OriginUp, "1/2 gateways ready")
	check("store", "down", OriginDown, "0/2 gateways ready")
	check("store", "store", OriginDown, "relational: connection refused")
	src.MinReady = 2
	check("ok", "store", OriginDown, "1/2")
	// Nothing listening: failed checks.
	a.Close()
	b.Close()
	src.MinReady = 1
	o := src.Observe(ctx)
	if o.Origin != OriginDown || !strings.Contains(o.OriginDetail, "0/2 gateways ready") {
		t.Errorf("unreachable gateways: %v %q", o.Origin, o.OriginDetail)
	}
}

func TestCounterResetIsAnIncrease(t *testing.T) {
	t0 := time.Unix(0, 0)
	h := []sample{
		{at: t0, requests: 500, errors: 10},
		{at: t0.Add(time.Second), requests: 40, errors: 2}, // restarted
	}
	d := delta(h, t0, func(s sample) map[float64]float64 { return map[float64]float64{0: s.requests, 1: s.errors} })
	if d[0] != 40 || d[1] != 2 {
		t.Fatalf("delta after a restart %v", d)
	}
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		buckets map[float64]float64
		q, want float64
	}{
		{map[float64]float64{0.1: 0, 0.5: 100, 1: 100, inf: 100}, 0.95, 0.48},
		{map[float64]float64{0.1: 50, 0.5: 90, 1: 100, inf: 100}, 0.95, 0.75},
		{map[float64]float64{0.1: 0, 0.5: 0, inf: 10}, 0.95, 0.5}, // past the last bound
		{map[float64]float64{inf: 0}, 0.95, 0},
	}
	for _, c := range cases {
		if got := quantile(c.q, c.buckets); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("quantile(%v, %v) = %v, want %v", c.q, c.buckets, got, c.want)
		}
	}
}
