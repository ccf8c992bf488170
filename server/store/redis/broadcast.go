package redis

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// EvictionChannel is the pub/sub channel of credential evictions.
const EvictionChannel = "parley:auth:evict"

// Broadcaster sends auth evictions (logout, key revocation, tier change) to
// every gateway through Redis pub/sub, as JSON on EvictionChannel. E is the
// eviction type (auth.Eviction, whose Broadcaster interface
// Broadcaster[auth.Eviction] implements); it is a parameter so that this
// storage backend does not import auth.
type Broadcaster[E any] struct{ rdb goredis.UniversalClient }

// NewBroadcaster returns a broadcaster of evictions of type E over rdb.
func NewBroadcaster[E any](rdb goredis.UniversalClient) Broadcaster[E] {
	return Broadcaster[E]{rdb: rdb}
}

// Publish sends e to every subscribed gateway.
func (b Broadcaster[E]) Publish(ctx context.Context, e E) error {
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
func (b Broadcaster[E]) Subscribe(ctx context.Context, apply func(E), log *slog.Logger) error {
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
				var e E
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
