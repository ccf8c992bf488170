package limits

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LoadBoard shares the gateways' load figures (store/memlimit.Board in one
// process, store/redis.LoadBoard across gateways).
type LoadBoard interface {
	// Share publishes this gateway's busy and total slots, good until ttl
	// from now, and returns the sums over every gateway whose figures are
	// still good, this one's included.
	Share(ctx context.Context, gateway string, busy, total float64, now time.Time, ttl time.Duration) (sumBusy, sumTotal float64, err error)
}

// LoadConfig sets up a Load. Zero fields take the defaults documented on them.
type LoadConfig struct {
	// Sample reads this gateway's busy and total worker slots now (see
	// scheduler.Slots).
	Sample func() (busy, total float64)
	// Window is the span the figures are averaged over (default 5 s);
	// Every how often they are sampled (default 500 ms).
	Window, Every time.Duration
	// Board shares the averaged figures between gateways; nil: this
	// gateway's alone.
	Board LoadBoard
	// Gateway names this gateway on the board.
	Gateway string
	// Rates are the tiers whose factor the metrics report.
	Rates Rates
	// Registerer receives the load and factor gauges (none when nil).
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Load is the inference cluster's load as the request rates read it: busy
// slots over all slots, averaged over a short window and summed over every
// gateway on the board. A nil Load is always 0.
type Load struct {
	cfg     LoadConfig
	mu      sync.Mutex
	samples []loadSample // the window's, oldest first
	current atomic.Uint64
	factor  *prometheus.GaugeVec
	gauge   prometheus.Gauge
	failing bool
}

type loadSample struct {
	at          time.Time
	busy, total float64
}

// NewLoad returns a Load at 0 until its first Tick.
func NewLoad(cfg LoadConfig) (*Load, error) {
	if cfg.Window <= 0 {
		cfg.Window = 5 * time.Second
	}
	if cfg.Every <= 0 {
		cfg.Every = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Load{
		cfg: cfg,
		factor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "parley_rate_limit_factor",
			Help: "The factor (0–1] applied to each tier's request rate and burst at the current load.",
		}, []string{"tier"}),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_rate_limit_load",
			Help: "The inference load the request rates are set by: busy worker slots over all, averaged over a short window, over every gateway sharing it.",
		}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{l.factor, l.gauge} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	l.publish(0)
	return l, nil
}

// Current is the load, 0–1.
func (l *Load) Current() float64 {
	if l == nil {
		return 0
	}
	return math.Float64frombits(l.current.Load())
}

// Run ticks every cfg.Every until ctx is done.
func (l *Load) Run(ctx context.Context) {
	t := time.NewTicker(l.cfg.Every)
	defer t.Stop()
	for {
		l.Tick(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick samples the scheduler, averages the window, and shares the average.
// With the board failing it keeps this gateway's own figure.
func (l *Load) Tick(ctx context.Context, now time.Time) {
	busy, total := l.cfg.Sample()
	l.mu.Lock()
	l.samples = append(l.samples, loadSample{at: now, busy: busy, total: total})
	drop := 0
	for drop < len(l.samples)-1 && now.Sub(l.samples[drop].at) > l.cfg.Window {
		drop++
	}
	l.samples = l.samples[drop:]
	var b, t float64
	for _, s := range l.samples {
		b, t = b+s.busy, t+s.total
	}
	n := float64(len(l.samples))
	b, t = b/n, t/n
	l.mu.Unlock()
	if l.cfg.Board != nil {
		sctx, cancel := context.WithTimeout(ctx, l.cfg.Every)
		sb, st, err := l.cfg.Board.Share(sctx, l.cfg.Gateway, b, t, now, 2*l.cfg.Every+time.Second)
		cancel()
		switch {
		case err == nil:
			b, t, l.failing = sb, st, false
		case !l.failing && ctx.Err() == nil:
			l.failing = true
			l.cfg.Logger.Warn("sharing the load figure failed; using this gateway's own", "err", err)
		}
	}
	load := 0.0
	if t > 0 {
		load = min(1, b/t)
	}
	l.publish(load)
}

func (l *Load) publish(load float64) {
	l.current.Store(math.Float64bits(load))
	l.gauge.Set(load)
	for tier, r := range l.cfg.Rates {
		l.factor.WithLabelValues(string(tier)).Set(r.Factor(load))
	}
}
