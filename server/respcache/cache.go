// Package respcache is the elastic gateway's response cache (docs/scaling.md): a
// deterministic request (temperature 0 or a seed, no tools) that opts in is
// answered from an earlier identical one instead of a GPU. Two levels: a
// process-local LRU (60 s, at most 1,000 entries and a byte bound), then a
// shared store (Redis, 300 s) that every gateway reads. The shared level is
// best effort: when it errs or is slow the cache skips it for a while and
// requests are served as misses.
package respcache

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"
)

// Remote is the shared level of the cache (store/redis.ResponseCache).
type Remote interface {
	// Get returns the value at key; false when there is none.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value at key for ttl.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// Config sets up a Cache. Zero fields take the defaults documented on them.
type Config struct {
	// LocalTTL is how long an entry lives in this process (default 60 s).
	LocalTTL time.Duration
	// LocalEntries bounds the entries held in this process (default 1,000).
	LocalEntries int
	// LocalBytes bounds their encoded size, all together (default 64 MiB).
	LocalBytes int64
	// MaxEntryBytes is the largest answer cached (default 1 MiB); a larger
	// one is not stored at either level.
	MaxEntryBytes int
	// RemoteTTL is how long an entry lives in the shared level (default 300 s).
	RemoteTTL time.Duration
	// RemoteTimeout bounds one call to the shared level (default 100 ms).
	RemoteTimeout time.Duration
	// RemoteBackoff is how long the shared level is skipped after it failed
	// (default 1 s).
	RemoteBackoff time.Duration
	// Remote is the shared level; nil: local only.
	Remote Remote
	// Registerer receives the cache's metrics (none when nil).
	Registerer prometheus.Registerer
	// Logger logs the shared level's failures (at most one a backoff).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.LocalTTL <= 0 {
		c.LocalTTL = 60 * time.Second
	}
	if c.LocalEntries <= 0 {
		c.LocalEntries = 1000
	}
	if c.LocalBytes <= 0 {
		c.LocalBytes = 64 << 20
	}
	if c.MaxEntryBytes <= 0 {
		c.MaxEntryBytes = 1 << 20
	}
	if c.RemoteTTL <= 0 {
		c.RemoteTTL = 300 * time.Second
	}
	if c.RemoteTimeout <= 0 {
		c.RemoteTimeout = 100 * time.Millisecond
	}
	if c.RemoteBackoff <= 0 {
		c.RemoteBackoff = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Cache is the two-level response cache. It is safe for concurrent use.
type Cache struct {
	cfg   Config
	local *expirable.LRU[string, []byte]
	// bytes is the encoded size of the local entries; the LRU bounds their
	// number, Put bounds this by evicting the oldest.
	bytes     atomic.Int64
	mu        sync.Mutex // serialises Put's evictions
	skipUntil atomic.Int64
	metrics   *metrics
}

// New returns an empty cache.
func New(cfg Config) (*Cache, error) {
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Cache{cfg: cfg, metrics: m}
	c.local = expirable.NewLRU[string, []byte](cfg.LocalEntries, func(_ string, v []byte) {
		c.bytes.Add(-int64(len(v)))
	}, cfg.LocalTTL)
	m.bytes = func() float64 { return float64(c.bytes.Load()) }
	m.entries = func() float64 { return float64(c.local.Len()) }
	return c, nil
}

// Level says where a Get found its value.
type Level string

// The levels.
const (
	Miss   Level = ""
	Local  Level = "local"
	Shared Level = "shared"
)

// Get returns the value at key from this process, else from the shared
// level (copying it into this process).
func (c *Cache) Get(ctx context.Context, key string) ([]byte, Level) {
	if v, ok := c.local.Get(key); ok {
		c.metrics.lookups.WithLabelValues(string(Local)).Inc()
		return v, Local
	}
	if c.remoteOK() {
		rctx, cancel := context.WithTimeout(ctx, c.cfg.RemoteTimeout)
		v, ok, err := c.cfg.Remote.Get(rctx, key)
		cancel()
		switch {
		case err != nil:
			c.remoteFailed(ctx, "get", err)
		case ok:
			c.metrics.lookups.WithLabelValues(string(Shared)).Inc()
			c.putLocal(key, v)
			return v, Shared
		}
	}
	c.metrics.lookups.WithLabelValues("miss").Inc()
	return nil, Miss
}

// Put stores value at key in both levels (the shared one in the
// background of the call: its failure only costs a later miss).
func (c *Cache) Put(ctx context.Context, key string, value []byte) {
	if len(value) > c.cfg.MaxEntryBytes {
		c.metrics.skipped.Inc()
		return
	}
	c.putLocal(key, value)
	if c.remoteOK() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RemoteTimeout)
		defer cancel()
		if err := c.cfg.Remote.Set(rctx, key, value, c.cfg.RemoteTTL); err != nil {
			c.remoteFailed(ctx, "set", err)
		}
	}
}

// putLocal adds an entry and evicts the oldest ones while the local bytes
// are over their bound.
func (c *Cache) putLocal(key string, value []byte) {
	if int64(len(value)) > c.cfg.LocalBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Replaced in place, an entry's bytes would not be given back: remove it
	// (its eviction callback does), even when expired but not yet swept.
	if c.local.Contains(key) {
		c.local.Remove(key)
	}
	c.bytes.Add(int64(len(value)))
	c.local.Add(key, value)
	for c.bytes.Load() > c.cfg.LocalBytes {
		if _, _, ok := c.local.RemoveOldest(); !ok {
			break
		}
	}
}

// Len returns the number of entries held in this process.
func (c *Cache) Len() int { return c.local.Len() }

// Bytes returns their encoded size.
func (c *Cache) Bytes() int64 { return c.bytes.Load() }

func (c *Cache) remoteOK() bool {
	return c.cfg.Remote != nil && time.Now().UnixNano() >= c.skipUntil.Load()
}

// remoteFailed skips the shared level for the backoff and logs the first
// failure of each backoff.
func (c *Cache) remoteFailed(ctx context.Context, op string, err error) {
	c.metrics.remoteErrors.WithLabelValues(op).Inc()
	now := time.Now().UnixNano()
	prev := c.skipUntil.Load()
	if now < prev || !c.skipUntil.CompareAndSwap(prev, now+int64(c.cfg.RemoteBackoff)) {
		return
	}
	c.cfg.Logger.WarnContext(ctx, "response cache: shared level failed; skipping it for a while",
		"op", op, "err", err, "backoff", c.cfg.RemoteBackoff)
}

// MaxEntryBytes is the largest answer the cache stores.
func (c *Cache) MaxEntryBytes() int { return c.cfg.MaxEntryBytes }
