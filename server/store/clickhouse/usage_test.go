package clickhouse_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/clickhouse"
	"github.com/parleyhq/parley/server/store/storetest"
)

// EnvURL names the test server (clickhouse://127.0.0.1:PORT/default); the
// suite skips when it is unset (scripts/services.sh env sets it, and CI runs
// it).
const EnvURL = "PARLEY_TEST_CLICKHOUSE_URL"

// open returns a usage store in a fresh database of its own.
func open(t testing.TB) *clickhouse.DB {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvURL)
	}
	admin, err := clickhouse.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	name := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if err := admin.Exec(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		_ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name)
		admin.Close()
	})
	i := strings.LastIndex(url, "/")
	rest := ""
	if q := strings.IndexByte(url[i:], '?'); q >= 0 {
		rest = url[i+q:]
	}
	db, err := clickhouse.Open(t.Context(), url[:i+1]+name+rest)
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newStore(t *testing.T) store.Store { return store.Store{Usage: open(t)} }

func TestUsage(t *testing.T) { t.Parallel(); storetest.TestUsage(t, newStore) }
