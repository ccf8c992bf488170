package redis_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/server/store/redis"
)

func testClient(t *testing.T) (goredis.UniversalClient, string) {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvURL)
	}
	c, err := redis.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	prefix := "parley:test:" + uuid.NewString() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		if keys, _ := c.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		c.Close()
	})
	return c, prefix
}

// Two gateways' figures are summed while fresh; an expired one is dropped.
func TestLoadBoard(t *testing.T) {
	c, prefix := testClient(t)
	b := redis.NewLoadBoard(c, prefix+"load")
	ctx, now := t.Context(), time.Now()
	if busy, total, err := b.Share(ctx, "a", 2, 2, now, 2*time.Second); err != nil || busy != 2 || total != 2 {
		t.Fatalf("a alone: %v %v %v", busy, total, err)
	}
	if busy, total, err := b.Share(ctx, "b", 0.5, 6, now, 2*time.Second); err != nil || busy != 2.5 || total != 8 {
		t.Fatalf("a and b: %v %v %v", busy, total, err)
	}
	// a stops publishing; 3 s on, only b's fresh figure counts.
	if busy, total, err := b.Share(ctx, "b", 1, 6, now.Add(3*time.Second), 2*time.Second); err != nil || busy != 1 || total != 6 {
		t.Fatalf("after a expired: %v %v %v", busy, total, err)
	}
	if n, _ := c.HLen(ctx, prefix+"load").Result(); n != 1 {
		t.Fatalf("%d fields left, want b's alone", n)
	}
}

func TestResponseCacheRemote(t *testing.T) {
	c, prefix := testClient(t)
	rc := redis.NewResponseCache(c, prefix+"rc:")
	ctx := t.Context()
	if _, ok, err := rc.Get(ctx, "k"); ok || err != nil {
		t.Fatalf("empty: %v %v", ok, err)
	}
	if err := rc.Set(ctx, "k", []byte{0, 1, 2, 255}, 300*time.Second); err != nil {
		t.Fatal(err)
	}
	v, ok, err := rc.Get(ctx, "k")
	if !ok || err != nil || string(v) != string([]byte{0, 1, 2, 255}) {
		t.Fatalf("got %v %v %v", v, ok, err)
	}
	if ttl, _ := c.PTTL(ctx, prefix+"rc:k").Result(); ttl <= 299*time.Second || ttl > 300*time.Second {
		t.Fatalf("TTL %v, want 300 s", ttl)
	}
	// A Redis that is down errs (the cache then skips it).
	down := redis.NewResponseCache(goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), "")
	if _, _, err := down.Get(ctx, "k"); err == nil {
		t.Fatal("no error from a Redis that is down")
	}
}
