package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// DefaultCachePrefix starts every key the response cache writes.
const DefaultCachePrefix = "parley:rc:"

// ResponseCache is respcache.Remote in Redis: one string per answer, with
// its TTL.
type ResponseCache struct {
	rdb    goredis.UniversalClient
	prefix string
}

// NewResponseCache returns the response cache's shared level over rdb, its
// keys starting with prefix (DefaultCachePrefix when empty).
func NewResponseCache(rdb goredis.UniversalClient, prefix string) *ResponseCache {
	if prefix == "" {
		prefix = DefaultCachePrefix
	}
	return &ResponseCache{rdb: rdb, prefix: prefix}
}

// Get implements respcache.Remote.
func (c *ResponseCache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := c.rdb.Get(ctx, c.prefix+key).Bytes()
	switch {
	case errors.Is(err, goredis.Nil):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("redis response cache: %w", err)
	}
	return v, true, nil
}

// Set implements respcache.Remote.
func (c *ResponseCache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := c.rdb.Set(ctx, c.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("redis response cache: %w", err)
	}
	return nil
}
