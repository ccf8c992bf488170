package scheduler

import (
	"math"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Scaling signals, after the elastic stage's scaling rule (docs/scaling.md):
// watch the inference queue's wait; above 5 s add an instance, below 1 s
// reclaim an idle one. Each gateway exports, per pool,
//
//   - parley_scheduler_queue_wait_recent_seconds{pool,model}: the 95th
//     percentile of queue wait over the last ScaleWindow of the jobs the pool
//     took for the model (a job placed at once waited 0; one refused because
//     the queue was full, or that waited out MaxQueueWait, counts as waiting
//     at least MaxQueueWait), or the age of the oldest job still waiting for
//     the pool when that is longer;
//   - parley_scheduler_pool_workers_recommended{pool}: its ready workers plus
//     one while that wait is over ScaleUpWait for any model, or while the pool
//     is saturated (jobs spill from it to the next pool after SpillWait, so a
//     primary's wait never reaches ScaleUpWait: spilling is its signal);
//     minus one while every model's wait is under ScaleDownWait and a worker
//     of the pool ran nothing for the whole window; else the ready count. It
//     is at least 1.
//
// An autoscaler reads the recommendation (deploy/k8s/autoscale.yaml: the
// highest over the gateways, as a target replica count) and applies its own
// stabilisation; the gateway only says what the rule says now.

// waitBounds are the upper bounds of the wait buckets the window keeps.
var waitBounds = [...]float64{0, 0.05, 0.1, 0.25, 0.5, 1, 2, 3.5, 5, 7.5, 10, 15, 20, 30, 45, 60, 120, math.Inf(1)}

// waitSlots divides a window: each slot holds the counts of ScaleWindow/waitSlots.
const waitSlots = 12

// waitWindow is the recent queue waits of one (pool, model), bucketed per
// slot of the window. Guarded by the scheduler's lock.
type waitWindow struct {
	slot   [waitSlots]int64 // which slot number each holds (Unix nanoseconds / slot length)
	counts [waitSlots][len(waitBounds)]uint32
}

type scaleKey struct {
	pool  *pool
	model string
}

// record adds one wait, in seconds, observed at now.
func (w *waitWindow) record(now, slotLen int64, wait float64) {
	n := now / slotLen
	i := int(n % waitSlots)
	if w.slot[i] != n {
		w.slot[i] = n
		w.counts[i] = [len(waitBounds)]uint32{}
	}
	b := sort.SearchFloat64s(waitBounds[:], wait)
	w.counts[i][b]++
}

// p95 returns the 95th percentile of the waits of the last window (the
// upper bound of its bucket; a wait past the last finite bound reads as that
// bound), and how many there were.
func (w *waitWindow) p95(now, slotLen int64) (float64, int) {
	n := now / slotLen
	var sum [len(waitBounds)]uint32
	total := 0
	for i := range waitSlots {
		if s := w.slot[i]; s <= n && s > n-waitSlots {
			for b, c := range w.counts[i] {
				sum[b] += c
				total += int(c)
			}
		}
	}
	if total == 0 {
		return 0, 0
	}
	rank := int(math.Ceil(0.95 * float64(total)))
	seen := 0
	for b, c := range sum {
		seen += int(c)
		if seen >= rank {
			if math.IsInf(waitBounds[b], 1) {
				return waitBounds[b-1], total
			}
			return waitBounds[b], total
		}
	}
	return waitBounds[len(waitBounds)-2], total
}

// slotLen is the length of one slot of the scaling window, in nanoseconds.
func (s *Scheduler) slotLen() int64 {
	return max(int64(s.cfg.ScaleWindow)/waitSlots, 1)
}

// recordWaitLocked notes that a job for model waited wait for p (or was
// refused after it), as of now (Unix nanoseconds); p nil (no pool could be
// named) records nothing.
func (s *Scheduler) recordWaitLocked(now int64, p *pool, model string, wait time.Duration) {
	if p == nil {
		return
	}
	k := scaleKey{p, model}
	w := s.waits[k]
	if w == nil {
		w = &waitWindow{}
		s.waits[k] = w
	}
	w.record(now, s.slotLen(), wait.Seconds())
}

// recordRefusal records a job refused for lack of a worker in time (a full
// queue or MaxQueueWait over) as a wait of MaxQueueWait, and at least twice
// ScaleUpWait (a short MaxQueueWait must not hide the overload), for the
// pool it was waiting for, or the first pool that serves its model.
func (s *Scheduler) recordRefusal(j *pickJob) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := j.waitPool
	if p == nil {
		for _, q := range s.pools {
			if serves, _ := s.poolServes(q, j); serves {
				p = q
				break
			}
		}
	}
	s.recordWaitLocked(s.cfg.Now().UnixNano(), p, j.model, max(s.cfg.MaxQueueWait, 2*s.cfg.ScaleUpWait))
}

