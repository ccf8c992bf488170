package clickhouse_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

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
	url, _ := freshDB(t, nil)
	db, err := clickhouse.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// freshDB makes an empty database, dropped with t, runs setup on it through
// a connection to the server's default database (statements name the
// database: setup gets its name), and returns its URL.
func freshDB(t testing.TB, setup func(admin *clickhouse.DB, name string)) (string, string) {
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
	if setup != nil {
		setup(admin, name)
	}
	i := strings.LastIndex(url, "/")
	rest := ""
	if q := strings.IndexByte(url[i:], '?'); q >= 0 {
		rest = url[i+q:]
	}
	return url[:i+1] + name + rest, name
}

func newStore(t *testing.T) store.Store { return store.Store{Usage: open(t)} }

func TestUsage(t *testing.T) { t.Parallel(); storetest.TestUsage(t, newStore) }

// A table made before usage_records had end_user gets the column at Open;
// its rows read with an empty end user, and new rows keep theirs.
func TestMigrateAddsEndUser(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, _ := freshDB(t, func(admin *clickhouse.DB, name string) {
		for _, q := range []string{
			`CREATE TABLE ` + name + `.usage_records (
				user_id String, created_at Int64, request_id String, api_key_id String, channel String, model String,
				prompt_tokens Int64, completion_tokens Int64, cached_tokens Int64, estimated UInt8, cost_nanos Int64,
				finish_reason String
			) ENGINE = ReplacingMergeTree
			PARTITION BY toYYYYMM(toDateTime(intDiv(created_at, 1000000000)))
			ORDER BY (user_id, created_at, request_id)`,
			// INSERT … SELECT: the driver cannot send INSERT … VALUES through Exec to 18.16.
			`INSERT INTO ` + name + `.usage_records SELECT 'u1', toInt64(1000000000), 'old', '', 'api', 'm',
				toInt64(1), toInt64(2), toInt64(0), toUInt8(0), toInt64(3), 'stop'`,
		} {
			if err := admin.Exec(ctx, q); err != nil {
				t.Fatalf("old schema: %v", err)
			}
		}
	})
	for range 2 { // Open twice: the second finds the column there.
		db, err := clickhouse.Open(ctx, url)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		db.Close()
	}
	db, err := clickhouse.Open(ctx, url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	if err := db.Record(ctx, []store.UsageRecord{{RequestID: "new", UserID: "u1", Channel: "api", Model: "m",
		CreatedAt: time.Unix(2, 0), EndUser: "alice"}}); err != nil {
		t.Fatalf("Record: %v", err)
	}
	all, _, err := db.List(ctx, "u1", store.UsageFilter{}, store.PageRequest{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(all) != 2 || all[0].RequestID != "new" || all[0].EndUser != "alice" || all[1].RequestID != "old" || all[1].EndUser != "" {
		t.Fatalf("records = %+v", all)
	}
	alice, _, err := db.List(ctx, "u1", store.UsageFilter{EndUser: "alice"}, store.PageRequest{})
	if err != nil || len(alice) != 1 || alice[0].RequestID != "new" {
		t.Fatalf("alice's records = %+v, %v", alice, err)
	}
}

// Five stores opened on one empty database at the same instant all make or
// find the table; five more on a table of an older schema all find it
// brought up to date (gateways of one deployment start together).
func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	for _, old := range []bool{false, true} {
		url, _ := freshDB(t, func(admin *clickhouse.DB, name string) {
			if old {
				if err := admin.Exec(t.Context(), `CREATE TABLE `+name+`.usage_records (
					user_id String, created_at Int64, request_id String, api_key_id String, channel String, model String,
					prompt_tokens Int64, completion_tokens Int64, cached_tokens Int64, estimated UInt8, cost_nanos Int64,
					finish_reason String
				) ENGINE = ReplacingMergeTree ORDER BY (user_id, created_at, request_id)`); err != nil {
					t.Fatalf("old schema: %v", err)
				}
			}
		})
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			errs  = make([]error, 5)
		)
		for i := range errs {
			wg.Go(func() {
				<-start
				db, err := clickhouse.Open(t.Context(), url)
				if err == nil {
					err = db.Record(t.Context(), []store.UsageRecord{{RequestID: fmt.Sprint("r", i), UserID: "u1", Channel: "api", Model: "m", CreatedAt: time.Unix(int64(i+1), 0)}})
					db.Close()
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("old schema %v, store %d: %v", old, i, err)
			}
		}
	}
}
