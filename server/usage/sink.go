// Package usage records what each generation used, off the request path:
// records are queued in memory and written to the Usage store in batches.
package usage

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/store"
)

// Sink batches usage records into a store.Usage.
type Sink struct {
	store    store.Usage
	logger   *slog.Logger
	maxBatch int
	every    time.Duration

	mu      sync.Mutex
	pending []store.UsageRecord
	limit   int
	kick    chan struct{}
	done    chan struct{}
	stop    context.CancelFunc

	dropped prometheus.Counter
	written prometheus.Counter
}

// NewSink starts a sink writing batches of up to maxBatch records at least
// every interval. At most bufferLimit records wait in memory; past that new
// records are dropped and counted (parley_usage_dropped_total), so a store
// outage cannot exhaust memory.
func NewSink(s store.Usage, reg prometheus.Registerer, logger *slog.Logger, maxBatch, bufferLimit int, interval time.Duration) *Sink {
	ctx, cancel := context.WithCancel(context.Background())
	k := &Sink{
		store: s, logger: logger, maxBatch: maxBatch, every: interval, limit: bufferLimit,
		kick: make(chan struct{}, 1), done: make(chan struct{}), stop: cancel,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_usage_dropped_total", Help: "Usage records dropped because the buffer was full."}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_usage_written_total", Help: "Usage records written to the store."}),
	}
	if reg != nil {
		reg.MustRegister(k.dropped, k.written)
	}
	go k.loop(ctx)
	return k
}

// Record queues r without blocking.
func (k *Sink) Record(r store.UsageRecord) {
	k.mu.Lock()
	if len(k.pending) >= k.limit {
		k.mu.Unlock()
		k.dropped.Inc()
		k.logger.Error("usage buffer full: record dropped", "request_id", r.RequestID)
		return
	}
	k.pending = append(k.pending, r)
	full := len(k.pending) >= k.maxBatch
	k.mu.Unlock()
	if full {
		select {
		case k.kick <- struct{}{}:
		default:
		}
	}
}

// Close writes what is pending and stops the sink.
func (k *Sink) Close() {
	k.stop()
	<-k.done
}

func (k *Sink) loop(ctx context.Context) {
	defer close(k.done)
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			for k.flush(flushCtx) {
			}
			cancel()
			return
		case <-t.C:
		case <-k.kick:
		}
		for k.flush(ctx) {
		}
	}
}

// flush writes one batch; it reports whether more are pending. A failed
// batch goes back to the front of the queue for the next tick.
func (k *Sink) flush(ctx context.Context) bool {
	k.mu.Lock()
	n := min(len(k.pending), k.maxBatch)
	batch := append([]store.UsageRecord(nil), k.pending[:n]...)
	k.mu.Unlock()
	if n == 0 {
		return false
	}
	if err := k.store.Record(ctx, batch); err != nil {
		k.logger.Error("writing usage records; will retry", "count", n, "err", err)
		return false
	}
	k.written.Add(float64(n))
	k.mu.Lock()
	k.pending = k.pending[n:]
	more := len(k.pending) > 0
	k.mu.Unlock()
	return more
}
