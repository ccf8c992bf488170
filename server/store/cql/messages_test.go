package cql_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/cql"
	"github.com/parleyhq/parley/server/store/storetest"
)

// EnvHosts names the test cluster's contact points (host:port,…); the suite
// skips when it is unset (scripts/services.sh with PARLEY_SERVICES_CQL=1
// starts Apache Cassandra and sets it).
const EnvHosts = "PARLEY_TEST_CASSANDRA_HOSTS"

func newStore(t *testing.T) store.Store {
	t.Helper()
	hosts := os.Getenv(EnvHosts)
	if hosts == "" {
		t.Skipf("%s not set (PARLEY_SERVICES_CQL=1 scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvHosts)
	}
	cfg := cql.Config{Hosts: cql.HostsFlag(hosts), Keyspace: "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]}
	db, err := cql.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		db.Close()
		_ = cql.DropKeyspace(context.Background(), cfg)
	})
	if err := db.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	return store.Store{Messages: db}
}

func TestMessages(t *testing.T) { t.Parallel(); storetest.TestMessages(t, newStore) }
