package region

import (
	"flag"
	"strings"
	"time"
)

// Config is the region health checker as `parley region-health`
// configures it: where the figures come from, the rules, and BIRD.
type Config struct {
	// Gateways are the base URLs of the region's gateways, read directly;
	// PrometheusURL reads the figures by PromQL instead (PrometheusSelector
	// picks the gateways, PrometheusUpQuery counts those up).
	Gateways                                                      []string
	PrometheusURL, PrometheusSelector, PrometheusUpQuery          string
	Listen, LogLevel, BirdSocket, BirdInclude                     string
	LatencyExclude, ErrorExclude                                  string
	QueueMetrics, IgnoreChecks                                    []string
	DryRun, Once                                                  bool
	Interval, ExitAfter, CheckTimeout, LatencyWindow, ErrorWindow time.Duration
	MinReady                                                      int
	Rules                                                         Rules
}

// RegisterFlags registers the checker's settings with their defaults,
// filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Rules = DefaultRules()
	c.IgnoreChecks = []string{"workers"}
	c.QueueMetrics = []string{"parley_scheduler_queue_depth"}
	fs.Func("gateways", "comma-separated base URLs of this region's gateways: their /readyz and /metrics are read directly", listSetter(&c.Gateways))
	fs.StringVar(&c.PrometheusURL, "prometheus-url", "", "read the latency, 5xx and queue figures from this Prometheus server by PromQL instead (with --gateways the origin rule still asks the gateways' /readyz)")
	fs.StringVar(&c.PrometheusSelector, "prometheus-selector", `job="parley"`, "label matchers, without braces, that select this region's gateways in Prometheus")
	fs.StringVar(&c.PrometheusUpQuery, "prometheus-up-query", `sum(up{job="parley"})`, "PromQL counting the gateways up, for the origin rule when no --gateways are given")
	fs.BoolVar(&c.DryRun, "dry-run", false, "print the decisions; do not touch BIRD")
	fs.BoolVar(&c.Once, "once", false, "decide once (after --fail-after checks, the hysteresis spans them) and exit")
	fs.DurationVar(&c.Interval, "interval", time.Second, "time between checks")
	fs.DurationVar(&c.ExitAfter, "exit-after", 0, "stop after this long (0: run until stopped)")
	fs.DurationVar(&c.CheckTimeout, "check-timeout", 0, "longest one request to a gateway or Prometheus may take (default: the interval, at most 5s)")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:9465", "address of the checker's own /healthz and /metrics (empty: none)")
	fs.StringVar(&c.BirdSocket, "bird-socket", "/run/bird/bird.ctl", "BIRD's control socket")
	fs.StringVar(&c.BirdInclude, "bird-include", "/etc/bird/parley/anycast.conf", "file of the announce and prepend constants that the edge's bird.conf includes (rewritten on change)")
	fs.DurationVar(&c.Rules.MaxP95, "max-p95", c.Rules.MaxP95, "HTTP latency p95 above which the region's weight is lowered (one prepend; two past twice it, three past four times)")
	fs.Float64Var(&c.Rules.MaxErrorRatio, "max-error-ratio", c.Rules.MaxErrorRatio, "share of 5xx answers (backpressure excluded) above which the weight is lowered, graded like --max-p95")
	fs.Float64Var(&c.Rules.MinRequests, "min-requests", c.Rules.MinRequests, "fewest requests in a window for its p95 or 5xx rate to count")
	fs.IntVar(&c.Rules.FailAfter, "fail-after", c.Rules.FailAfter, "consecutive failed origin checks that withdraw the route")
	fs.IntVar(&c.Rules.RecoverAfter, "recover-after", c.Rules.RecoverAfter, "consecutive good origin checks that announce a withdrawn route again")
	fs.IntVar(&c.Rules.RaiseAfter, "raise-after", c.Rules.RaiseAfter, "consecutive checks that must all ask for more prepends before the route is weakened")
	fs.IntVar(&c.Rules.LowerAfter, "lower-after", c.Rules.LowerAfter, "consecutive checks that must all ask for fewer prepends before the route is strengthened")
	fs.IntVar(&c.Rules.MaxPrepend, "max-prepend", c.Rules.MaxPrepend, "most AS-path prepends (0–3)")
	fs.Float64Var(&c.Rules.MaxQueueDepth, "max-queue-depth", c.Rules.MaxQueueDepth, "GPU queue depth above which backpressure is reported (the route is not moved)")
	fs.DurationVar(&c.LatencyWindow, "latency-window", time.Minute, "span of the latency p95")
	fs.DurationVar(&c.ErrorWindow, "error-window", time.Minute, "span of the 5xx rate")
	fs.StringVar(&c.LatencyExclude, "latency-exclude", DefaultLatencyExclude, "regexp of routes and procedures left out of the p95 (probes, generations)")
	fs.StringVar(&c.ErrorExclude, "error-exclude", DefaultErrorExclude, "regexp of routes and procedures left out of the 5xx rate")
	fs.IntVar(&c.MinReady, "min-ready", 1, "gateways that must answer /readyz for the origin check to pass")
	fs.Func("ignore-ready-checks", "comma-separated /readyz checks whose failure does not fail the origin (default workers: losing the GPUs is answered by 503 + Retry-After, not by moving the route)", listSetter(&c.IgnoreChecks))
	fs.Func("queue-metrics", "comma-separated gauges summed into the GPU queue depth (default parley_scheduler_queue_depth)", listSetter(&c.QueueMetrics))
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
}

func listSetter(dst *[]string) func(string) error {
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
