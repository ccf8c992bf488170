package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/respcache"
	redisstore "github.com/parleyhq/parley/server/store/redis"
)

// openResponseCache makes the response cache of --response-cache (nil when
// off) and says whether requests that do not say are in. Its shared level is
// --response-cache-redis-url's Redis when given, else shared (the
// --redis-url store's, or none); a cache Redis that is down at start is
// only warned about, as one that goes down later: the cache skips it.
func openResponseCache(ctx context.Context, set respcache.Settings, shared respcache.Remote, reg prometheus.Registerer, logger *slog.Logger) (*respcache.Cache, bool, error) {
	on, byDefault, err := set.ParseMode()
	if !on || err != nil {
		return nil, false, err
	}
	cfg := set.Config
	cfg.Remote, cfg.Registerer, cfg.Logger = shared, reg, logger
	if set.RedisURL != "" {
		rdb, err := redisstore.Dial(set.RedisURL)
		if err != nil {
			return nil, false, fmt.Errorf("--response-cache-redis-url: %w", err)
		}
		if err := rdb.Ping(ctx).Err(); err != nil {
			cfg.Logger.Warn("the response cache's Redis does not answer; the cache skips it until it does", "err", err)
		}
		cfg.Remote = redisstore.NewResponseCache(rdb, "")
	}
	c, err := respcache.New(cfg)
	return c, byDefault, err
}

// cacheHeaders is respcache.Headers when the cache is on, else nothing (no
// wrapper on every POST for a feature that is off).
func cacheHeaders(on bool) func(http.Handler) http.Handler {
	if on {
		return respcache.Headers
	}
	return func(h http.Handler) http.Handler { return h }
}
