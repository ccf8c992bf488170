package redis_test

import (
	"testing"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/redis"
	"github.com/parleyhq/parley/server/store/storetest"
)

func TestGenerations(t *testing.T) {
	eachServer(t, func(t *testing.T, open func(*testing.T) goredis.UniversalClient) {
		storetest.TestGenerations(t, func(t *testing.T) store.Generations {
			g := redis.NewGenerations(open(t))
			g.Prefix = "parley:test:" + uuid.NewString() + ":gen:"
			return g
		})
	})
}
