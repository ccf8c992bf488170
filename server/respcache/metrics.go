package respcache

import "github.com/prometheus/client_golang/prometheus"

// metrics are the cache's Prometheus families.
type metrics struct {
	lookups      *prometheus.CounterVec
	remoteErrors *prometheus.CounterVec
	skipped      prometheus.Counter
	bytes        func() float64
	entries      func() float64
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_response_cache_lookups_total",
			Help: "Response cache lookups, by result: local (process LRU hit), shared (Redis hit), miss.",
		}, []string{"result"}),
		remoteErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_response_cache_remote_errors_total",
			Help: "Failed calls to the response cache's shared level (Redis), by operation; the level is skipped for a while after each.",
		}, []string{"op"}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_response_cache_too_large_total",
			Help: "Answers not cached because they were over the largest entry size.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	gauges := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_response_cache_local_bytes",
			Help: "Encoded bytes of the answers held in this gateway's response cache.",
		}, func() float64 { return m.bytes() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_response_cache_local_entries",
			Help: "Answers held in this gateway's response cache.",
		}, func() float64 { return m.entries() }),
	}
	for _, c := range append([]prometheus.Collector{m.lookups, m.remoteErrors, m.skipped}, gauges...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
