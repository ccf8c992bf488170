package redis_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/redis"
	"github.com/parleyhq/parley/server/store/storetest"
)

// EnvURL names the test Redis and EnvClusterURL the test Redis Cluster
// (three masters); the suites skip when they are unset (scripts/services.sh
// env sets them, and CI runs them).
const (
	EnvURL        = "PARLEY_TEST_REDIS_URL"
	EnvClusterURL = "PARLEY_TEST_REDIS_CLUSTER_URL"
)

// servers are the Redis deployments every suite runs against.
var servers = []struct{ name, env string }{{"single", EnvURL}, {"cluster", EnvClusterURL}}

// eachServer runs fn as a subtest per deployment, with a client of it.
func eachServer(t *testing.T, fn func(t *testing.T, open func(t *testing.T) goredis.UniversalClient)) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			fn(t, func(t *testing.T) goredis.UniversalClient { return client(t, s.env) })
		})
	}
}

// client connects to the server named by env, skipping when it is unset.
func client(t *testing.T, env string) goredis.UniversalClient {
	t.Helper()
	url := os.Getenv(env)
	if url == "" {
		t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", env)
	}
	c, err := redis.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// deletePrefix deletes every key starting with prefix, on every master of
// a cluster.
func deletePrefix(c goredis.UniversalClient, prefix string) {
	ctx := context.Background()
	del := func(ctx context.Context, n goredis.UniversalClient) error {
		keys, _ := n.Keys(ctx, prefix+"*").Result()
		for _, k := range keys {
			n.Del(ctx, k)
		}
		return nil
	}
	if cc, ok := c.(*goredis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return del(ctx, n) })
		return
	}
	_ = del(ctx, c)
}

func newLimiter(c goredis.UniversalClient) storetest.NewLimiter {
	return func(t *testing.T) store.Limiter {
		prefix := "parley:test:" + uuid.NewString() + ":"
		t.Cleanup(func() { deletePrefix(c, prefix) })
		return redis.NewLimiter(c, prefix)
	}
}

func TestLimiter(t *testing.T) {
	eachServer(t, func(t *testing.T, open func(*testing.T) goredis.UniversalClient) {
		storetest.TestLimiter(t, newLimiter(open(t)))
	})
}

// TestBigNumbers checks the script's arithmetic where doubles would lose
// precision: a bucket of 10^15 units over 100 days, read to the nanosecond
// (elapsed·limit is about 10^31).
func TestBigNumbers(t *testing.T) {
	eachServer(t, func(t *testing.T, open func(*testing.T) goredis.UniversalClient) {
		l := newLimiter(open(t))(t)
		ctx := t.Context()
		now := time.Date(2030, 1, 1, 0, 0, 0, 123456789, time.UTC)
		const limit = int64(1_000_000_000_000_000)
		w := 100 * 24 * time.Hour
		d, err := l.Take(ctx, now, []store.Take{{Key: "big", Limit: limit, Window: w, N: limit - 1}})
		if err != nil || !d.Allowed || d.States[0].Remaining != 1 {
			t.Fatalf("drain: %+v %v", d, err)
		}
		// Full again after ceil((limit-1)·w/limit) = w - 8.64 ns → w - 8 ns.
		if got := d.States[0].ResetAt.Sub(now); got != w-8 {
			t.Fatalf("ResetAt in %v, want %v", got, w-8)
		}
		// A third of the window later: limit/3 units accrued, to the unit.
		st, err := l.Peek(ctx, now.Add(w/3), "big", limit, w)
		if err != nil || st.Remaining != 1+limit/3 {
			t.Fatalf("a third later: %+v %v (want %d)", st, err, 1+limit/3)
		}
		if _, err := l.Take(ctx, now, []store.Take{{Key: "k", Limit: 1 << 53, Window: time.Hour, N: 1}}); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("limit 2^53: %v", err)
		}
		st, err = l.Peek(ctx, now.Add(w/2), "big", limit, w)
		if err != nil || st.Remaining != limit/2+1 {
			t.Fatalf("half the window later: %+v %v (want remaining %d)", st, err, limit/2+1)
		}
	})
}

// TestHashTags checks the cluster key layout: keys that name a tag keep it
// (and so spread over the cluster's shards), the rest share {rl}, and a Take
// mixing two tags is refused before it reaches Redis.
func TestHashTags(t *testing.T) {
	eachServer(t, func(t *testing.T, open func(*testing.T) goredis.UniversalClient) {
		c := open(t)
		l := newLimiter(c)(t)
		ctx := t.Context()
		now := time.Now()
		take := func(keys ...string) error {
			var ts []store.Take
			for _, k := range keys {
				ts = append(ts, store.Take{Key: k, Limit: 10, Window: time.Minute, N: 1})
			}
			_, err := l.Take(ctx, now, ts)
			return err
		}
		if err := take("auth:login:ip:1.2.3.4", "auth:login:email:a@b"); err != nil {
			t.Fatalf("untagged keys share {rl}: %v", err)
		}
		for _, u := range []string{"u1", "u2", "u3", "u4", "u5", "u6"} {
			if err := take("lim:{"+u+"}:m:1", "lim:{"+u+"}:m:2", "lim:{"+u+"}:m:3"); err != nil {
				t.Fatalf("one user's tagged keys: %v", err)
			}
		}
		if err := take("lim:{u1}:m:1", "lim:{u2}:m:1"); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("two tags in one Take: %v, want ErrInvalidArgument", err)
		}
		if err := take("lim:{u1}:m:1", "plain"); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("a tag and {rl} in one Take: %v, want ErrInvalidArgument", err)
		}
		// On the cluster, the six users' buckets are spread over more than
		// one master (their slots: 4574, 8637, 12700, 379, 4442, 8505; a master
		// holds 0-5460, 5461-10922 or 10923-16383).
		if cc, ok := c.(*goredis.ClusterClient); ok {
			masters := map[string]bool{}
			for _, u := range []string{"u1", "u2", "u3", "u4", "u5", "u6"} {
				n, err := cc.MasterForKey(ctx, "{"+u+"}")
				if err != nil {
					t.Fatal(err)
				}
				masters[n.Options().Addr] = true
			}
			if len(masters) < 2 {
				t.Fatalf("six users' buckets on %d master(s)", len(masters))
			}
		}
	})
}

func TestClusterURL(t *testing.T) {
	t.Parallel()
	if !redis.IsClusterURL("redis+cluster://h1:1,h2:2") || redis.IsClusterURL("redis://h1:1") {
		t.Fatal("IsClusterURL")
	}
	for _, bad := range []string{"redis+cluster://h1:1,,h2:2", "redis+cluster://h1:1/3", "redis+cluster://h1:1?dial_timeout=x"} {
		if _, err := redis.Open(t.Context(), bad); err == nil {
			t.Errorf("Open(%q) accepted", bad)
		}
	}
	if _, err := redis.Open(t.Context(), "redis+cluster://u:secret@127.0.0.1:1,127.0.0.1:2/9"); err == nil || !strings.Contains(err.Error(), "xxxxx") || strings.Contains(err.Error(), "secret") {
		t.Errorf("error shows the password or no URL: %v", err)
	}
}
