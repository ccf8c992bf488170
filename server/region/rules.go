// Package region is the health checker of one region behind anycast
// (docs/scaling.md): once a second it reads the region's own figures — whether the
// origin (the region's gateways) answers, the HTTP latency p95 and 5xx rate
// over a window, the GPU queue depth — and decides whether the region's
// edge router keeps announcing the anycast prefix, weakens it by AS-path
// prepending, or withdraws it. The decision is applied to BIRD through its
// control socket, only when it changes and with hysteresis, so that a
// flapping metric does not flap the route.
package region

import (
	"fmt"
	"time"
)

// Rules are the region health thresholds (docs/scaling.md) and the hysteresis around them.
// The zero value is not useful; start from DefaultRules.
type Rules struct {
	// MaxP95 is the HTTP latency p95 above which the region's weight is
	// lowered (one prepend; two past twice it, three past four times it).
	MaxP95 time.Duration
	// MaxErrorRatio is the share of 5xx answers (0.01 = 1 %) above which
	// the weight is lowered, graded like MaxP95.
	MaxErrorRatio float64
	// MinRequests is the fewest requests a window must hold for its p95 or
	// 5xx rate to count: below it the latency and error rules abstain.
	MinRequests float64
	// FailAfter is how many consecutive failed origin checks withdraw the
	// route.
	FailAfter int
	// RecoverAfter is how many consecutive good origin checks announce a
	// withdrawn route again.
	RecoverAfter int
	// RaiseAfter is how many consecutive checks must all want more prepends
	// before the route is weakened; LowerAfter how many must all want fewer
	// before it is strengthened again. Raising fast and lowering slowly is
	// the hysteresis: a metric that flaps leaves the route where it is.
	RaiseAfter, LowerAfter int
	// MaxPrepend bounds the prepends (1–3).
	MaxPrepend int
	// MaxQueueDepth is the GPU queue depth above which the checker reports
	// backpressure. It never moves the route: the schedulers answer 503 with
	// Retry-After, and prepending would not help (inference from every
	// region goes to the same GPUs).
	MaxQueueDepth float64
}

// DefaultRules are the thresholds of docs/scaling.md with a one-second check.
func DefaultRules() Rules {
	return Rules{
		MaxP95:        500 * time.Millisecond,
		MaxErrorRatio: 0.01,
		MinRequests:   20,
		FailAfter:     3,
		RecoverAfter:  10,
		RaiseAfter:    3,
		LowerAfter:    30,
		MaxPrepend:    3,
		MaxQueueDepth: 1000,
	}
}

// Validate names the first setting that cannot work.
func (r Rules) Validate() error {
	switch {
	case r.MaxP95 <= 0:
		return fmt.Errorf("max-p95: must be positive, got %v", r.MaxP95)
	case r.MaxErrorRatio <= 0 || r.MaxErrorRatio >= 1:
		return fmt.Errorf("max-error-ratio: must be between 0 and 1, got %v", r.MaxErrorRatio)
	case r.MinRequests < 0:
		return fmt.Errorf("min-requests: must not be negative, got %v", r.MinRequests)
	case r.FailAfter < 1:
		return fmt.Errorf("fail-after: must be at least 1, got %d", r.FailAfter)
	case r.RecoverAfter < 1:
		return fmt.Errorf("recover-after: must be at least 1, got %d", r.RecoverAfter)
	case r.RaiseAfter < 1:
		return fmt.Errorf("raise-after: must be at least 1, got %d", r.RaiseAfter)
	case r.LowerAfter < 1:
		return fmt.Errorf("lower-after: must be at least 1, got %d", r.LowerAfter)
	case r.MaxPrepend < 0 || r.MaxPrepend > 3:
		return fmt.Errorf("max-prepend: must be 0 to 3, got %d", r.MaxPrepend)
	case r.MaxQueueDepth <= 0:
		return fmt.Errorf("max-queue-depth: must be positive, got %v", r.MaxQueueDepth)
	}
	return nil
}

// Origin is the state of the origin pool at one check.
type Origin int

const (
	// OriginUnknown: nothing could be learnt (the metrics source is down but
	// the gateways were not asked). It neither fails nor passes a check.
	OriginUnknown Origin = iota
	// OriginUp: enough gateways are ready.
	OriginUp
	// OriginDown: too few gateways answered ready (none reachable counts).
	OriginDown
)

// Observation is what one check learnt about the region.
type Observation struct {
	// At is when the check was made.
	At time.Time
	// Origin says whether the origin pool passed this check; OriginDetail
	// says why, for the reasons of a decision ("0/2 gateways ready: …").
	Origin       Origin
	OriginDetail string
	// LatencyRequests requests were timed in the latency window; P95 is
	// their 95th percentile (meaningful when LatencyRequests > 0).
	LatencyRequests float64
	P95             time.Duration
	// Requests were answered in the error window, Errors of them with a
	// 5xx that was not the schedulers' backpressure.
	Requests, Errors float64
	// QueueDepth is the generations waiting for a GPU worker, summed over
	// the region's gateways; QueueKnown says whether it was read.
	QueueDepth float64
	QueueKnown bool
}

// level grades value against limit: 0 within it, 1 above it, 2 above twice
// it, 3 above four times it.
func level(value, limit float64) int {
	switch {
	case value > 4*limit:
		return 3
	case value > 2*limit:
		return 2
	case value > limit:
		return 1
	}
	return 0
}

// Target is the prepend count one observation alone asks for, with the
// reasons, and the reports that do not move the route (queue depth).
func (r Rules) Target(o Observation) (prepend int, reasons, reports []string) {
	if o.LatencyRequests >= r.MinRequests && o.LatencyRequests > 0 {
		if l := level(o.P95.Seconds(), r.MaxP95.Seconds()); l > 0 {
			prepend += l
			reasons = append(reasons, fmt.Sprintf("p95 %s > %s", ms(o.P95), ms(r.MaxP95)))
		}
	}
	if o.Requests >= r.MinRequests && o.Requests > 0 {
		ratio := o.Errors / o.Requests
		if l := level(ratio, r.MaxErrorRatio); l > 0 {
			prepend += l
			reasons = append(reasons, fmt.Sprintf("5xx %s > %s", pct(ratio), pct(r.MaxErrorRatio)))
		}
	}
	if o.QueueKnown && o.QueueDepth > r.MaxQueueDepth {
		reports = append(reports, fmt.Sprintf("gpu queue depth %.0f > %.0f (backpressure: 503 with Retry-After; route kept)", o.QueueDepth, r.MaxQueueDepth))
	}
	return min(prepend, r.MaxPrepend), reasons, reports
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds()) }

func pct(f float64) string { return fmt.Sprintf("%.3g%%", f*100) }
