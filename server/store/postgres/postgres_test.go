package postgres_test

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
	"github.com/parleyhq/parley/server/store/postgres"
	"github.com/parleyhq/parley/server/store/storetest"
)

// EnvURL names the test database; the suites skip when it is unset
// (scripts/services.sh env sets it, and CI runs them).
const EnvURL = "PARLEY_TEST_POSTGRES_URL"

// open returns a migrated store in a fresh schema of its own, dropped when
// the test ends.
func open(t testing.TB) *postgres.DB {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvURL)
	}
	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	db, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema, MaxConns: 8})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		_ = db.DropSchema(t.Context(), schema)
		db.Close()
	})
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

func newStore(t *testing.T) store.Store { return open(t).Store() }

// newOutboxStore is newStore for a deployment whose Usage store is
// ClickHouse: the ledger records into the outbox.
func newOutboxStore(t *testing.T) store.Store { return open(t).StoreWithOutbox() }

func TestAccounts(t *testing.T)      { t.Parallel(); storetest.TestAccounts(t, newStore) }
func TestConversations(t *testing.T) { t.Parallel(); storetest.TestConversations(t, newStore) }
func TestMessages(t *testing.T)      { t.Parallel(); storetest.TestMessages(t, newStore) }
func TestLedger(t *testing.T)        { t.Parallel(); storetest.TestLedger(t, newStore) }
func TestUsage(t *testing.T)         { t.Parallel(); storetest.TestUsage(t, newStore) }
func TestLedgerOutbox(t *testing.T)  { t.Parallel(); storetest.TestLedger(t, newOutboxStore) }
func TestOrganizations(t *testing.T) { t.Parallel(); storetest.TestOrganizations(t, newStore) }
func TestOrganizationsOutbox(t *testing.T) {
	t.Parallel()
	storetest.TestOrganizations(t, newOutboxStore)
}
func TestUsageOutbox(t *testing.T) { t.Parallel(); storetest.TestUsageOutbox(t, newOutboxStore) }
func TestAttachments(t *testing.T) { t.Parallel(); storetest.TestAttachments(t, newStore) }
func TestAudit(t *testing.T)       { t.Parallel(); storetest.TestAudit(t, newStore) }
func TestProjects(t *testing.T)    { t.Parallel(); storetest.TestProjects(t, newStore) }
func TestMemories(t *testing.T)    { t.Parallel(); storetest.TestMemories(t, newStore) }
func TestFeedback(t *testing.T)    { t.Parallel(); storetest.TestFeedback(t, newStore) }
func TestPrompts(t *testing.T)     { t.Parallel(); storetest.TestPrompts(t, newStore) }
func TestBatches(t *testing.T)     { t.Parallel(); storetest.TestBatches(t, newStore) }
func TestWebhooks(t *testing.T)    { t.Parallel(); storetest.TestWebhooks(t, newStore) }
func TestVectorIndex(t *testing.T) {
	t.Parallel()
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex { return open(t).Vectors() })
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	db := open(t)
	for i := range 2 {
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate again (%d): %v", i, err)
		}
	}
	if err := db.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// Five processes' worth of stores migrating one empty schema at the same
// instant all succeed (the migrations and the audit partitions are made
// under one advisory lock), and so do five more on the migrated schema.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := os.Getenv(EnvURL)
	if url == "" {
		t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvURL)
	}
	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	t.Cleanup(func() {
		if db, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema}); err == nil {
			_ = db.DropSchema(context.Background(), schema)
			db.Close()
		}
	})
	for round := range 2 {
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			errs  = make([]error, 5)
		)
		for i := range errs {
			wg.Go(func() {
				<-start
				db, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema, MaxConns: 2})
				if err != nil {
					errs[i] = err
					return
				}
				defer db.Close()
				errs[i] = db.Migrate(t.Context())
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, store %d: %v", round, i, err)
			}
		}
	}
}

// The audit log is partitioned by month: this month's event lands in this
// month's partition, an old one in the default partition, and both list.
func TestAuditPartitionedByMonth(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := t.Context()
	s := db.Store()
	now := time.Now().UTC()
	old := time.Date(2020, 3, 4, 5, 6, 7, 8, time.UTC)
	for _, e := range []store.AuditEvent{
		{ID: "e-now", UserID: "u", Kind: store.AuditLogout, At: now},
		{ID: "e-old", UserID: "u", Kind: store.AuditLogout, At: old},
	} {
		if err := s.Audit.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := s.Audit.Append(ctx, e); err != nil {
			t.Fatalf("append again: %v", err)
		}
	}
	if p, err := db.AuditPartitionOf(ctx, "e-now"); err != nil || p != "audit_log_"+now.Format("200601") {
		t.Fatalf("this month's event in %q (%v)", p, err)
	}
	if p, err := db.AuditPartitionOf(ctx, "e-old"); err != nil || p != "audit_log_default" {
		t.Fatalf("old event in %q (%v)", p, err)
	}
	evs, _, err := s.Audit.List(ctx, "u", store.PageRequest{})
	if err != nil || len(evs) != 2 || evs[0].ID != "e-now" {
		t.Fatalf("List: %v %+v", err, evs)
	}
}

// TestMigrationAddsProjects takes a schema back to before projects (0015),
// with a conversation stored then, and migrates again: the conversation
// belongs to no project, and projects can be made.
func TestMigrationAddsProjects(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := t.Context()
	s := db.Store()
	u := store.User{ID: uuid.Must(uuid.NewV7()).String(), Email: "old@example.com", PasswordHash: "x", Tier: store.TierFree, CreatedAt: time.Now()}
	c := store.Conversation{ID: uuid.Must(uuid.NewV7()).String(), UserID: u.ID, Title: "old", Model: "sim-small", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.Accounts.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.Conversations.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE conversations DROP COLUMN project_id`, `DROP TABLE projects`,
		`DELETE FROM schema_migrations WHERE version = 15`,
	} {
		if err := db.ExecRaw(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	got, err := s.Conversations.Get(ctx, u.ID, c.ID)
	if err != nil || got.ProjectID != "" || got.Title != "old" {
		t.Fatalf("the old conversation after migrating: %+v, %v", got, err)
	}
	p := store.Project{ID: uuid.Must(uuid.NewV7()).String(), UserID: u.ID, Name: "new", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.Projects.Create(ctx, p, 1); err != nil {
		t.Fatalf("Create project after migrating: %v", err)
	}
	if l, _, err := s.Conversations.List(ctx, u.ID, store.ConversationFilter{ProjectID: p.ID}, store.PageRequest{}); err != nil || len(l) != 0 {
		t.Fatalf("the new project's conversations: %+v, %v", l, err)
	}
	if l, _, err := s.Conversations.List(ctx, u.ID, store.ConversationFilter{}, store.PageRequest{}); err != nil || len(l) != 1 || l[0].ID != c.ID {
		t.Fatalf("every conversation: %+v, %v", l, err)
	}
}

func TestOpenRejectsBadSchema(t *testing.T) {
	t.Parallel()
	if _, err := postgres.Open(t.Context(), "postgres://127.0.0.1:1/x", postgres.Options{Schema: "a; DROP"}); err == nil {
		t.Fatal(fmt.Sprint("Open accepted a bad schema name"))
	}
}
