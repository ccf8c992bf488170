package scheduler

import "github.com/prometheus/client_golang/prometheus"

// metrics are the scheduler's Prometheus families.
type metrics struct {
	queueDepth *prometheus.GaugeVec
	queueWait  prometheus.Histogram
	picks      [numReasons]prometheus.Counter
	ejections  *prometheus.CounterVec
	rejections *prometheus.CounterVec
	retries    prometheus.Counter
	lagged     prometheus.Counter
	probes     *prometheus.CounterVec

	poolPicks     *prometheus.CounterVec
	poolQueueWait *prometheus.HistogramVec
	poolSpills    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	picks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_scheduler_picks_total",
		Help: "Workers picked for a generation, by reason: affinity, spill (affinity target too loaded), least_loaded, round_robin.",
	}, []string{"reason"})
	m := &metrics{
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "parley_scheduler_queue_depth",
			Help: "Generations waiting in the gateway queue for a worker, by model.",
		}, []string{"model"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_scheduler_queue_wait_seconds",
			Help:    "Time generations waited in the gateway queue before a worker took them.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_scheduler_ejections_total",
			Help: "Workers taken out of rotation after a failed generation, by worker address.",
		}, []string{"worker"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_scheduler_rejections_total",
			Help: "Generations refused with unavailable, by reason: queue_full, queue_timeout, no_worker (none serves the model), no_healthy_worker (none for it is up), failed, exhausted (this gateway out of descriptors or memory).",
		}, []string{"reason"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_scheduler_retries_total",
			Help: "Generations retried on another worker after one failed before the first token.",
		}),
		lagged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_scheduler_ttft_samples_lagged_total",
			Help: "Times to first token not taken as a worker's queueing by the admission limit, the gateway's own lag (parley_gateway_lag_seconds), with the worker's where it reports one, explaining their rise.",
		}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_scheduler_admission_probes_total",
			Help: "One-token probes sent to a worker without a known batch size whose time to first token rose, by what they showed: queueing (the limit was cut), clear (the requests are slow by themselves), lagged (the gateway's lag, with the worker's where it reports one, explains it), failed (no answer to read).",
		}, []string{"result"}),
	}
	m.poolPicks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_scheduler_pool_picks_total",
		Help: "Generations placed on a worker of the pool.",
	}, []string{"pool"})
	m.poolQueueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "parley_scheduler_pool_queue_wait_seconds",
		Help:    "Time generations waited in the gateway queue before a worker of the pool took them.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
	}, []string{"pool"})
	m.poolSpills = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_scheduler_pool_spills_total",
		Help: "Generations placed on pool `to` because the pool `from` before it could not take them, by reason: saturated (queue wait past the spill bound) or unhealthy (no worker up).",
	}, []string{"from", "to", "reason"})
	for r := range numReasons {
		m.picks[r] = picks.WithLabelValues(reasonNames[r])
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{picks, m.queueDepth, m.queueWait, m.ejections, m.rejections, m.retries, m.lagged, m.probes,
			m.poolPicks, m.poolQueueWait, m.poolSpills} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
