package obs

import "github.com/prometheus/client_golang/prometheus"

// WorkerLoad is one worker's last load report as a gateway's scheduler
// holds it.
type WorkerLoad struct {
	// Worker is the address (or the in-process worker's name).
	Worker string
	// Running and Waiting are the sequences decoding and queued on the
	// worker; MaxBatch its batch slots (0: not known).
	Running, Waiting, MaxBatch int
}

// RegisterWorkerLoad exports the load of the workers list returns, read at
// every scrape: parley_worker_running, parley_worker_waiting and
// parley_worker_max_batch, by worker.
func (m *Metrics) RegisterWorkerLoad(list func() []WorkerLoad) {
	m.Registry.MustRegister(workerLoad{list})
}

var (
	workerRunning  = prometheus.NewDesc("parley_worker_running", "Sequences decoding on the worker, as it last reported.", []string{"worker"}, nil)
	workerWaiting  = prometheus.NewDesc("parley_worker_waiting", "Sequences waiting on the worker, as it last reported.", []string{"worker"}, nil)
	workerMaxBatch = prometheus.NewDesc("parley_worker_max_batch", "Sequences the worker decodes at once (0: not known).", []string{"worker"}, nil)
)

type workerLoad struct{ list func() []WorkerLoad }

func (w workerLoad) Describe(ch chan<- *prometheus.Desc) {
	ch <- workerRunning
	ch <- workerWaiting
	ch <- workerMaxBatch
}

func (w workerLoad) Collect(ch chan<- prometheus.Metric) {
	for _, l := range w.list() {
		ch <- prometheus.MustNewConstMetric(workerRunning, prometheus.GaugeValue, float64(l.Running), l.Worker)
		ch <- prometheus.MustNewConstMetric(workerWaiting, prometheus.GaugeValue, float64(l.Waiting), l.Worker)
		ch <- prometheus.MustNewConstMetric(workerMaxBatch, prometheus.GaugeValue, float64(l.MaxBatch), l.Worker)
	}
}
