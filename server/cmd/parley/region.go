package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/region"
)

// regionHealth runs the region's health checker (seed 000 §3.5): it reads
// the region's gateways (or Prometheus) once an interval and drives the
// edge router's anycast announcement through BIRD (deploy/README.md).
func regionHealth(ctx context.Context, args []string, stdout, logOut io.Writer) error {
	fs := flag.NewFlagSet("region-health", flag.ContinueOnError)
	var (
		gateways, queueMetrics, ignoreChecks                  []string
		promURL, promSelector, upQuery, listen, logLevel      string
		birdSocket, birdInclude, latencyExclude, errorExclude string
		dryRun, once                                          bool
		interval, exitAfter, checkTimeout, latencyWin, errWin time.Duration
		minReady                                              int
	)
	rules := region.DefaultRules()
	list := func(dst *[]string) func(string) error {
		return func(s string) error {
			*dst = nil
			for _, p := range strings.Split(s, ",") {
				if p = strings.TrimSpace(p); p != "" {
					*dst = append(*dst, p)
				}
			}
			return nil
		}
	}
	fs.Func("gateways", "comma-separated base URLs of this region's gateways: their /readyz and /metrics are read directly", list(&gateways))
	fs.StringVar(&promURL, "prometheus-url", "", "read the latency, 5xx and queue figures from this Prometheus server by PromQL instead (with --gateways the origin rule still asks the gateways' /readyz)")
	fs.StringVar(&promSelector, "prometheus-selector", `job="parley"`, "label matchers, without braces, that select this region's gateways in Prometheus")
	fs.StringVar(&upQuery, "prometheus-up-query", `sum(up{job="parley"})`, "PromQL counting the gateways up, for the origin rule when no --gateways are given")
	fs.BoolVar(&dryRun, "dry-run", false, "print the decisions; do not touch BIRD")
	fs.BoolVar(&once, "once", false, "decide once (after --fail-after checks, the hysteresis spans them) and exit")
	fs.DurationVar(&interval, "interval", time.Second, "time between checks")
	fs.DurationVar(&exitAfter, "exit-after", 0, "stop after this long (0: run until stopped)")
	fs.DurationVar(&checkTimeout, "check-timeout", 0, "longest one request to a gateway or Prometheus may take (default: the interval, at most 5s)")
	fs.StringVar(&listen, "listen", "127.0.0.1:9465", "address of the checker's own /healthz and /metrics (empty: none)")
	fs.StringVar(&birdSocket, "bird-socket", "/run/bird/bird.ctl", "BIRD's control socket")
	fs.StringVar(&birdInclude, "bird-include", "/etc/bird/parley/anycast.conf", "file of the announce and prepend constants that the edge's bird.conf includes (rewritten on change)")
	fs.DurationVar(&rules.MaxP95, "max-p95", rules.MaxP95, "HTTP latency p95 above which the region's weight is lowered (one prepend; two past twice it, three past four times)")
	fs.Float64Var(&rules.MaxErrorRatio, "max-error-ratio", rules.MaxErrorRatio, "share of 5xx answers (backpressure excluded) above which the weight is lowered, graded like --max-p95")
	fs.Float64Var(&rules.MinRequests, "min-requests", rules.MinRequests, "fewest requests in a window for its p95 or 5xx rate to count")
	fs.IntVar(&rules.FailAfter, "fail-after", rules.FailAfter, "consecutive failed origin checks that withdraw the route")
	fs.IntVar(&rules.RecoverAfter, "recover-after", rules.RecoverAfter, "consecutive good origin checks that announce a withdrawn route again")
	fs.IntVar(&rules.RaiseAfter, "raise-after", rules.RaiseAfter, "consecutive checks that must all ask for more prepends before the route is weakened")
	fs.IntVar(&rules.LowerAfter, "lower-after", rules.LowerAfter, "consecutive checks that must all ask for fewer prepends before the route is strengthened")
	fs.IntVar(&rules.MaxPrepend, "max-prepend", rules.MaxPrepend, "most AS-path prepends (0–3)")
	fs.Float64Var(&rules.MaxQueueDepth, "max-queue-depth", rules.MaxQueueDepth, "GPU queue depth above which backpressure is reported (the route is not moved)")
	fs.DurationVar(&latencyWin, "latency-window", time.Minute, "span of the latency p95")
	fs.DurationVar(&errWin, "error-window", time.Minute, "span of the 5xx rate")
	fs.StringVar(&latencyExclude, "latency-exclude", region.DefaultLatencyExclude, "regexp of routes and procedures left out of the p95 (probes, generations)")
	fs.StringVar(&errorExclude, "error-exclude", region.DefaultErrorExclude, "regexp of routes and procedures left out of the 5xx rate")
	fs.IntVar(&minReady, "min-ready", 1, "gateways that must answer /readyz for the origin check to pass")
	ignoreChecks = []string{"workers"}
	fs.Func("ignore-ready-checks", "comma-separated /readyz checks whose failure does not fail the origin (default workers: losing the GPUs is answered by 503 + Retry-After, not by moving the route)", list(&ignoreChecks))
	queueMetrics = []string{"parley_scheduler_queue_depth"}
	fs.Func("queue-metrics", "comma-separated gauges summed into the GPU queue depth (default parley_scheduler_queue_depth)", list(&queueMetrics))
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	if err := config.Parse(fs, args, os.Getenv); err != nil {
		return err
	}
	logger := obs.NewLogger(logOut, logLevel)
	if len(gateways) == 0 && promURL == "" {
		return errors.New("--gateways or --prometheus-url is required")
	}
	for _, g := range gateways {
		if !strings.HasPrefix(g, "http://") && !strings.HasPrefix(g, "https://") {
			return fmt.Errorf("--gateways: %q is not an http(s) URL", g)
		}
	}
	if interval <= 0 {
		return fmt.Errorf("--interval: must be positive, got %v", interval)
	}
	if err := rules.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	latencyRE, err := regexp.Compile(latencyExclude)
	if err != nil {
		return fmt.Errorf("--latency-exclude: %w", err)
	}
	errorRE, err := regexp.Compile(errorExclude)
	if err != nil {
		return fmt.Errorf("--error-exclude: %w", err)
	}
	if checkTimeout <= 0 {
		checkTimeout = min(interval, 5*time.Second)
	}
	client := &http.Client{Timeout: checkTimeout}

	var source region.Source
	var direct *region.Gateways
	if len(gateways) > 0 {
		direct = &region.Gateways{URLs: gateways, Client: client, MinReady: minReady, IgnoreChecks: ignoreChecks,
			LatencyWindow: latencyWin, ErrorWindow: errWin, LatencyExclude: latencyRE, ErrorExclude: errorRE, QueueMetrics: queueMetrics}
		source = direct
	}
	if promURL != "" {
		source = &region.Prometheus{URL: promURL, Client: client, Selector: promSelector, UpQuery: upQuery, MinReady: minReady,
			Origin: direct, LatencyWindow: latencyWin, ErrorWindow: errWin, LatencyExclude: latencyExclude,
			ErrorExclude: errorExclude, QueueMetrics: queueMetrics}
	}

	bird := &region.Bird{Socket: birdSocket, Include: birdInclude}
	current, known, err := bird.Read()
	if err != nil {
		return fmt.Errorf("--bird-include: %w", err)
	}
	checks := 0
	if once {
		// One decision from a short series: the hysteresis spans it.
		checks = max(2, rules.FailAfter)
		rules.RaiseAfter, rules.LowerAfter, rules.RecoverAfter, rules.FailAfter = checks, checks, checks, checks
	}
	checker := &region.Checker{Source: source, Decider: region.NewDecider(rules, current), DryRun: dryRun,
		Out: stdout, Logger: logger, Interval: interval}
	if !dryRun {
		checker.Bird = bird
	}
	if known {
		checker.Applied(current)
	}
	metrics := obs.NewMetrics()
	if err := checker.Register(metrics.Registry); err != nil {
		return err
	}
	logger.Info("region health checker starting", "gateways", strings.Join(gateways, ","), "prometheus", promURL,
		"bird_socket", birdSocket, "bird_include", birdInclude, "route", current.String(), "route_known", known, "dry_run", dryRun)

	if exitAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, exitAfter)
		defer cancel()
	}
	if once {
		// The first checks fill the windows and streaks; the last decides.
		for i := range checks {
			last := i == checks-1
			checker.Out, checker.Bird = nil, nil
			if last {
				checker.Out = stdout
				if !dryRun {
					checker.Bird = bird
				}
			}
			checkCtx, cancel := context.WithTimeout(ctx, interval)
			checker.Check(checkCtx)
			cancel()
			if last {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(interval):
			}
		}
		return nil
	}

	errc := make(chan error, 1)
	if listen != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /healthz", checker.Healthz())
		mux.Handle("GET /metrics", metrics.Handler())
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		srv := &gateway.Server{Handler: mux, Grace: time.Second, Logger: logger}
		go func() { errc <- srv.Serve(ctx, ln) }()
	}
	checker.Run(ctx, 0)
	if listen != "" {
		return <-errc
	}
	return nil
}
