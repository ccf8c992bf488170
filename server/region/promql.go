package region

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Prometheus checks the region through a Prometheus server's HTTP API: the
// same figures as Gateways, read by PromQL over the windows. When Origin is
// set (the gateways asked directly) it decides the origin rule; otherwise
// the number of gateway targets up (UpQuery) does.
type Prometheus struct {
	// URL is the server's base URL (http://prometheus:9090).
	URL string
	// Client makes the requests.
	Client *http.Client
	// Selector narrows every query to this region's gateways, as label
	// matchers without braces (`job="parley", region="eu"`); may be empty.
	Selector string
	// UpQuery counts the gateways up; MinReady of them must be.
	UpQuery  string
	MinReady int
	// Origin, when set, decides the origin rule instead of UpQuery.
	Origin *Gateways
	// Windows and exclusions as for Gateways.
	LatencyWindow, ErrorWindow   time.Duration
	LatencyExclude, ErrorExclude string
	// QueueMetrics are the gauges summed into the GPU queue depth.
	QueueMetrics []string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Queries returns the PromQL the checker runs, by figure: p95 (seconds),
// latency_requests, requests, errors (5xx less backpressure), queue.
func (p *Prometheus) Queries() map[string]string {
	sel := func(extra ...string) string {
		parts := append([]string{}, extra...)
		if p.Selector != "" {
			parts = append(parts, p.Selector)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	lw, ew := promDuration(p.LatencyWindow), promDuration(p.ErrorWindow)
	latency := sel(`__name__=~"`+httpDuration+`_bucket|`+rpcDuration+`_bucket"`,
		"route!~"+quote(p.LatencyExclude), "procedure!~"+quote(p.LatencyExclude))
	latencyCount := sel(`__name__=~"`+httpDuration+`_count|`+rpcDuration+`_count"`,
		"route!~"+quote(p.LatencyExclude), "procedure!~"+quote(p.LatencyExclude))
	requests := sel(`__name__=~"`+httpRequests+`|`+rpcRequests+`"`,
		"route!~"+quote(p.ErrorExclude), "procedure!~"+quote(p.ErrorExclude))
	httpErrors := sel(`__name__="`+httpRequests+`"`, `status=~"5.."`, "route!~"+quote(p.ErrorExclude))
	rpcErrors := sel(`__name__="`+rpcRequests+`"`, `code=~"unknown|internal|unavailable|deadline_exceeded|data_loss"`, "procedure!~"+quote(p.ErrorExclude))
	rejected := sel(`__name__="` + rejections + `"`)
	queue := make([]string, len(p.QueueMetrics))
	for i, m := range p.QueueMetrics {
		queue[i] = "sum(" + sel(`__name__="`+m+`"`) + ")"
	}
	return map[string]string{
		"p95":              fmt.Sprintf(`histogram_quantile(0.95, sum by (le) (rate(%s[%s])))`, latency, lw),
		"latency_requests": fmt.Sprintf(`sum(increase(%s[%s]))`, latencyCount, lw),
		"requests":         fmt.Sprintf(`sum(increase(%s[%s]))`, requests, ew),
		"errors": fmt.Sprintf(`clamp_min((sum(increase(%s[%s])) or vector(0)) + (sum(increase(%s[%s])) or vector(0)) - (sum(increase(%s[%s])) or vector(0)), 0)`,
			httpErrors, ew, rpcErrors, ew, rejected, ew),
		"queue": strings.Join(queue, " + "),
	}
}

// quote writes s as a PromQL string literal (Go's escapes).
func quote(s string) string { return strconv.Quote(s) }

// promDuration writes d as a PromQL duration (whole seconds, at least 1s).
func promDuration(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second).Seconds()))) + "s"
}

// Observe makes one check.
func (p *Prometheus) Observe(ctx context.Context) Observation {
	var o Observation
	if p.Origin != nil {
		o = p.Origin.Observe(ctx) // its figures are replaced by Prometheus's below
	} else {
		o.At = time.Now()
		if p.Now != nil {
			o.At = p.Now()
		}
		up, ok, err := p.scalar(ctx, p.UpQuery)
		switch {
		case err != nil:
			// Prometheus down says nothing of the gateways: no verdict.
			o.Origin, o.OriginDetail = OriginUnknown, "prometheus: "+err.Error()
		case !ok || up < float64(max(1, p.MinReady)):
			o.Origin, o.OriginDetail = OriginDown, fmt.Sprintf("%.0f gateways up (%s)", up, p.UpQuery)
		default:
			o.Origin, o.OriginDetail = OriginUp, fmt.Sprintf("%.0f gateways up", up)
		}
	}
	o.LatencyRequests, o.P95, o.Requests, o.Errors, o.QueueDepth, o.QueueKnown = 0, 0, 0, 0, 0, false
	q := p.Queries()
	if v, ok, err := p.scalar(ctx, q["latency_requests"]); err == nil && ok {
		o.LatencyRequests = v
		if p95, ok, err := p.scalar(ctx, q["p95"]); err == nil && ok {
			o.P95 = time.Duration(p95 * float64(time.Second))
		}
	}
	if v, ok, err := p.scalar(ctx, q["requests"]); err == nil && ok {
		o.Requests = v
		if e, ok, err := p.scalar(ctx, q["errors"]); err == nil && ok {
			o.Errors = e
		}
	}
	if q["queue"] != "" {
		if v, ok, err := p.scalar(ctx, q["queue"]); err == nil && ok {
			o.QueueDepth, o.QueueKnown = v, true
		}
	}
	return o
}

// scalar runs an instant query and returns its single value; ok is false
// for an empty result (or NaN, as a quantile of nothing is).
func (p *Prometheus) scalar(ctx context.Context, query string) (v float64, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(p.URL, "/")+"/api/v1/query",
		strings.NewReader(url.Values{"query": {query}}.Encode()))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return 0, false, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, false, fmt.Errorf("query answered %s: %.200s", res.Status, body)
	}
	if r.Status != "success" {
		return 0, false, fmt.Errorf("query %q: %s", query, r.Error)
	}
	if len(r.Data.Result) == 0 {
		return 0, false, nil
	}
	var sample struct {
		Value [2]any `json:"value"`
	}
	if err := json.Unmarshal(r.Data.Result[0], &sample); err != nil {
		return 0, false, fmt.Errorf("query %q: %w", query, err)
	}
	s, _ := sample.Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	if err != nil || v != v { // NaN
		return 0, false, nil
	}
	return v, true, nil
}
