package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
	"github.com/parleyhq/parley/server/store/storetest"
)

// TestMigrationChainsOldMessages takes a database back to before the
// message tree (0004), stores messages as they were then, and migrates:
// each conversation's old messages become the chain they were.
func TestMigrationChainsOldMessages(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	db.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE messages DROP COLUMN parent_id`, `ALTER TABLE messages DROP COLUMN status`,
		`ALTER TABLE conversations DROP COLUMN system_prompt`, `ALTER TABLE conversations DROP COLUMN leaf_id`,
		`DROP TABLE chat_settings`, `DELETE FROM schema_migrations WHERE version = 4`,
	} {
		if _, err := raw.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	convs := []string{uuid.NewString(), uuid.NewString()}
	ids := map[string][]string{}
	for i := range 6 {
		conv := convs[i%2]
		id := uuid.Must(uuid.NewV7()).String()
		ids[conv] = append(ids[conv], id)
		if _, err := raw.ExecContext(t.Context(), `INSERT INTO messages (id, conversation_id, role, parts, model, tokens, finish_reason, created_at)
			VALUES (?, ?, 'user', '[]', '', 0, '', ?)`, id, conv, 1000+i); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()

	db, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open migrating: %v", err)
	}
	defer db.Close()
	for _, conv := range convs {
		msgs, _, err := db.Store().Messages.List(t.Context(), conv, store.PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		storetest.WantChain(t, msgs, ids[conv])
	}
}
