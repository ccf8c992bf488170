package limits_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/redis"
)

// A web send's one Take — the user's tier buckets and request rate — runs
// as one script on a real Redis and on a Redis Cluster: all its keys carry
// the user as hash tag, so they are in one slot (a Take mixing tags is
// refused, even on a single server).
func TestAdmitOnRedisAndCluster(t *testing.T) {
	for _, env := range []string{"PARLEY_TEST_REDIS_URL", "PARLEY_TEST_REDIS_CLUSTER_URL"} {
		t.Run(env, func(t *testing.T) {
			url := os.Getenv(env)
			if url == "" {
				t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", env)
			}
			rdb, err := redis.Open(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			l := limits.New(redis.NewLimiter(rdb, "parley:test:"+uuid.NewString()+":"), time.Now)
			l.Rates = limits.Rates{store.TierFree: {PerMinute: 60, Burst: 3}}
			m := &models.Model{ID: "m", TierLimits: map[store.Tier]models.TierLimit{
				store.TierFree: {Requests: 2, InputTokens: 1000, OutputTokens: 1000, Window: time.Hour}}}
			ctx := context.Background()
			user := uuid.NewString()
			for i := range 2 {
				g, err := l.Admit(ctx, user, store.TierFree, m, 10, 10)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				l.Settle(ctx, g, 5)
			}
			if _, err := l.Admit(ctx, user, store.TierFree, m, 10, 10); err == nil {
				t.Fatal("a third request within the tier's 2 was admitted")
			}
		})
	}
}
