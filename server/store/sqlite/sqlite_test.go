package sqlite_test

import (
	"path/filepath"
	"testing"

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
func TestUsageOutbox(t *testing.T)   { t.Parallel(); storetest.TestUsageOutbox(t, newOutboxStore) }
func TestAttachments(t *testing.T)   { t.Parallel(); storetest.TestAttachments(t, newStore) }
func TestAudit(t *testing.T)         { t.Parallel(); storetest.TestAudit(t, newStore) }
func TestVectorStores(t *testing.T)  { t.Parallel(); storetest.TestVectorStores(t, newStore) }

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
