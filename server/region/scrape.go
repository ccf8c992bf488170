package region

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Source makes one check of the region.
type Source interface {
	Observe(ctx context.Context) Observation
}

// The metric families the checker reads from a gateway's /metrics (obs and
// scheduler packages).
const (
	httpRequests   = "parley_http_requests_total"
	httpDuration   = "parley_http_request_duration_seconds"
	rpcRequests    = "parley_rpc_requests_total"
	rpcDuration    = "parley_rpc_duration_seconds"
	rejections     = "parley_scheduler_rejections_total"
	schedulerQueue = "parley_scheduler_queue_depth"
)

// DefaultLatencyExclude matches the routes and procedures whose duration is
// not an HTTP latency: the probes, and the generations (a stream, or a
// unary completion, lasts as long as the model writes).
const DefaultLatencyExclude = `^(healthz|readyz|metrics|sse|openai_(chat_completions|completions|embeddings|responses)|anthropic_messages|/parley\.v1\.(ChatService|EmbeddingService)/.*|/parley\.v1\.ConversationService/(SendMessage|StreamGeneration|RegenerateMessage|ContinueMessage))$`

// DefaultErrorExclude matches the routes whose answers the 5xx rule ignores:
// the probes (a /readyz answering 503 is the origin rule's business).
const DefaultErrorExclude = `^(healthz|readyz|metrics)$`

// serverErrorCodes are the Connect codes a client sees as a 5xx.
var serverErrorCodes = map[string]bool{"unknown": true, "internal": true, "unavailable": true, "deadline_exceeded": true, "data_loss": true}

// Gateways checks the region by asking its gateways directly: /readyz for
// the origin rule, /metrics (the Prometheus text format) for the rest. The
// latency and error windows are kept here, from the counters of successive
// scrapes, so no Prometheus server is needed.
type Gateways struct {
	// URLs are the gateways' base URLs.
	URLs []string
	// Client makes the requests; its timeout bounds one check.
	Client *http.Client
	// MinReady is how many gateways must answer ready for the origin check
	// to pass (at least 1).
	MinReady int
	// IgnoreChecks are /readyz checks whose failure does not fail the
	// origin (default "workers": losing the GPUs is answered by HTTP
	// backpressure, not by moving the region's route).
	IgnoreChecks []string
	// LatencyWindow and ErrorWindow are the spans the p95 and the 5xx rate
	// are taken over.
	LatencyWindow, ErrorWindow time.Duration
	// LatencyExclude and ErrorExclude match route or procedure labels left
	// out of the latency and error rules.
	LatencyExclude, ErrorExclude *regexp.Regexp
	// QueueMetrics are the gauges summed into the GPU queue depth.
	QueueMetrics []string
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	history map[string][]sample
}

// sample is what one scrape of one gateway read, cumulative since its start.
type sample struct {
	at time.Time
	// latency holds the cumulative bucket counts by upper bound (with +Inf)
	// of the included durations.
	latency map[float64]float64
	// requests and errors are the answers counted by the error rule,
	// rejected the schedulers' backpressure refusals among the errors.
	requests, errors, rejected float64
	queue                      float64
	queueKnown                 bool
}

// Observe makes one check: every gateway asked at once.
func (g *Gateways) Observe(ctx context.Context) Observation {
	now := g.now()
	type result struct {
		url     string
		ready   error
		scraped *sample
		scrErr  error
	}
	results := make([]result, len(g.URLs))
	var wg sync.WaitGroup
	for i, u := range g.URLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := result{url: u}
			r.ready = g.readyz(ctx, u)
			r.scraped, r.scrErr = g.scrape(ctx, u, now)
			results[i] = r
		}()
	}
	wg.Wait()

	o := Observation{At: now}
	ready := 0
	var failures []string
	var latency map[float64]float64
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.history == nil {
		g.history = map[string][]sample{}
	}
	for _, r := range results {
		if r.ready == nil {
			ready++
		} else {
			failures = append(failures, fmt.Sprintf("%s: %v", r.url, r.ready))
		}
		if r.scrErr != nil {
			if r.ready == nil {
				failures = append(failures, fmt.Sprintf("%s metrics: %v", r.url, r.scrErr))
			}
			continue
		}
		h := append(g.history[r.url], *r.scraped)
		h = trim(h, now.Add(-max(g.LatencyWindow, g.ErrorWindow)))
		g.history[r.url] = h
		lat := delta(h, now.Add(-g.LatencyWindow), func(s sample) map[float64]float64 { return s.latency })
		latency = addBuckets(latency, lat)
		e := delta(h, now.Add(-g.ErrorWindow), func(s sample) map[float64]float64 {
			return map[float64]float64{0: s.requests, 1: s.errors, 2: s.rejected}
		})
		o.Requests += e[0]
		o.Errors += max(0, e[1]-e[2])
		if r.scraped.queueKnown {
			o.QueueDepth += r.scraped.queue
			o.QueueKnown = true
		}
	}
	o.LatencyRequests = latency[math.Inf(1)]
	o.P95 = time.Duration(quantile(0.95, latency) * float64(time.Second))
	o.OriginDetail = fmt.Sprintf("%d/%d gateways ready", ready, len(g.URLs))
	if len(failures) > 0 {
		o.OriginDetail += ": " + strings.Join(failures, "; ")
	}
	o.Origin = OriginUp
	if ready < max(1, g.MinReady) {
		o.Origin = OriginDown
	}
	return o
}

