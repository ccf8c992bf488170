package postgres_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/storetest"
)

// TestMigrationChainsOldMessages takes a schema back to before the message
// tree (0005), stores messages as they were then, and migrates again: each
// conversation's old messages become the chain they were.
func TestMigrationChainsOldMessages(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := t.Context()
	for _, q := range []string{
		`ALTER TABLE messages DROP COLUMN parent_id`, `ALTER TABLE messages DROP COLUMN status`,
		`ALTER TABLE conversations DROP COLUMN system_prompt`, `ALTER TABLE conversations DROP COLUMN leaf_id`,
		`DROP TABLE chat_settings`, `DELETE FROM schema_migrations WHERE version = 5`,
	} {
		if err := db.ExecRaw(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	convs := []string{uuid.NewString(), uuid.NewString()}
	ids := map[string][]string{}
	for i := range 6 {
		conv := convs[i%2]
		id := uuid.Must(uuid.NewV7()).String()
		ids[conv] = append(ids[conv], id)
		if err := db.ExecRaw(ctx, `INSERT INTO messages (id, conversation_id, role, parts, model, tokens, finish_reason, created_at)
			VALUES ($1, $2, 'user', '[]', '', 0, '', $3)`, id, conv, int64(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for _, conv := range convs {
		msgs, _, err := db.Store().Messages.List(ctx, conv, store.PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		storetest.WantChain(t, msgs, ids[conv])
	}
}
