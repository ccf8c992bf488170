package scheduler

import (
	"math"
	"time"
)

// limiter is the admission limit of a worker that reports no batch size,
// set by measured queueing rather than a guess, after TCP's congestion
// control and Netflix's concurrency-limits: the signal is the worker's time
// to first token (TTFT) as this gateway measures it, smoothed, against its
// baseline — the lowest TTFT seen over the last two windows.
//
//   - Until TTFT rises the worker has no cap (limit 0): nothing measured
//     says it queues.
//   - When the smoothed TTFT exceeds the baseline by limitFactor and by
//     limitSlack, the limit is cut to limitBeta of what is running (at most
//     once per cutEvery, so one burst is one cut).
//   - A TTFT sample under that bound, while the limit binds (the load is
//     within a tenth of it), raises it by max(1, limit/16) per limit samples:
//     a round of generations adds one slot, or a sixteenth at large limits.
//
// A TTFT is measured by this gateway, so a gateway short of CPU measures
// its own delays too: a sample whose rise over the baseline is within
// lagFactor times the gateway's own lag (lagProbe: how late it runs a
// timer) is not evidence of the worker's queueing and is set aside — it
// neither cuts the limit nor moves the smoothed TTFT or the baseline. A
// gateway starved of CPU thus does not refuse work its worker keeps up
// with; a worker that queues while the gateway is busy still shows, once its
// queueing exceeds what the lag explains.
//
// Engine-reported waiting requests hold the worker at what it runs besides
// (member.go); the limiter only sees TTFT. Guarded by the scheduler's lock.
type limiter struct {
	limit    float64 // 0: no cap
	ewma     float64 // smoothed TTFT, seconds
	win      [2]float64
	winStart int64 // Unix nanoseconds the current window began
	lastCut  int64
}

const (
	limitFactor = 3.0                     // TTFT over 3× the baseline…
	limitSlack  = 0.050                   // …and 50 ms over it is queueing
	limitBeta   = 0.7                     // the cut keeps 70 % of the running load
	limitAlpha  = 0.2                     // weight of a new sample in the smoothed TTFT
	limitWindow = int64(30 * time.Second) // baseline windows
	minCutEvery = int64(100 * time.Millisecond)
	// lagFactor is how many of the gateway's scheduling delays a TTFT may
	// hold: the wait for the response, for its first bytes, and for the
	// first token's write. lagFloor is timer jitter, not lag.
	lagFactor = 4
	lagFloor  = time.Millisecond
)

// limitEvent says what a sample did to the limit.
type limitEvent int

const (
	limitKept limitEvent = iota
	limitCut
	limitRaised
	// limitLagged: the sample was set aside, the gateway's own lag
	// explaining its rise.
	limitLagged
)

// cap returns the admission limit, 0 when there is none.
func (l *limiter) cap() int {
	if l.limit <= 0 {
		return 0
	}
	return int(math.Floor(l.limit))
}

// baseline returns the lowest TTFT of the current and last window.
func (l *limiter) baseline() time.Duration {
	return time.Duration(l.base() * float64(time.Second))
}

func (l *limiter) base() float64 {
	b := l.win[0]
	if l.win[1] > 0 && (b <= 0 || l.win[1] < b) {
		b = l.win[1]
	}
	return b
}

// sample takes one generation's TTFT, at now, with load generations on the
// worker (this one included), while the gateway ran up to lag late.
func (l *limiter) sample(now int64, ttft time.Duration, load int, lag time.Duration) limitEvent {
	x := max(ttft.Seconds(), 1e-6)
	if lag > lagFloor && l.win[0] > 0 && x-l.base() <= lagFactor*lag.Seconds() {
		return limitLagged
	}
	if now-l.winStart >= limitWindow {
		l.win[1], l.win[0], l.winStart = l.win[0], 0, now
	}
	if l.win[0] <= 0 || x < l.win[0] {
		l.win[0] = x
	}
	if l.ewma <= 0 {
		l.ewma = x
	} else {
		l.ewma += limitAlpha * (x - l.ewma)
	}
	b := l.base()
	bound := max(b*limitFactor, b+limitSlack)
	cutEvery := max(minCutEvery, int64(2*l.ewma*float64(time.Second)))
	switch {
	case l.ewma > bound:
		if now-l.lastCut < cutEvery {
			return limitKept
		}
		running := float64(load)
		if l.limit > 0 {
			running = min(running, l.limit)
		}
		l.limit = max(1, math.Floor(running*limitBeta))
		l.lastCut = now
		// The queue drains at the lower limit: the smoothed TTFT starts
		// again from the bound, not from the burst's peak.
		l.ewma = bound
		return limitCut
	case x <= bound && l.limit > 0 && float64(load) >= 0.9*l.limit:
		l.limit += max(1, l.limit/16) / l.limit
		return limitRaised
	}
	return limitKept
}
