package postgres_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/postgres"
)

// openGateways returns n stores over one fresh, migrated schema: n
// gateways sharing a database, each with its own vector cache.
func openGateways(t *testing.T, n int) []*postgres.DB {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		t.Skipf("%s not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvURL)
	}
	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	var out []*postgres.DB
	for range n {
		db, err := postgres.Open(t.Context(), url, postgres.Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		out = append(out, db)
	}
	t.Cleanup(func() { _ = out[0].DropSchema(t.Context(), schema) })
	if err := out[0].Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return out
}

// Two gateways over one database: each caches the vectors of the store it
// searches, and neither ever answers from vectors the other's write
// (put, replace, attribute change, file delete, store delete) replaced.
func TestVectorIndexAcrossGateways(t *testing.T) {
	t.Parallel()
	dbs := openGateways(t, 2)
	a, b := dbs[0].Vectors(), dbs[1].Vectors()
	ctx := t.Context()
	chunk := func(file string, i int, v []float32, attrs map[string]any) store.Chunk {
		return store.Chunk{ID: fmt.Sprintf("c_%s_%d", file, i), StoreID: "vs", FileID: file, Ordinal: i,
			Text: fmt.Sprintf("passage %d of %s", i, file), Vector: v, Attributes: attrs}
	}
	x, y, z := []float32{1, 0, 0}, []float32{0, 1, 0}, []float32{0, 0, 1}
	ids := func(ix store.VectorIndex, q []float32, f *store.AttributeFilter) string {
		t.Helper()
		ms, err := ix.SearchChunks(ctx, store.VectorQuery{StoreIDs: []string{"vs"}, Vector: q, Limit: 10, MinScore: 0.5, Filter: f})
		if err != nil {
			t.Fatalf("SearchChunks: %v", err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.ID+"@"+m.Text)
		}
		return strings.Join(out, ",")
	}
	both := func(what string, q []float32, f *store.AttributeFilter, want string) {
		t.Helper()
		for name, ix := range map[string]store.VectorIndex{"a": a, "b": b} {
			if got := ids(ix, q, f); got != want {
				t.Fatalf("%s: gateway %s found %q, want %q", what, name, got, want)
			}
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	both("an empty store", x, nil, "")
	must(a.PutChunks(ctx, []store.Chunk{chunk("f", 0, x, map[string]any{"v": 1.0})}))
	both("after a's first put", x, nil, "c_f_0@passage 0 of f") // both cache it now

	// b puts a second chunk: a's cached copy is stale.
	must(b.PutChunks(ctx, []store.Chunk{chunk("g", 0, x, map[string]any{"v": 1.0})}))
	both("after b's put", x, nil, "c_f_0@passage 0 of f,c_g_0@passage 0 of g")

	// b replaces a's chunk with another vector and text.
	c := chunk("f", 0, y, map[string]any{"v": 1.0})
	c.Text = "replaced"
	must(b.PutChunks(ctx, []store.Chunk{c}))
	both("after b's replace, near x", x, nil, "c_g_0@passage 0 of g")
	both("after b's replace, near y", y, nil, "c_f_0@replaced")

	// a changes g's attributes: b's filtered search sees them.
	two := &store.AttributeFilter{Op: "eq", Key: "v", Value: 2.0}
	both("before the attribute change", x, two, "")
	if n, err := a.SetFileAttributes(ctx, "vs", "g", map[string]any{"v": 2.0}); err != nil || n != 1 {
		t.Fatalf("SetFileAttributes: %d, %v", n, err)
	}
	both("after a's attribute change", x, two, "c_g_0@passage 0 of g")

	// a deletes g; b deletes the store; a puts into it again.
	if n, err := a.DeleteFileChunks(ctx, "vs", "g"); err != nil || n != 1 {
		t.Fatalf("DeleteFileChunks: %d, %v", n, err)
	}
	both("after a's file delete", x, nil, "")
	both("after a's file delete, near y", y, nil, "c_f_0@replaced")
	if n, err := b.DeleteStoreChunks(ctx, "vs"); err != nil || n != 1 {
		t.Fatalf("DeleteStoreChunks: %d, %v", n, err)
	}
	both("after b's store delete", y, nil, "")
	must(a.PutChunks(ctx, []store.Chunk{chunk("h", 0, z, nil)}))
	both("after a's put to the deleted store", z, nil, "c_h_0@passage 0 of h")
	both("after a's put to the deleted store, near y", y, nil, "")

	// Lexical search reads the database: it is current on both at once.
	for name, ix := range map[string]store.VectorIndex{"a": a, "b": b} {
		ms, err := ix.SearchChunksText(ctx, store.TextQuery{StoreIDs: []string{"vs"}, Text: "passage replaced", Limit: 10})
		if err != nil || len(ms) != 1 || ms[0].ID != "c_h_0" {
			t.Fatalf("gateway %s text search: %+v, %v", name, ms, err)
		}
	}
}
