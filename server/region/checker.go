package region

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Checker runs the checks: observe, decide, apply on change, report. Every
// decision is one JSON line on Out and a set of metrics.
type Checker struct {
	Source  Source
	Decider *Decider
	// Bird applies routes; nil with DryRun, where decisions are only printed.
	Bird   *Bird
	DryRun bool
	// Out receives one JSON line per decision.
	Out    io.Writer
	Logger *slog.Logger
	// Interval is the time between checks (one second by default).
	Interval time.Duration

	mu       sync.Mutex
	applied  *Route // what BIRD was last made to announce; nil: not known
	applyErr error  // the last failure to apply, until one succeeds
	last     time.Time
	metrics  *checkerMetrics
}

// DecisionLine is the JSON line written for each decision.
type DecisionLine struct {
	Action  string   `json:"action"`
	Prepend *int     `json:"prepend,omitempty"`
	Reasons []string `json:"reasons"`
	Reports []string `json:"reports,omitempty"`
	Changed bool     `json:"changed"`
	// Applied says BIRD announces this route now (false in a dry run, or
	// when BIRD could not be reached: then Error says why).
	Applied bool      `json:"applied"`
	DryRun  bool      `json:"dry_run,omitempty"`
	Error   string    `json:"error,omitempty"`
	Time    time.Time `json:"time"`
	Target  int       `json:"target_prepend"`
	Origin  string    `json:"origin"`
	P95MS   float64   `json:"p95_ms"`
	// LatencyRequests and Requests are the window's request counts.
	LatencyRequests float64  `json:"latency_requests"`
	Requests        float64  `json:"requests"`
	ErrorRatio      float64  `json:"error_ratio"`
	QueueDepth      *float64 `json:"queue_depth,omitempty"`
}

type checkerMetrics struct {
	announced, prepend, target, inSync, p95, errorRatio, queue, lastCheck prometheus.Gauge
	decisions, changes                                                    *prometheus.CounterVec
	birdErrors, originFailures                                            prometheus.Counter
}

// Register adds the checker's metric families to reg.
func (c *Checker) Register(reg prometheus.Registerer) error {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &checkerMetrics{
		announced:  g("parley_region_route_announced", "1 while the decided route announces the anycast prefix, 0 while it is withdrawn."),
		prepend:    g("parley_region_route_prepend", "AS-path prepends of the decided route (0–3): the region's weight, lowered."),
		target:     g("parley_region_target_prepend", "Prepends the last check alone asked for, before hysteresis."),
		inSync:     g("parley_region_bird_in_sync", "1 when BIRD was last made to announce the decided route, 0 when applying it failed (or in a dry run)."),
		p95:        g("parley_region_http_p95_seconds", "HTTP latency p95 over the latency window, as the checker computed it."),
		errorRatio: g("parley_region_http_error_ratio", "Share of 5xx answers (backpressure excluded) over the error window."),
		queue:      g("parley_region_gpu_queue_depth", "Generations waiting for a GPU worker, summed over the region's gateways."),
		lastCheck:  g("parley_region_last_check_timestamp_seconds", "Unix time of the last check."),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_region_decisions_total",
			Help: "Checks decided, by action (announce, withdraw)."}, []string{"action"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_region_route_changes_total",
			Help: "Decisions that changed the route, by the new action."}, []string{"action"}),
		birdErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_region_bird_errors_total",
			Help: "Failures to apply a route to BIRD (the route stays as it was)."}),
		originFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_region_origin_check_failures_total",
			Help: "Origin checks failed (too few gateways ready, or none reachable)."}),
	}
	for _, col := range []prometheus.Collector{m.announced, m.prepend, m.target, m.inSync, m.p95, m.errorRatio, m.queue,
		m.lastCheck, m.decisions, m.changes, m.birdErrors, m.originFailures} {
		if err := reg.Register(col); err != nil {
			return err
		}
	}
	c.metrics = m
	return nil
}

