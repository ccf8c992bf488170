package e2e

import (
	"net/http"
	"os"
	"slices"
	"testing"
	"time"
)

// PostgreSQL alone (no Cassandra, no Redis) keeps vector stores: a file is
// ingested into PostgreSQL's vector index and found by search, on its
// gateway and on a second one over the same database; a file removed
// through the second is gone from the first's next search (its cached
// vectors are checked against the store's generation in PostgreSQL).
func TestVectorStoresOnPostgresOnly(t *testing.T) {
	pgURL := os.Getenv("PARLEY_TEST_POSTGRES_URL")
	if pgURL == "" {
		t.Skip("PARLEY_TEST_POSTGRES_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	url := inDatabase(t, pgURL, freshDatabase(t, pgURL))
	setSecret(t)
	for _, k := range []string{"PARLEY_REDIS_URL", "PARLEY_CASSANDRA_HOSTS", "PARLEY_CLICKHOUSE_URL", "PARLEY_S3_ENDPOINT"} {
		t.Setenv(k, "")
	}
	t.Setenv("PARLEY_POSTGRES_URL", url) // for `parley admin` too
	a := startServer(t, append(fastAuth, "--postgres-url", url)...)
	acct := a.newAccount(t, "vs-pg@example.com")
	a.topup(t, acct, "1")

	// Without S3 each gateway keeps its own blobs: both files are ingested
	// by a before b starts.
	lisbon := uploadFile(t, a, acct.Key, map[string]string{"purpose": "assistants"}, "lisbon.md",
		[]byte("# Launch\nThe launch of the lighthouse project is on Tuesday in Lisbon.\n"))
	oslo := uploadFile(t, a, acct.Key, map[string]string{"purpose": "assistants"}, "oslo.md",
		[]byte("# Harbour\nThe harbour survey of the lighthouse project ends on Friday in Oslo.\n"))
	var vs vectorStoreJSON
	vectorCall(t, a, acct.Key, "POST", "/v1/vector_stores", map[string]any{"name": "pg", "file_ids": []string{lisbon.ID, oslo.ID}}, &vs)
	for _, f := range []string{lisbon.ID, oslo.ID} {
		if got := waitIngested(t, a, acct.Key, vs.ID, f, 30*time.Second); got.Status != "completed" {
			t.Fatalf("ingestion of %s: %+v", f, got)
		}
	}
	b := startServer(t, append(fastAuth, "--postgres-url", url)...)

	files := func(s *server, query string) []string {
		t.Helper()
		var page searchPageJSON
		vectorCall(t, s, acct.Key, "POST", "/v1/vector_stores/"+vs.ID+"/search", map[string]any{"query": query, "max_num_results": 10}, &page)
		var out []string
		for _, d := range page.Data {
			out = append(out, d.FileID)
		}
		return out
	}
	for name, s := range map[string]*server{"a": a, "b": b} {
		got := files(s, "lighthouse project Lisbon")
		if len(got) != 2 || got[0] != lisbon.ID || !slices.Contains(got, oslo.ID) {
			t.Fatalf("gateway %s: search found %v, want %s first then %s", name, got, lisbon.ID, oslo.ID)
		}
	}

	// b removes the Lisbon file; a, whose cache holds it, no longer finds it.
	if status, body := respCall(t, b, acct.Key, "DELETE", "/v1/vector_stores/"+vs.ID+"/files/"+lisbon.ID, nil); status != http.StatusOK {
		t.Fatalf("remove through b: %d %s", status, body)
	}
	for name, s := range map[string]*server{"a": a, "b": b} {
		if got := files(s, "lighthouse project Lisbon"); !slices.Equal(got, []string{oslo.ID}) {
			t.Fatalf("gateway %s after b's remove: search found %v, want only %s", name, got, oslo.ID)
		}
	}
}
