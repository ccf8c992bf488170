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
//     limitSlack, that is a suspicion, not yet a cut: a request's TTFT also
//     holds its own prefill (a long prompt takes longer) and whatever else
//     makes the upstream slow to start it, none of which is queueing. The
//     scheduler sends the worker a probe — the most trivial request there
//     is, one token of "Hi" — and only a probe that is slow too (over the
//     same bound, or refused as overloaded) confirms queueing: the limit is
//     cut to limitBeta of what is running (at most once per cutEvery, so one
//     burst is one cut). A probe that comes back fast clears the current
//     level: the requests are slow by themselves, and the next suspicion
//     needs limitFactor times that level, until the baseline window turns.
//   - A TTFT sample under that bound, while the limit binds (the load is
//     within a tenth of it), raises it by max(1, limit/16) per limit samples:
//     a round of generations adds one slot, or a sixteenth at large limits.
//
// A TTFT is measured by this gateway, so a gateway short of CPU measures
// its own delays too: a sample whose rise over the baseline is within
// lagFactor times the lag of the processes it crossed (server/lag: how late
// the gateway, and a worker that reports it, ran a timer or a network read)
// is not evidence of the worker's queueing and is set aside — it
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
	// cleared is the smoothed TTFT a probe last showed not to be queueing
	// (0: none this window); probing is set while a probe is out, and
	// lastProbe is when the last one went.
	cleared   float64
	probing   bool
	lastProbe int64
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
	// limitSuspect: the TTFT suggests queueing; the caller sends a probe
	// and reports its TTFT to probed.
	limitSuspect
	// limitCleared: the probe came back fast; the requests are slow by
	// themselves.
	limitCleared
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
		l.cleared = 0
	}
	if l.win[0] <= 0 || x < l.win[0] {
		l.win[0] = x
	}
	if l.ewma <= 0 {
		l.ewma = x
	} else {
		l.ewma += limitAlpha * (x - l.ewma)
	}
	suspect := max(l.bound(), l.cleared*limitFactor)
	switch {
	case l.ewma > suspect:
		cutEvery := l.cutEvery()
		if l.probing || now-l.lastCut < cutEvery || now-l.lastProbe < cutEvery {
			return limitKept
		}
		l.probing, l.lastProbe = true, now
		return limitSuspect
	case x <= suspect && l.limit > 0 && float64(load) >= 0.9*l.limit:
		l.limit += max(1, l.limit/16) / l.limit
		return limitRaised
	}
	return limitKept
}

// probed takes the TTFT of the probe a limitSuspect sent, at now, with load
// generations on the worker, while the gateway ran up to lag late;
// overloaded reports that the worker refused it as full. A slow probe (or
// a refused one) confirms queueing and cuts the limit; a fast one clears
// the smoothed TTFT's level.
func (l *limiter) probed(now int64, ttft time.Duration, load int, lag time.Duration, overloaded bool) limitEvent {
	l.probing = false
	bound := l.bound()
	if !overloaded {
		x := ttft.Seconds()
		if lag > lagFloor && x-l.base() <= lagFactor*lag.Seconds() {
			return limitLagged
		}
		if x <= bound {
			l.cleared = l.ewma
			return limitCleared
		}
	}
	running := float64(load)
	if l.limit > 0 {
		running = min(running, l.limit)
	}
	l.limit = max(1, math.Floor(running*limitBeta))
	l.lastCut = now
	l.cleared = 0
	// The queue drains at the lower limit: the smoothed TTFT starts again
	// from the bound, not from the burst's peak.
	l.ewma = bound
	return limitCut
}

// bound is the TTFT over which the worker is suspected of queueing: the
// baseline by limitFactor and by limitSlack.
func (l *limiter) bound() float64 {
	b := l.base()
	return max(b*limitFactor, b+limitSlack)
}

// cutEvery is the least time between cuts (and probes): two smoothed TTFTs,
// so a cut is seen in the TTFTs before the next.
func (l *limiter) cutEvery() int64 {
	return max(minCutEvery, int64(2*l.ewma*float64(time.Second)))
}
