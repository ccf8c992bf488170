package redis_test

import (
	"os"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/redis"
	"github.com/parleyhq/parley/server/store/storetest"
)

func TestGenerations(t *testing.T) {
	t.Parallel()
	storetest.TestGenerations(t, func(t *testing.T) store.Generations {
		url := os.Getenv(EnvURL)
		if url == "" {
			t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvURL)
		}
		c, err := redis.Open(t.Context(), url)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		g := redis.NewGenerations(c)
		g.Prefix = "parley:test:" + uuid.NewString() + ":gen:"
		return g
	})
}
