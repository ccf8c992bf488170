// Package usage copies usage records to the Usage store when it is not the
// ledger's own database (ClickHouse at scale).
//
// A usage record is never held in memory on its way: Ledger.Settle commits
// it with its charge, in one transaction, into the usage_outbox table of the
// ledger's database (docs/architecture.md, Data). The Relay ships the outbox to the Usage
// store in batches and deletes what the store acknowledged, so a record
// survives a gateway's kill -9 (it is a committed row) and an outage of the
// Usage store (it waits, the relay retries with back-off), and nothing is
// ever dropped for a full buffer: the backlog is rows on disk, reported as
// parley_usage_outbox_backlog. Shipping is at least once; the Usage store's
// Record skips request IDs it already holds, so a batch shipped again after
// a crash between the store's acknowledgement and the delete is stored once.
// A batch shipped again is the same batch (same records, same order), so a
// store that deduplicates identical inserts stores it once.
package usage

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/store"
)

// Config tunes a Relay; zero fields take the defaults.
type Config struct {
	// Batch is the most records per insert (default 500).
	Batch int
	// Interval is how often the outbox is read when there is no news of a
	// settle (records of other gateways, retries): default 250 ms.
	Interval time.Duration
	// MaxBackoff is the longest wait between tries while the Usage store
	// fails (default 30 s); the wait starts at Interval and doubles.
	MaxBackoff time.Duration
	// Timeout bounds one batch's ship (default 10 s).
	Timeout time.Duration
}

func (c *Config) defaults() {
	if c.Batch <= 0 {
		c.Batch = 500
	}
	if c.Interval <= 0 {
		c.Interval = 250 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
}

// Relay ships an outbox to a Usage store until closed.
type Relay struct {
	outbox store.UsageOutbox
	dest   store.Usage
	logger *slog.Logger
	cfg    Config

	kick chan struct{}
	stop context.CancelFunc
	done chan struct{}

	backlog, oldest prometheus.Gauge
	shipped, failed prometheus.Counter

	mu          sync.Mutex
	lastBacklog time.Time
}

// NewRelay starts a relay from outbox to dest. Its metrics
// (parley_usage_outbox_backlog, parley_usage_outbox_oldest_seconds,
// parley_usage_relayed_total, parley_usage_relay_errors_total) go to reg
// when it is not nil.
func NewRelay(outbox store.UsageOutbox, dest store.Usage, reg prometheus.Registerer, logger *slog.Logger, cfg Config) *Relay {
	cfg.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{
		outbox: outbox, dest: dest, logger: logger, cfg: cfg,
		kick: make(chan struct{}, 1), stop: cancel, done: make(chan struct{}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_usage_outbox_backlog",
			Help: "Usage records committed with their charges and not yet copied to the Usage store."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_usage_outbox_oldest_seconds",
			Help: "Age of the oldest usage record waiting in the outbox (0 when none)."}),
		shipped: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_usage_relayed_total",
			Help: "Usage records copied from the outbox to the Usage store."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_usage_relay_errors_total",
			Help: "Failed attempts to copy a batch of usage records to the Usage store (retried)."}),
	}
	if reg != nil {
		reg.MustRegister(r.backlog, r.oldest, r.shipped, r.failed)
	}
	go r.loop(ctx)
	return r
}

// Kick tells the relay that records were committed, so it ships them now
// rather than at its next interval. It never blocks.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Close stops the relay after a last, short attempt to ship what waits
// (what is left stays in the outbox for the next start or another gateway).
func (r *Relay) Close() {
	r.stop()
	<-r.done
}

func (r *Relay) loop(ctx context.Context) {
	defer close(r.done)
	var (
		wait      time.Duration // back-off while the store fails; 0 when healthy
		downSince time.Time
		lastLog   time.Time
	)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			r.drain()
			return
		case <-timer.C:
		case <-r.kick:
			if wait > 0 { // failing: keep to the back-off
				continue
			}
		}
		n, err := r.shipAll(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			continue // closing
		case err != nil:
			r.failed.Inc()
			if downSince.IsZero() {
				downSince = time.Now()
			}
			wait = min(max(2*wait, r.cfg.Interval), r.cfg.MaxBackoff)
			r.refreshBacklog(ctx, true)
			if time.Since(lastLog) >= time.Minute {
				lastLog = time.Now()
				r.logger.Error("copying usage records to the usage store; they wait in the outbox and will be retried",
					"err", err, "retry_in", wait, "down_for", time.Since(downSince).Round(time.Second))
			}
		default:
			if !downSince.IsZero() {
				r.logger.Info("usage store back: the outbox is shipped", "down_for", time.Since(downSince).Round(time.Second), "shipped", n)
				downSince, lastLog = time.Time{}, time.Time{}
			}
			wait = 0
			r.refreshBacklog(ctx, false)
		}
		next := r.cfg.Interval
		if wait > 0 {
			next = wait/2 + rand.N(wait) // jitter: gateways do not retry in step
		}
		timer.Reset(next)
	}
}

// shipAll ships batches until the outbox is empty or a ship fails, and
// returns how many records went. A batch smaller than Batch does not mean
// the outbox is empty: a batch that failed is shipped again as it was, and
// it may have been stamped small while settles were still arriving; only a
// ship of nothing does.
func (r *Relay) shipAll(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := r.shipOnce(ctx)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

func (r *Relay) shipOnce(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	n, err := r.outbox.Ship(ctx, r.cfg.Batch, r.dest.Record)
	r.shipped.Add(float64(n))
	return n, err
}

// drain makes a last attempt, bounded to two seconds, at shutdown.
func (r *Relay) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := r.shipAll(ctx); err != nil {
		r.logger.Warn("usage records left in the outbox at shutdown; the next start ships them", "err", err)
	}
}

// refreshBacklog updates the backlog gauges, at most every two seconds
// unless forced (a count over a large backlog is not free).
func (r *Relay) refreshBacklog(ctx context.Context, force bool) {
	r.mu.Lock()
	if !force && time.Since(r.lastBacklog) < 2*time.Second {
		r.mu.Unlock()
		return
	}
	r.lastBacklog = time.Now()
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	n, oldest, err := r.outbox.Backlog(ctx)
	if err != nil {
		r.logger.Debug("reading the usage outbox's backlog", "err", err)
		return
	}
	r.backlog.Set(float64(n))
	if oldest.IsZero() {
		r.oldest.Set(0)
	} else {
		r.oldest.Set(time.Since(oldest).Seconds())
	}
}