// idleLocked reports whether m ran nothing, by this gateway's count and its
// own reports, since window before now.
func (m *member) idleLocked(now, window int64) bool {
	if m.load() > 0 {
		m.lastBusy = now
		return false
	}
	return now-m.lastBusy >= window
}

// ScaleSignal is one pool's scaling signal, as the metrics export it.
type ScaleSignal struct {
	Pool string
	// Ready is the pool's workers connected and not ejected; Idle those of
	// them that ran nothing over the whole window.
	Ready, Idle int
	// Wait is, by model, the recent queue wait (see the package's rule).
	Wait map[string]time.Duration
	// Saturated is set while jobs spill from the pool to the next.
	Saturated bool
	// Recommended is the worker count the rule asks for.
	Recommended int
}

// ScaleSignals returns each pool's scaling signal, in pool order.
func (s *Scheduler) ScaleSignals() []ScaleSignal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scaleSignalsLocked()
}

func (s *Scheduler) scaleSignalsLocked() []ScaleSignal {
	now := s.cfg.Now().UnixNano()
	slot := s.slotLen()
	window := int64(s.cfg.ScaleWindow)
	out := make([]ScaleSignal, 0, len(s.pools))
	for _, p := range s.pools {
		sig := ScaleSignal{Pool: p.name, Wait: map[string]time.Duration{}, Saturated: now < p.saturatedUntil}
		for _, m := range p.members {
			if m.live && now >= m.ejectedUntil {
				sig.Ready++
				if m.idleLocked(now, window) {
					sig.Idle++
				}
			}
		}
		for k, w := range s.waits {
			if k.pool != p {
				continue
			}
			if v, n := w.p95(now, slot); n > 0 {
				sig.Wait[k.model] = time.Duration(v * float64(time.Second))
			}
		}
		for model, q := range s.queues {
			for _, w := range *q {
				if w.job.waitPool == p {
					if age := time.Duration(now - w.since.UnixNano()); age > sig.Wait[model] {
						sig.Wait[model] = age
					}
				}
			}
		}
		up, down := sig.Saturated, true
		for _, d := range sig.Wait {
			up = up || d > s.cfg.ScaleUpWait
			down = down && d < s.cfg.ScaleDownWait
		}
		switch {
		case up:
			sig.Recommended = sig.Ready + 1
		case down && sig.Idle > 0:
			sig.Recommended = sig.Ready - 1
		default:
			sig.Recommended = sig.Ready
		}
		sig.Recommended = max(sig.Recommended, 1)
		out = append(out, sig)
	}
	// Windows of models no longer waited for are dropped once empty.
	for k, w := range s.waits {
		if _, n := w.p95(now, slot); n == 0 {
			delete(s.waits, k)
		}
	}
	return out
}

// scaleCollector exports the scaling signals when scraped.
type scaleCollector struct {
	s                       *Scheduler
	wait, recommended, idle *prometheus.Desc
}

func newScaleCollector(s *Scheduler) *scaleCollector {
	return &scaleCollector{s: s,
		wait: prometheus.NewDesc("parley_scheduler_queue_wait_recent_seconds",
			"95th percentile of the queue wait over the last scaling window of the generations the pool took for the model (placed at once: 0; refused for a full queue or after the longest wait: at least that wait), or the oldest one still waiting when longer.",
			[]string{"pool", "model"}, nil),
		recommended: prometheus.NewDesc("parley_scheduler_pool_workers_recommended",
			"Workers the pool should have by the scaling rule: ready + 1 while a model's recent queue wait is over the scale-up bound or the pool spills, ready − 1 while every wait is under the scale-down bound and a worker was idle all window, else ready; at least 1.",
			[]string{"pool"}, nil),
		idle: prometheus.NewDesc("parley_scheduler_pool_workers_idle",
			"Ready workers of the pool that ran nothing over the whole scaling window.",
			[]string{"pool"}, nil),
	}
}

func (c *scaleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.wait
	ch <- c.recommended
	ch <- c.idle
}

func (c *scaleCollector) Collect(ch chan<- prometheus.Metric) {
	for _, sig := range c.s.ScaleSignals() {
		ch <- prometheus.MustNewConstMetric(c.recommended, prometheus.GaugeValue, float64(sig.Recommended), sig.Pool)
		ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(sig.Idle), sig.Pool)
		for model, d := range sig.Wait {
			ch <- prometheus.MustNewConstMetric(c.wait, prometheus.GaugeValue, d.Seconds(), sig.Pool, model)
		}
	}
}
