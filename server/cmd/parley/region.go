package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/region"
)

// regionHealth runs the region's health checker (docs/scaling.md): it reads
// the region's gateways (or Prometheus) once an interval and drives the
// edge router's anycast announcement through BIRD (deploy/README.md).
func regionHealth(ctx context.Context, args []string, stdout, logOut io.Writer) error {
	fs := newFlagSet("region-health")
	var c region.Config
	c.RegisterFlags(fs)
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return err
	}
	logger := obs.NewLogger(logOut, c.LogLevel)
	if len(c.Gateways) == 0 && c.PrometheusURL == "" {
		return errors.New("--gateways or --prometheus-url is required")
	}
	for _, g := range c.Gateways {
		if !strings.HasPrefix(g, "http://") && !strings.HasPrefix(g, "https://") {
			return fmt.Errorf("--gateways: %q is not an http(s) URL", g)
		}
	}
	if c.Interval <= 0 {
		return fmt.Errorf("--interval: must be positive, got %v", c.Interval)
	}
	if err := c.Rules.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	latencyRE, err := regexp.Compile(c.LatencyExclude)
	if err != nil {
		return fmt.Errorf("--latency-exclude: %w", err)
	}
	errorRE, err := regexp.Compile(c.ErrorExclude)
	if err != nil {
		return fmt.Errorf("--error-exclude: %w", err)
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = min(c.Interval, 5*time.Second)
	}
	client := &http.Client{Timeout: c.CheckTimeout}

	var source region.Source
	var direct *region.Gateways
	if len(c.Gateways) > 0 {
		direct = &region.Gateways{URLs: c.Gateways, Client: client, MinReady: c.MinReady, IgnoreChecks: c.IgnoreChecks,
			LatencyWindow: c.LatencyWindow, ErrorWindow: c.ErrorWindow, LatencyExclude: latencyRE, ErrorExclude: errorRE, QueueMetrics: c.QueueMetrics}
		source = direct
	}
	if c.PrometheusURL != "" {
		source = &region.Prometheus{URL: c.PrometheusURL, Client: client, Selector: c.PrometheusSelector, UpQuery: c.PrometheusUpQuery, MinReady: c.MinReady,
			Origin: direct, LatencyWindow: c.LatencyWindow, ErrorWindow: c.ErrorWindow, LatencyExclude: c.LatencyExclude,
			ErrorExclude: c.ErrorExclude, QueueMetrics: c.QueueMetrics}
	}

	bird := &region.Bird{Socket: c.BirdSocket, Include: c.BirdInclude}
	current, known, err := bird.Read()
	if err != nil {
		return fmt.Errorf("--bird-include: %w", err)
	}
	checks := 0
	if c.Once {
		// One decision from a short series: the hysteresis spans it.
		checks = max(2, c.Rules.FailAfter)
		c.Rules.RaiseAfter, c.Rules.LowerAfter, c.Rules.RecoverAfter, c.Rules.FailAfter = checks, checks, checks, checks
	}
	checker := &region.Checker{Source: source, Decider: region.NewDecider(c.Rules, current), DryRun: c.DryRun,
		Out: stdout, Logger: logger, Interval: c.Interval}
	if !c.DryRun {
		checker.Bird = bird
	}
	if known {
		checker.Applied(current)
	}
	metrics := obs.NewMetrics()
	if err := checker.Register(metrics.Registry); err != nil {
		return err
	}
	logger.Info("region health checker starting", "gateways", strings.Join(c.Gateways, ","), "prometheus", c.PrometheusURL,
		"bird_socket", c.BirdSocket, "bird_include", c.BirdInclude, "route", current.String(), "route_known", known, "dry_run", c.DryRun)

	if c.ExitAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.ExitAfter)
		defer cancel()
	}
	if c.Once {
		// The first checks fill the windows and streaks; the last decides.
		for i := range checks {
			last := i == checks-1
			checker.Out, checker.Bird = nil, nil
			if last {
				checker.Out = stdout
				if !c.DryRun {
					checker.Bird = bird
				}
			}
			checkCtx, cancel := context.WithTimeout(ctx, c.Interval)
			checker.Check(checkCtx)
			cancel()
			if last {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(c.Interval):
			}
		}
		return nil
	}

	errc := make(chan error, 1)
	if c.Listen != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /healthz", checker.Healthz())
		mux.Handle("GET /metrics", metrics.Handler())
		ln, err := net.Listen("tcp", c.Listen)
		if err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		srv := &gateway.Server{Handler: mux, Grace: time.Second, Logger: logger}
		go func() { errc <- srv.Serve(ctx, ln) }()
	}
	checker.Run(ctx, 0)
	if c.Listen != "" {
		return <-errc
	}
	return nil
}