// Applied tells the checker what BIRD announces at start (read back from
// the include file), so an unchanged decision is not applied again.
func (c *Checker) Applied(r Route) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied = &r
}

// Check makes one check and returns its decision.
func (c *Checker) Check(ctx context.Context) Decision {
	o := c.Source.Observe(ctx)
	d := c.Decider.Next(o)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = o.At
	line := DecisionLine{
		Action: d.Route.Action(), Reasons: d.Reasons, Reports: d.Reports, Changed: d.Changed, DryRun: c.DryRun,
		Time: o.At.UTC(), Target: d.Target, Origin: o.OriginDetail, LatencyRequests: o.LatencyRequests, Requests: o.Requests,
	}
	if d.Route.Announced {
		line.Prepend = &d.Route.Prepend
	}
	if o.LatencyRequests > 0 {
		line.P95MS = float64(o.P95.Microseconds()) / 1000
	}
	if o.Requests > 0 {
		line.ErrorRatio = o.Errors / o.Requests
	}
	if o.QueueKnown {
		line.QueueDepth = &o.QueueDepth
	}

	switch {
	case c.DryRun || c.Bird == nil:
	case c.applied != nil && *c.applied == d.Route:
		line.Applied = true
	default:
		// Changed, or not yet in BIRD (a failed apply is retried every check).
		if err := c.Bird.Apply(ctx, d.Route, d.Reasons); err != nil {
			c.applyErr = err
			line.Error = err.Error()
			c.Logger.Error("BIRD NOT UPDATED: the route stays as it was", "want", d.Route.String(), "err", err)
			if c.metrics != nil {
				c.metrics.birdErrors.Inc()
			}
		} else {
			r := d.Route
			c.applied, c.applyErr, line.Applied = &r, nil, true
			c.Logger.Info("route applied", "route", d.Route.String(), "reasons", d.Reasons)
		}
	}
	if d.Changed {
		c.Logger.Warn("route decision changed", "route", d.Route.String(), "reasons", d.Reasons)
	}
	c.report(o, d, line)
	if c.Out != nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // "p95 640ms > 500ms", as written
		_ = enc.Encode(line)
		_, _ = c.Out.Write(b.Bytes())
	}
	return d
}

func (c *Checker) report(o Observation, d Decision, line DecisionLine) {
	m := c.metrics
	if m == nil {
		return
	}
	m.announced.Set(b2f(d.Route.Announced))
	m.prepend.Set(float64(d.Route.Prepend))
	m.target.Set(float64(d.Target))
	m.inSync.Set(b2f(line.Applied))
	m.p95.Set(o.P95.Seconds())
	m.errorRatio.Set(line.ErrorRatio)
	m.queue.Set(o.QueueDepth)
	m.lastCheck.Set(float64(o.At.UnixNano()) / 1e9)
	m.decisions.WithLabelValues(d.Route.Action()).Inc()
	if d.Changed {
		m.changes.WithLabelValues(d.Route.Action()).Inc()
	}
	if o.Origin == OriginDown {
		m.originFailures.Inc()
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Run checks every Interval until ctx is done, or for n checks when n > 0.
func (c *Checker) Run(ctx context.Context, n int) {
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for i := 0; n <= 0 || i < n; i++ {
		checkCtx, cancel := context.WithTimeout(ctx, c.Interval)
		c.Check(checkCtx)
		cancel()
		if n > 0 && i == n-1 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Healthz answers 200 while checks run and BIRD has the decided route, and
// 503 when the last check is older than three intervals or BIRD could not
// be updated: the checker's own liveness, loud when it cannot do its job.
func (c *Checker) Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		last, applyErr := c.last, c.applyErr
		c.mu.Unlock()
		status, body := http.StatusOK, "ok\n"
		switch {
		case last.IsZero() || time.Since(last) > 3*c.Interval+5*time.Second:
			status, body = http.StatusServiceUnavailable, "no recent check\n"
		case applyErr != nil:
			status, body = http.StatusServiceUnavailable, "bird not updated: "+applyErr.Error()+"\n"
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}