func (g *Gateways) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// readyz asks one gateway whether it is ready; a 503 whose only failing
// checks are ignored ones counts as ready.
func (g *Gateways) readyz(ctx context.Context, base string) error {
	res, err := g.get(ctx, base+"/readyz")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode == http.StatusOK {
		return nil
	}
	var checks map[string]string
	if res.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &checks) != nil {
		return fmt.Errorf("readyz answered %s", res.Status)
	}
	var failing []string
	for name, state := range checks {
		if state != "ok" && !slices.Contains(g.IgnoreChecks, name) {
			failing = append(failing, name+": "+state)
		}
	}
	if len(failing) == 0 {
		return nil
	}
	slices.Sort(failing)
	return fmt.Errorf("not ready (%s)", strings.Join(failing, ", "))
}

func (g *Gateways) get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	c := g.Client
	if c == nil {
		c = http.DefaultClient
	}
	return c.Do(req)
}

// scrape reads one gateway's /metrics.
func (g *Gateways) scrape(ctx context.Context, base string, now time.Time) (*sample, error) {
	res, err := g.get(ctx, base+"/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics answered %s", res.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(res.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return g.read(families, now), nil
}

// read takes the figures the rules need out of one scrape.
func (g *Gateways) read(families map[string]*dto.MetricFamily, now time.Time) *sample {
	s := &sample{at: now, latency: map[float64]float64{}}
	excluded := func(re *regexp.Regexp, m *dto.Metric) bool {
		for _, l := range m.GetLabel() {
			if (l.GetName() == "route" || l.GetName() == "procedure") && re != nil && re.MatchString(l.GetValue()) {
				return true
			}
		}
		return false
	}
	for _, name := range []string{httpDuration, rpcDuration} {
		for _, m := range families[name].GetMetric() {
			if excluded(g.LatencyExclude, m) {
				continue
			}
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) { // the text format lists +Inf; the count is the same
					s.latency[b.GetUpperBound()] += float64(b.GetCumulativeCount())
				}
			}
			s.latency[math.Inf(1)] += float64(h.GetSampleCount())
		}
	}
	for _, m := range families[httpRequests].GetMetric() {
		if excluded(g.ErrorExclude, m) {
			continue
		}
		s.requests += m.GetCounter().GetValue()
		if strings.HasPrefix(label(m, "status"), "5") {
			s.errors += m.GetCounter().GetValue()
		}
	}
	for _, m := range families[rpcRequests].GetMetric() {
		if excluded(g.ErrorExclude, m) {
			continue
		}
		s.requests += m.GetCounter().GetValue()
		if serverErrorCodes[label(m, "code")] {
			s.errors += m.GetCounter().GetValue()
		}
	}
	for _, m := range families[rejections].GetMetric() {
		s.rejected += m.GetCounter().GetValue()
	}
	for _, name := range g.QueueMetrics {
		f, ok := families[name]
		if !ok {
			continue
		}
		s.queueKnown = true
		for _, m := range f.GetMetric() {
			s.queue += m.GetGauge().GetValue()
		}
	}
	return s
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// trim drops the samples no window needs: those older than the newest one
// at or before since.
func trim(h []sample, since time.Time) []sample {
	keep := 0
	for i, s := range h {
		if !s.at.After(since) {
			keep = i
		}
	}
	return h[keep:]
}

// delta is the increase of the counters pick reads from the newest sample
// at or before since (the oldest kept, for a window not yet full) to the
// last one. A counter that went down was reset by a restart: its whole
// value is the increase, as Prometheus's increase() takes it.
func delta(h []sample, since time.Time, pick func(sample) map[float64]float64) map[float64]float64 {
	last := pick(h[len(h)-1])
	if len(h) == 1 {
		return map[float64]float64{}
	}
	base := h[0]
	for _, s := range h[:len(h)-1] {
		if !s.at.After(since) {
			base = s
		}
	}
	from := pick(base)
	reset := false
	for k, v := range last {
		if v < from[k] {
			reset = true
		}
	}
	out := make(map[float64]float64, len(last))
	for k, v := range last {
		if reset {
			out[k] = v
		} else {
			out[k] = v - from[k]
		}
	}
	return out
}

func addBuckets(into, from map[float64]float64) map[float64]float64 {
	if into == nil {
		into = map[float64]float64{}
	}
	for k, v := range from {
		into[k] += v
	}
	return into
}

// quantile estimates the q-quantile from cumulative bucket counts keyed by
// upper bound (with +Inf), interpolating linearly inside the bucket as
// PromQL's histogram_quantile does. It returns 0 for an empty histogram.
func quantile(q float64, buckets map[float64]float64) float64 {
	total := buckets[math.Inf(1)]
	if total <= 0 {
		return 0
	}
	bounds := make([]float64, 0, len(buckets))
	for b := range buckets {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range bounds {
		count := buckets[b]
		if count >= rank {
			if math.IsInf(b, 1) {
				// Past the highest finite bound: report that bound, as PromQL does.
				return lower
			}
			if count == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(count-below)
		}
		lower, below = b, count
	}
	return lower
}
