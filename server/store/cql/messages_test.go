package cql_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

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

// TestUpgradeChain opens a keyspace whose messages table predates the
// message tree: Open adds the columns, and the old rows read as the chain
// they were (each one's parent is the message before it), across pages.
func TestUpgradeChain(t *testing.T) {
	t.Parallel()
	hosts := os.Getenv(EnvHosts)
	if hosts == "" {
		t.Skipf("%s not set (PARLEY_SERVICES_CQL=1 scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvHosts)
	}
	cfg := cql.Config{Hosts: cql.HostsFlag(hosts), Keyspace: "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]}
	t.Cleanup(func() { _ = cql.DropKeyspace(context.Background(), cfg) })
	c := gocql.NewCluster(cql.HostsFlag(hosts)...)
	c.Timeout, c.ConnectTimeout = 10*time.Second, 10*time.Second
	old, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer old.Close()
	for _, q := range []string{
		`CREATE KEYSPACE ` + cfg.Keyspace + ` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE ` + cfg.Keyspace + `.messages (conv_id text, created_at bigint, id text, role text, parts text, model text,
			tokens bigint, finish_reason text, PRIMARY KEY ((conv_id), created_at, id)) WITH CLUSTERING ORDER BY (created_at ASC, id ASC)`,
	} {
		if err := old.Query(q).WithContext(t.Context()).Exec(); err != nil {
			t.Fatalf("old schema: %v", err)
		}
	}
	conv := uuid.NewString()
	var ids []string
	for i := range 5 {
		id := uuid.Must(uuid.NewV7()).String()
		ids = append(ids, id)
		if err := old.Query(`INSERT INTO `+cfg.Keyspace+`.messages (conv_id, created_at, id, role, parts, model, tokens, finish_reason)
			VALUES (?, ?, ?, 'user', '[]', '', 0, '')`, conv, int64(1000+i), id).WithContext(t.Context()).Exec(); err != nil {
			t.Fatalf("old insert: %v", err)
		}
	}
	db, err := cql.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open on the old schema: %v", err)
	}
	defer db.Close()
	// A new root after the upgrade keeps its empty parent.
	root := store.Message{ID: uuid.Must(uuid.NewV7()).String(), ConversationID: conv, Role: "user", CreatedAt: time.Unix(0, 2000)}
	if err := db.Append(t.Context(), root); err != nil {
		t.Fatalf("Append: %v", err)
	}
	var got []store.Message
	cursor := ""
	for range 10 {
		page, next, err := db.List(t.Context(), conv, store.PageRequest{Size: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		got = append(got, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	if len(got) != 6 {
		t.Fatalf("listed %d messages, want 6", len(got))
	}
	storetest.WantChain(t, got[:5], ids)
	if got[5].ID != root.ID || got[5].ParentID != "" {
		t.Fatalf("new root = %+v", got[5])
	}
	// Opening again (the columns there now) is fine.
	db2, err := cql.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	db2.Close()
}

// Five stores opened at the same instant on a keyspace that does not exist
// all make or find the keyspace and table, and can write (gateways of one
// deployment start together); five more on a table of an older schema all
// find it brought up to date.
func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	hosts := os.Getenv(EnvHosts)
	if hosts == "" {
		t.Skipf("%s not set (PARLEY_SERVICES_CQL=1 scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvHosts)
	}
	for _, old := range []bool{false, true} {
		cfg := cql.Config{Hosts: cql.HostsFlag(hosts), Keyspace: "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]}
		t.Cleanup(func() { _ = cql.DropKeyspace(context.Background(), cfg) })
		if old {
			c := gocql.NewCluster(cfg.Hosts...)
			c.Timeout, c.ConnectTimeout = 10*time.Second, 10*time.Second
			s, err := c.CreateSession()
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			for _, q := range []string{
				`CREATE KEYSPACE ` + cfg.Keyspace + ` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
				`CREATE TABLE ` + cfg.Keyspace + `.messages (conv_id text, created_at bigint, id text, role text, parts text, model text,
					tokens bigint, finish_reason text, PRIMARY KEY ((conv_id), created_at, id)) WITH CLUSTERING ORDER BY (created_at ASC, id ASC)`,
			} {
				if err := s.Query(q).WithContext(t.Context()).Exec(); err != nil {
					t.Fatalf("old schema: %v", err)
				}
			}
			s.Close()
		}
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			errs  = make([]error, 5)
		)
		for i := range errs {
			wg.Go(func() {
				<-start
				db, err := cql.Open(t.Context(), cfg)
				if err == nil {
					err = db.Append(t.Context(), store.Message{ID: uuid.Must(uuid.NewV7()).String(), ConversationID: "c", ParentID: "p", Role: "user", CreatedAt: time.Unix(0, int64(i+1))})
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

// The vector index on Cassandra's SAI: unfiltered searches are the
// index's approximate nearest neighbours (recall at least 0.9 of the exact
// top 10 in the suite's small stores), filtered ones exact.
func TestVectorIndex(t *testing.T) {
	t.Parallel()
	storetest.TestVectorIndexRecall(t, newVectorIndex, 0.9)
}

func newVectorIndex(t *testing.T) store.VectorIndex {
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
	return db.Vectors()
}
