package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
	"github.com/parleyhq/parley/server/store/storetest"
)

func newStore(t *testing.T) store.Store {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db.Store()
}

// newOutboxStore is newStore for a deployment whose Usage store is
// elsewhere: the ledger records into the outbox.
func newOutboxStore(t *testing.T) store.Store {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db.StoreWithOutbox()
}

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
func TestUsageOutbox(t *testing.T)  { t.Parallel(); storetest.TestUsageOutbox(t, newOutboxStore) }
func TestAttachments(t *testing.T)  { t.Parallel(); storetest.TestAttachments(t, newStore) }
func TestAudit(t *testing.T)        { t.Parallel(); storetest.TestAudit(t, newStore) }
func TestVectorStores(t *testing.T) { t.Parallel(); storetest.TestVectorStores(t, newStore) }
func TestProjects(t *testing.T)     { t.Parallel(); storetest.TestProjects(t, newStore) }
func TestMemories(t *testing.T)     { t.Parallel(); storetest.TestMemories(t, newStore) }
func TestFeedback(t *testing.T)     { t.Parallel(); storetest.TestFeedback(t, newStore) }
func TestPrompts(t *testing.T)      { t.Parallel(); storetest.TestPrompts(t, newStore) }
func TestBatches(t *testing.T)      { t.Parallel(); storetest.TestBatches(t, newStore) }
func TestWebhooks(t *testing.T)     { t.Parallel(); storetest.TestWebhooks(t, newStore) }

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if err := db.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Reopening an existing database applies nothing twice.
	db, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if _, err := db.Store().Ledger.Account(t.Context(), "nobody"); err != nil {
		t.Fatalf("Account after reopen: %v", err)
	}
}

// TestMigrationAddsProjects takes a database back to before projects
// (0017), with a conversation stored then, and migrates: the conversation
// belongs to no project, and projects can be made.
func TestMigrationAddsProjects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s := db.Store()
	u := store.User{ID: uuid.Must(uuid.NewV7()).String(), Email: "old@example.com", PasswordHash: "x", Tier: store.TierFree, CreatedAt: time.Now()}
	c := store.Conversation{ID: uuid.Must(uuid.NewV7()).String(), UserID: u.ID, Title: "old", Model: "sim-small", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.Accounts.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.Conversations.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP INDEX conversations_project`, `ALTER TABLE conversations DROP COLUMN project_id`,
		`DROP TABLE projects`, `DELETE FROM schema_migrations WHERE version = 17`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()

	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open migrating: %v", err)
	}
	defer db.Close()
	s = db.Store()
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

func TestOpenRejectsBadPath(t *testing.T) {
	t.Parallel()
	if _, err := sqlite.Open(t.Context(), "a?b"); err == nil {
		t.Fatal("Open accepted a path with '?'")
	}
}

func TestVectorIndex(t *testing.T) {
	t.Parallel()
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex {
		t.Helper()
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "parley.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.Vectors()
	})
}
