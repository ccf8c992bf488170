package scheduler

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultPool names the pool of Config.Workers and of AddWorker's workers.
const DefaultPool = "default"

// Pool is a named group of workers (a region's GPU cluster). Pools are tried
// in order: the first is the primary, the others reserves a job spills to
// when the ones before it are saturated or down.
type Pool struct {
	// Name labels the pool's metrics and its workers in ListWorkers.
	Name string
	// Workers are its addresses, host:port, resolved as Config.Workers are.
	Workers []string
}

// ParsePool reads one --worker-pool value, name=host:port,host:port.
func ParsePool(s string) (Pool, error) {
	name, list, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, ",: ") {
		return Pool{}, fmt.Errorf("worker pool %q: want name=host:port[,host:port…]", s)
	}
	p := Pool{Name: name}
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			p.Workers = append(p.Workers, a)
		}
	}
	if len(p.Workers) == 0 {
		return Pool{}, fmt.Errorf("worker pool %q: no worker addresses", name)
	}
	return p, nil
}

// pool is one Pool as the scheduler tracks it; guarded by the scheduler's
// lock.
type pool struct {
	name    string
	rank    int // 0 is the primary
	members []*member
	// saturatedUntil (Unix nanoseconds): a job waited past SpillWait for
	// this pool, so until then jobs it cannot take at once go on to the
	// next pool rather than wait for it.
	saturatedUntil int64

	picks     prometheus.Counter
	queueWait prometheus.Observer
}

// poolLocked returns the pool named name, appending it to the order when new.
func (s *Scheduler) poolLocked(name string) *pool {
	for _, p := range s.pools {
		if p.name == name {
			return p
		}
	}
	p := &pool{name: name, rank: len(s.pools),
		picks:     s.metrics.poolPicks.WithLabelValues(name),
		queueWait: s.metrics.poolQueueWait.WithLabelValues(name)}
	s.pools = append(s.pools, p)
	return p
}

// regroupLocked rebuilds each pool's member list from s.members.
func (s *Scheduler) regroupLocked() {
	for _, p := range s.pools {
		clear(p.members)
		p.members = p.members[:0]
	}
	for _, m := range s.members {
		m.pool.members = append(m.pool.members, m)
	}
}

// poolServes reports whether any of p's workers serves j's model (or might,
// not having connected yet), and whether one could take j by waiting: as
// hopeLocked, within p.
func (s *Scheduler) poolServes(p *pool, j *pickJob) (serves, hope bool) {
	grace := s.cfg.ConnectGrace.Nanoseconds()
next:
	for _, m := range p.members {
		if !m.mayServe(j.model) {
			continue
		}
		serves = true
		for _, t := range j.tried[:j.ntried] {
			if t == m {
				continue next
			}
		}
		if (m.live && j.now >= m.ejectedUntil) || (!m.everLive && j.now < m.added+grace) {
			return true, true
		}
	}
	return serves, false
}

// poolUpLocked reports whether p has a worker connected and not ejected.
func poolUpLocked(p *pool, now int64) (up, ready int) {
	for _, m := range p.members {
		if m.live && now >= m.ejectedUntil {
			ready++
		}
	}
	if ready > 0 {
		up = 1
	}
	return up, ready
}

// spill reasons.
const (
	spillSaturated = "saturated"
	spillUnhealthy = "unhealthy"
)

type spillKey struct{ from, to, reason string }

// countSpill counts a job placed on pool to because from was passed over.
func (s *Scheduler) countSpill(from, to *pool, reason string) {
	k := spillKey{from.name, to.name, reason}
	c := s.spills[k]
	if c == nil {
		c = s.metrics.poolSpills.WithLabelValues(k.from, k.to, k.reason)
		s.spills[k] = c
	}
	c.Inc()
}

// poolCollector reports each pool's state when scraped.
type poolCollector struct {
	s                       *Scheduler
	up, ready, depth, satur *prometheus.Desc
}

func newPoolCollector(s *Scheduler) *poolCollector {
	return &poolCollector{s: s,
		up:    prometheus.NewDesc("parley_scheduler_pool_up", "1 when the pool has a worker connected and not ejected, else 0.", []string{"pool"}, nil),
		ready: prometheus.NewDesc("parley_scheduler_pool_workers_ready", "Workers of the pool connected and not ejected.", []string{"pool"}, nil),
		depth: prometheus.NewDesc("parley_scheduler_pool_queue_depth", "Generations waiting in the gateway queue for a worker of the pool.", []string{"pool"}, nil),
		satur: prometheus.NewDesc("parley_scheduler_pool_saturated", "1 while the pool counts as saturated (a job waited past the spill bound for it): jobs it cannot take at once go to the next pool.", []string{"pool"}, nil),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.ready
	ch <- c.depth
	ch <- c.satur
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now().UnixNano()
	depth := map[*pool]int{}
	for _, q := range s.queues {
		for _, w := range *q {
			if w.job.waitPool != nil {
				depth[w.job.waitPool]++
			}
		}
	}
	for _, p := range s.pools {
		up, ready := poolUpLocked(p, now)
		sat := 0.0
		if now < p.saturatedUntil {
			sat = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, float64(up), p.name)
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(ready), p.name)
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(depth[p]), p.name)
		ch <- prometheus.MustNewConstMetric(c.satur, prometheus.GaugeValue, sat, p.name)
	}
}
