package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/parleyhq/parley/server/respcache"
	redisstore "github.com/parleyhq/parley/server/store/redis"
)

// openResponseCache makes the response cache of --response-cache (nil when
// off) and says whether requests that do not say are in. Its shared level is
// --response-cache-redis-url's Redis when given, else shared (the
// --redis-url store's, or none); a cache Redis that is down at start is
// only warned about, as one that goes down later: the cache skips it.
func openResponseCache(ctx context.Context, mode, redisURL string, shared respcache.Remote, cfg respcache.Config) (*respcache.Cache, bool, error) {
	byDefault := false
	switch mode {
	case "off":
		return nil, false, nil
	case "opt-in":
	case "on":
		byDefault = true
	default:
		return nil, false, fmt.Errorf("--response-cache: %q: want off, opt-in or on", mode)
	}
	cfg.Remote = shared
	if redisURL != "" {
		rdb, err := redisstore.Dial(redisURL)
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
