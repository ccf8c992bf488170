package redis

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/server/auth"
)

// EvictionChannel is the pub/sub channel of credential evictions.
const EvictionChannel = "parley:auth:evict"

// Broadcaster sends auth evictions (logout, key revocation, tier change) to
// every gateway through Redis pub/sub.
type Broadcaster struct{ rdb goredis.UniversalClient }

var _ auth.Broadcaster = Broadcaster{}

// NewBroadcaster returns a broadcaster over rdb.
func NewBroadcaster(rdb goredis.UniversalClient) Broadcaster { return Broadcaster{rdb: rdb} }

// Publish implements auth.Broadcaster.
func (b Broadcaster) Publish(ctx context.Context, e auth.Eviction) error {
	msg, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return b.rdb.Publish(ctx, EvictionChannel, msg).Err()
}

// Subscribe applies every eviction published by any gateway (this one
// included) with apply until ctx ends, resubscribing after a lost
// connection. It returns once the first subscription is confirmed, so a
// publish after it returns is seen.
func (b Broadcaster) Subscribe(ctx context.Context, apply func(auth.Eviction), log *slog.Logger) error {
	sub := b.rdb.Subscribe(ctx, EvictionChannel)
	if _, err := sub.Receive(ctx); err != nil {
		sub.Close()
		return err
	}
	go func() {
		defer sub.Close()
		// The go-redis PubSub reconnects and resubscribes by itself.
		ch := sub.Channel(goredis.WithChannelHealthCheckInterval(10 * time.Second))
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				var e auth.Eviction
				if err := json.Unmarshal([]byte(m.Payload), &e); err != nil {
					log.Warn("redis: bad eviction message", "err", err)
					continue
				}
				apply(e)
			}
		}
	}()
	return nil
}
