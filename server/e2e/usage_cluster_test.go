package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/internal/testlock"
)

// The usage summary and records over a ClickHouse cluster (two shards of two
// replicas, scripts/services.sh with PARLEY_SERVICES_CH_CLUSTER=1): two
// gateways on PostgreSQL settle the charges, their outbox relays ship the
// records through the Distributed table, and the summary a user reads adds
// up to the ledger to the nano-USD.
func TestUsageSummaryClickHouseCluster(t *testing.T) {
	url, cluster := os.Getenv("PARLEY_TEST_CLICKHOUSE_CLUSTER_URL"), os.Getenv("PARLEY_TEST_CLICKHOUSE_CLUSTER")
	if url == "" || cluster == "" {
		t.Skip("PARLEY_TEST_CLICKHOUSE_CLUSTER_URL not set (PARLEY_SERVICES_CH_CLUSTER=1 scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	testlock.Hold(t, "clickhouse-cluster", false) // server/store/clickhouse stops its nodes
	scaleMode(t)
	t.Setenv("PARLEY_CLICKHOUSE_URL", freshClickHouseCluster(t, url, cluster))
	t.Setenv("PARLEY_CLICKHOUSE_CLUSTER", cluster)
	gw := startServer(t, fastAuth...)
	startServer(t, fastAuth...) // a second gateway: both make or find the tables, both relay
	usageSummarySuite(t, gw)
}

// freshClickHouseCluster creates an empty database on every node of the
// cluster, dropped when the test ends, and returns its URL.
func freshClickHouseCluster(t *testing.T, serverURL, cluster string) string {
	t.Helper()
	opts, err := ch.ParseDSN(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	name := "e2e_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if err := admin.Exec(ctxTimeout(t, 60*time.Second), "CREATE DATABASE "+name+" ON CLUSTER "+cluster); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" ON CLUSTER "+cluster)
		admin.Close()
	})
	return serverURL[:strings.LastIndex(serverURL, "/")+1] + name
}
