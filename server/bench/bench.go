// Package bench is Parley's load generator: it drives a gateway (over
// Connect, gRPC, gRPC-Web or the OpenAI-compatible SSE endpoint) or a
// worker directly, and reports throughput, time to first token and total
// latency percentiles, token rate and errors.
package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one load run.
type Config struct {
	// URL is the gateway's or worker's base URL.
	URL string
	// Protocol is connect, grpc, grpc-web or openai-sse.
	Protocol string
	// Target is gateway or worker (the worker's own WorkerService: the floor).
	Target string
	// Concurrency is the number of requests in flight at once.
	Concurrency int
	// Requests is how many to send in all (0: until Duration).
	Requests int
	// Duration caps the run.
	Duration time.Duration
	// Stream asks for streamed responses.
	Stream bool
	// APIKey authenticates against a gateway; with Target worker it is the
	// worker token.
	APIKey string
	// Model and MaxTokens shape each request; Prompt is its user message.
	Model     string
	MaxTokens int
	Prompt    string
	// Progress receives a line every second while the run goes on (nil: none).
	Progress io.Writer
}

// Report is a run's result. Every rate and latency is of the successful
// requests only (OK of them).
type Report struct {
	Requests, Errors   int
	OK                 int
	Elapsed            time.Duration
	RequestsPerSecond  float64 // successful requests per second
	TokensPerSecond    float64
	TTFTp50, TTFTp99   time.Duration
	TotalP50, TotalP99 time.Duration
	FirstError         string
	// ErrorKinds are the failures by kind, most frequent first.
	ErrorKinds []ErrorKind
}

// String renders the report for a person: the errors by kind first, then
// the figures, each with the count of successes it comes from.
func (r Report) String() string {
	var b strings.Builder
	writeKinds(&b, "", r.ErrorKinds, r.Errors, r.Requests)
	fmt.Fprintf(&b, "requests %d  ok %d  errors %d  elapsed %.2fs", r.Requests, r.OK, r.Errors, r.Elapsed.Seconds())
	if r.OK == 0 {
		b.WriteString("\nno request succeeded: no rate or latency to report")
		return b.String()
	}
	fmt.Fprintf(&b, "\nof the %d successful requests: rps %.1f  tokens/s %.0f\nTTFT  p50 %v  p99 %v  (%d ok)\ntotal p50 %v  p99 %v  (%d ok)",
		r.OK, r.RequestsPerSecond, r.TokensPerSecond,
		r.TTFTp50.Round(time.Microsecond), r.TTFTp99.Round(time.Microsecond), r.OK,
		r.TotalP50.Round(time.Microsecond), r.TotalP99.Round(time.Microsecond), r.OK)
	return b.String()
}

// Check fails when more than maxRate of the requests failed (0: any).
func (r Report) Check(maxRate float64) error {
	return CheckErrors(r.ErrorKinds, r.Errors, r.Requests, maxRate)
}

// sample is one request's measurements.
type sample struct {
	ttft, total time.Duration
	tokens      int
	err         error
}

// caller sends one request and measures it.
type caller func(ctx context.Context) sample

// runFor is ctx cancelled after d: the end of a timed run. It is not a
// deadline, which would travel with every call (Connect's and gRPC's
// timeout headers): the server would end a call cut by the run's end
// itself, and its error could arrive a moment before the client's own
// context ended, counted as a failure. Cancelled, the call ends on the
// client, whose context is done by then.
func runFor(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	t := time.AfterFunc(d, cancel)
	return ctx, func() { t.Stop(); cancel() }
}

// Run performs the load run described by cfg.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Requests <= 0 && cfg.Duration <= 0 {
		return Report{}, fmt.Errorf("bench: give a request count or a duration")
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = runFor(ctx, cfg.Duration)
		defer cancel()
	}
	call, err := newCaller(cfg)
	if err != nil {
		return Report{}, err
	}
	var (
		mu       sync.Mutex
		samples  []sample
		issued   atomic.Int64
		finished atomic.Int64
		tokens   atomic.Int64
		wg       sync.WaitGroup
	)
	start := time.Now()
	stopProgress := progress(cfg.Progress, start, &finished, &tokens)
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if n := issued.Add(1); cfg.Requests > 0 && n > int64(cfg.Requests) {
					return
				}
				s := call(ctx)
				if ctx.Err() != nil && s.err != nil {
					return // cut off by the duration cap: not a server error
				}
				finished.Add(1)
				tokens.Add(int64(s.tokens))
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stopProgress()
	return summarize(samples, time.Since(start)), nil
}

func summarize(samples []sample, elapsed time.Duration) Report {
	r := Report{Requests: len(samples), Elapsed: elapsed}
	var ttft, total []time.Duration
	var errs errorTally
	toks := 0
	for _, s := range samples {
		if s.err != nil {
			r.Errors++
			errs.add(s.err)
			if r.FirstError == "" {
				r.FirstError = s.err.Error()
			}
			continue
		}
		ttft = append(ttft, s.ttft)
		total = append(total, s.total)
		toks += s.tokens
	}
	r.OK, r.ErrorKinds = len(samples)-r.Errors, errs.list()
	r.RequestsPerSecond = float64(r.OK) / elapsed.Seconds()
	r.TokensPerSecond = float64(toks) / elapsed.Seconds()
	r.TTFTp50, r.TTFTp99 = percentile(ttft, 0.50), percentile(ttft, 0.99)
	r.TotalP50, r.TotalP99 = percentile(total, 0.50), percentile(total, 0.99)
	return r
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(float64(len(d))*p+0.5) - 1
	return d[max(0, min(i, len(d)-1))]
}

func progress(w io.Writer, start time.Time, finished, tokens *atomic.Int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintln(w)
				return
			case <-t.C:
				el := time.Since(start).Seconds()
				fmt.Fprintf(w, "\r%6.1fs  %7d done  %8.1f req/s  %9.0f tok/s", el, finished.Load(), float64(finished.Load())/el, float64(tokens.Load())/el)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// httpClient returns a client for the protocol: h2c for gRPC, HTTP/1.1
// with a large keep-alive pool otherwise.
func httpClient(protocol string, conns int) *http.Client {
	if protocol == "grpc" {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		return &http.Client{Transport: &http.Transport{Protocols: &p, DialContext: (&net.Dialer{}).DialContext}}
	}
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: 0,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
}
