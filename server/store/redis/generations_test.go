package redis_test

import (
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/redis"
	"github.com/parleyhq/parley/server/store/storetest"
)

// newGenerations returns generation logs under a prefix of their own.
func newGenerations(t *testing.T) *redis.Generations {
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
}

func TestGenerations(t *testing.T) {
	eachServer(t, func(t *testing.T, open func(*testing.T) goredis.UniversalClient) {
		storetest.TestGenerations(t, func(t *testing.T) store.Generations {
			g := redis.NewGenerations(open(t))
			g.Prefix = "parley:test:" + uuid.NewString() + ":gen:"
			return g
		})
	})
}

// A claim lasts while its gateway keeps it, and lapses soon after the
// gateway stops (dies).
func TestGenerationClaimLapses(t *testing.T) {
	t.Parallel()
	g := newGenerations(t)
	g.RunningTTL = 400 * time.Millisecond
	ctx, id := t.Context(), uuid.NewString()
	if err := g.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	for range 8 { // 1.2 s, three TTLs, kept every 150 ms
		time.Sleep(150 * time.Millisecond)
		if err := g.Keep(ctx, id); err != nil {
			t.Fatal(err)
		}
		if running, _ := g.Running(ctx, id); !running {
			t.Fatal("a kept claim lapsed")
		}
	}
	time.Sleep(600 * time.Millisecond)
	if running, _ := g.Running(ctx, id); running {
		t.Fatal("the claim outlived its keeper")
	}
	if err := g.Start(ctx, id); err != nil {
		t.Fatalf("Start after the claim lapsed: %v", err)
	}
}
