package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/tokenize"
)

// The vector store objects of /v1/vector_stores, as these tests read them.
type (
	fileCountsJSON struct {
		InProgress int64 `json:"in_progress"`
		Completed  int64 `json:"completed"`
		Failed     int64 `json:"failed"`
		Cancelled  int64 `json:"cancelled"`
		Total      int64 `json:"total"`
	}
	vectorStoreJSON struct {
		ID         string            `json:"id"`
		Object     string            `json:"object"`
		Name       string            `json:"name"`
		UsageBytes int64             `json:"usage_bytes"`
		FileCounts fileCountsJSON    `json:"file_counts"`
		Status     string            `json:"status"`
		Metadata   map[string]string `json:"metadata"`
	}
	vectorStoreFileJSON struct {
		ID            string `json:"id"`
		Object        string `json:"object"`
		UsageBytes    int64  `json:"usage_bytes"`
		VectorStoreID string `json:"vector_store_id"`
		Status        string `json:"status"`
		LastError     *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"last_error"`
		Attributes map[string]any `json:"attributes"`
	}
	fileBatchJSON struct {
		ID            string         `json:"id"`
		Object        string         `json:"object"`
		VectorStoreID string         `json:"vector_store_id"`
		Status        string         `json:"status"`
		FileCounts    fileCountsJSON `json:"file_counts"`
	}
	searchPageJSON struct {
		Object string `json:"object"`
		Data   []struct {
			FileID   string  `json:"file_id"`
			Filename string  `json:"filename"`
			Score    float64 `json:"score"`
			Content  []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"data"`
	}
)

// vectorCall sends one JSON request with key, fails the test unless it is
// 200, and reads the answer into out.
func vectorCall(t *testing.T, s *server, key, method, path string, body, out any) {
	t.Helper()
	status, data := respCall(t, s, key, method, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, status, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, data)
	}
}

// waitIngested polls a file of a store until it is no longer in_progress
// (for limit at most) and returns it.
func waitIngested(t *testing.T, s *server, key, storeID, fileID string, limit time.Duration) vectorStoreFileJSON {
	t.Helper()
	var f vectorStoreFileJSON
	waitFor(t, limit, "the ingestion of file "+fileID+" to end", func() bool {
		vectorCall(t, s, key, "GET", "/v1/vector_stores/"+storeID+"/files/"+fileID, nil, &f)
		return f.Status != "in_progress"
	})
	return f
}

// sentences is n distinct lines about topic: text for files to be cut into
// many chunks.
func sentences(topic string, n int) string {
	adjs := []string{"amber", "brisk", "candid", "dusky", "eager", "frosty", "gentle", "hollow", "ivory", "jolly", "keen", "lucid", "mellow"}
	nouns := []string{"harbour", "orchard", "ledger", "lantern", "meadow", "quarry", "violin", "glacier", "pantry", "compass", "falcon"}
	verbs := []string{"counted", "painted", "carried", "measured", "guarded", "repaired", "sorted", "weighed", "watched"}
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s note %d: the %s %s %s %d %s crates near the %s %s.\n", topic, i,
			adjs[i%len(adjs)], nouns[(i/len(adjs))%len(nouns)], verbs[i%len(verbs)], i*7+3, adjs[(i/3)%len(adjs)], nouns[i%len(nouns)], topic)
	}
	return b.String()
}

// chunksOf is what the gateway's chunker makes of text with the chunking
// a store file was added with (the gateway's tokenizer is the default).
func chunksOf(text string, chunkTokens, overlapTokens int) []string {
	var out []string
	for _, sp := range tokenize.Default().Split(text, chunkTokens, overlapTokens) {
		out = append(out, text[sp.Start:sp.End])
	}
	return out
}

// Another user, with a key of their own, reaches none of a user's vector
// stores, files in them or file batches: every route answers 404 with the
// body it gives for ids that do not exist (so nothing says A's exist), none
// of the attempts changes A's store, and none costs B anything.
func TestVectorStoreIDOR(t *testing.T) {
	// Real-time embedding keeps A's batch in progress while B tries to
	// cancel it.
	s := startServer(t, append(fastAuth, "--sim-time-scale", "1")...)
	a := s.newAccount(t, "vs-a@example.com")
	s.topup(t, a, "1")
	b := s.newAccount(t, "vs-b@example.com")
	s.topup(t, b, "1")

	// A: a store with a file (with attributes) ingested, and a batch with
	// a bigger file still being ingested.
	notes := uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "notes.md",
		[]byte("# Launch\nThe launch of the lighthouse project is on Tuesday in Lisbon.\n"))
	var vs vectorStoreJSON
	vectorCall(t, s, a.Key, "POST", "/v1/vector_stores", map[string]any{"name": "A's store", "metadata": map[string]string{"team": "a"}}, &vs)
	var added vectorStoreFileJSON
	vectorCall(t, s, a.Key, "POST", "/v1/vector_stores/"+vs.ID+"/files", map[string]any{"file_id": notes.ID, "attributes": map[string]any{"owner": "a"}}, &added)
	if f := waitIngested(t, s, a.Key, vs.ID, notes.ID, 20*time.Second); f.Status != "completed" {
		t.Fatalf("A's notes: %+v", f)
	}
	// ~9,000 tokens, embedded twice over (auto chunks overlap by half) at
	// 5,000 tokens/s: more than 3 s in progress.
	big := uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "big.txt", []byte(sentences("lighthouse", 450)))
	var batch fileBatchJSON
	vectorCall(t, s, a.Key, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches", map[string]any{"file_ids": []string{big.ID}}, &batch)
	if batch.Status != "in_progress" || batch.FileCounts.Total != 1 {
		t.Fatalf("A's batch: %+v", batch)
	}

	// B: a file and an empty store of B's own.
	bFile := uploadFile(t, s, b.Key, map[string]string{"purpose": "assistants"}, "b.md", []byte("# B\nB's own notes about the launch.\n"))
	var bStore vectorStoreJSON
	vectorCall(t, s, b.Key, "POST", "/v1/vector_stores", map[string]any{"name": "B's store"}, &bStore)

	type ids struct{ store, file, batch string }
	theirs := ids{vs.ID, notes.ID, batch.ID}
	ghost := ids{uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()}
	for _, c := range []struct {
		name   string
		method string
		path   func(ids) string
		body   func(ids) any
	}{
		{"retrieve the store", "GET", func(x ids) string { return "/v1/vector_stores/" + x.store }, nil},
		{"list the store's files", "GET", func(x ids) string { return "/v1/vector_stores/" + x.store + "/files" }, nil},
		{"retrieve a file of the store", "GET", func(x ids) string { return "/v1/vector_stores/" + x.store + "/files/" + x.file }, nil},
		{"search the store", "POST", func(x ids) string { return "/v1/vector_stores/" + x.store + "/search" },
			func(ids) any { return map[string]any{"query": "launch Lisbon"} }},
		{"file_search the store in a response", "POST", func(ids) string { return "/v1/responses" },
			func(x ids) any {
				return map[string]any{"model": "sim-small", "input": "When is the launch?", "max_output_tokens": 5,
					"tools": []any{map[string]any{"type": "file_search", "vector_store_ids": []string{x.store}}}}
			}},
		{"file_search B's store and A's", "POST", func(ids) string { return "/v1/responses" },
			func(x ids) any {
				return map[string]any{"model": "sim-small", "input": "When is the launch?", "max_output_tokens": 5,
					"tools": []any{map[string]any{"type": "file_search", "vector_store_ids": []string{bStore.ID, x.store}}}}
			}},
		{"retrieve the batch", "GET", func(x ids) string { return "/v1/vector_stores/" + x.store + "/file_batches/" + x.batch }, nil},
		{"list the batch's files", "GET", func(x ids) string { return "/v1/vector_stores/" + x.store + "/file_batches/" + x.batch + "/files" }, nil},
		{"cancel the batch", "POST", func(x ids) string { return "/v1/vector_stores/" + x.store + "/file_batches/" + x.batch + "/cancel" }, nil},
		{"add B's file to the store", "POST", func(x ids) string { return "/v1/vector_stores/" + x.store + "/files" },
			func(ids) any { return map[string]any{"file_id": bFile.ID} }},
		{"add B's file to the store in a batch", "POST", func(x ids) string { return "/v1/vector_stores/" + x.store + "/file_batches" },
			func(ids) any { return map[string]any{"file_ids": []string{bFile.ID}} }},
		{"create B's store with A's file", "POST", func(ids) string { return "/v1/vector_stores" },
			func(x ids) any { return map[string]any{"name": "stolen", "file_ids": []string{x.file}} }},
		{"add A's file to B's store", "POST", func(ids) string { return "/v1/vector_stores/" + bStore.ID + "/files" },
			func(x ids) any { return map[string]any{"file_id": x.file} }},
		{"modify the store", "POST", func(x ids) string { return "/v1/vector_stores/" + x.store },
			func(ids) any { return map[string]any{"name": "pwned", "metadata": map[string]string{"team": "b"}} }},
		{"update a file's attributes", "POST", func(x ids) string { return "/v1/vector_stores/" + x.store + "/files/" + x.file },
			func(ids) any { return map[string]any{"attributes": map[string]any{"owner": "b"}} }},
		{"remove a file from the store", "DELETE", func(x ids) string { return "/v1/vector_stores/" + x.store + "/files/" + x.file }, nil},
		{"delete the store", "DELETE", func(x ids) string { return "/v1/vector_stores/" + x.store }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			call := func(x ids) (int, string) {
				var body any
				if c.body != nil {
					body = c.body(x)
				}
				status, data := respCall(t, s, b.Key, c.method, c.path(x), body)
				return status, strings.NewReplacer(x.store, "{store}", x.file, "{file}", x.batch, "{batch}").Replace(string(data))
			}
			status, data := call(theirs)
			wantOpenAIError(t, c.method+" "+c.path(theirs), status, []byte(data), http.StatusNotFound, "")
			gStatus, gData := call(ghost)
			if gStatus != status || gData != data {
				t.Fatalf("A's ids: %d %s; ids that do not exist: %d %s: the answer tells them apart", status, data, gStatus, gData)
			}
		})
	}

	// B's attempts ran while A's batch was in progress, so the cancel was
	// tried on a file it could have cancelled.
	var mid fileBatchJSON
	vectorCall(t, s, a.Key, "GET", "/v1/vector_stores/"+vs.ID+"/file_batches/"+batch.ID, nil, &mid)
	switch mid.Status {
	case "in_progress":
	case "completed":
		t.Fatalf("A's batch finished before B's attempts did (%+v): make its file bigger", mid)
	default:
		t.Fatalf("A's batch after B's attempts: %+v", mid)
	}

	// A's store is as A left it, and the batch ends completed.
	waitFor(t, 30*time.Second, "A's batch to complete", func() bool {
		vectorCall(t, s, a.Key, "GET", "/v1/vector_stores/"+vs.ID+"/file_batches/"+batch.ID, nil, &mid)
		return mid.Status != "in_progress"
	})
	if mid.Status != "completed" || mid.FileCounts != (fileCountsJSON{Completed: 1, Total: 1}) {
		t.Fatalf("A's batch after B's attempts: %+v", mid)
	}
	var after vectorStoreJSON
	vectorCall(t, s, a.Key, "GET", "/v1/vector_stores/"+vs.ID, nil, &after)
	if after.Status != "completed" || after.Name != "A's store" || after.Metadata["team"] != "a" || len(after.Metadata) != 1 ||
		after.FileCounts != (fileCountsJSON{Completed: 2, Total: 2}) || after.UsageBytes <= 0 {
		t.Fatalf("A's store after B's attempts: %+v", after)
	}
	var list struct {
		Data []vectorStoreFileJSON `json:"data"`
	}
	vectorCall(t, s, a.Key, "GET", "/v1/vector_stores/"+vs.ID+"/files", nil, &list)
	got := map[string]vectorStoreFileJSON{}
	for _, f := range list.Data {
		got[f.ID] = f
	}
	if len(got) != 2 || got[notes.ID].Status != "completed" || got[notes.ID].Attributes["owner"] != "a" || len(got[notes.ID].Attributes) != 1 ||
		got[big.ID].Status != "completed" || got[bFile.ID].ID != "" {
		t.Fatalf("A's store's files after B's attempts: %+v", list.Data)
	}
	var page searchPageJSON
	vectorCall(t, s, a.Key, "POST", "/v1/vector_stores/"+vs.ID+"/search", map[string]any{"query": "launch Lisbon Tuesday", "max_num_results": 1}, &page)
	if len(page.Data) != 1 || page.Data[0].FileID != notes.ID {
		t.Fatalf("A's search after B's attempts: %+v", page)
	}
	if status, body := filesCall(t, s, a.Key, "GET", "/v1/files/"+notes.ID, nil, "", "", nil); status != http.StatusOK {
		t.Fatalf("A's file after B's attempts: %d %s", status, body)
	}

	// B has only B's own store, still empty, and paid nothing.
	var bList struct {
		Data []vectorStoreJSON `json:"data"`
	}
	vectorCall(t, s, b.Key, "GET", "/v1/vector_stores", nil, &bList)
	if len(bList.Data) != 1 || bList.Data[0].ID != bStore.ID || bList.Data[0].FileCounts.Total != 0 {
		t.Fatalf("B's stores: %+v", bList.Data)
	}
	bc := s.api(protocols[0], cred{bearer: b.Key})
	usageOf(t, bc, 0)
	bal, err := bc.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil || bal.Msg.GetBalanceNanos() != 1e9 || bal.Msg.GetReservedNanos() != 0 {
		t.Fatalf("B's balance after the refused attempts: %v %v", bal, err)
	}
}

// Ingesting a file bills its owner for the embeddings of its chunks, once
// per store it is added to: one usage record per embedding request on
// sim-embed, with the tokens of the chunks the chunker cut, and the balance
// down by exactly their cost; a search costs nothing. An owner with no
// balance gets the file failed, with the reason, and pays nothing.
func TestVectorStoreIngestionBilling(t *testing.T) {
	const batchInputs = 2
	s := startServer(t, append(fastAuth, "--ingestion-batch", strconv.Itoa(batchInputs))...)
	a := s.newAccount(t, "vs-billing@example.com")
	s.topup(t, a, "1")
	c := s.api(protocols[0], cred{bearer: a.Key})
	inPrice, _ := price(t, c, "sim-embed")

	text := sentences("ledger", 180)
	chunks := chunksOf(text, knowledge.AutoChunkTokens, knowledge.AutoOverlapTokens)
	tok := tokenize.Default()
	// The tokens of each embedding request: batchInputs chunks at a time.
	var perRequest []int64
	var chunkBytes int64
	for lo := 0; lo < len(chunks); lo += batchInputs {
		var n int64
		for _, ch := range chunks[lo:min(lo+batchInputs, len(chunks))] {
			n += int64(tok.Count(ch))
			chunkBytes += int64(len(ch))
		}
		perRequest = append(perRequest, n)
	}
	if len(chunks) < 2*batchInputs+1 {
		t.Fatalf("the text makes %d chunks: too few to need several requests", len(chunks))
	}
	f := uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "ledger.txt", []byte(text))

	// ingest makes a store of the file and checks what its ingestion cost:
	// the requests' records, newest first, on top of those before.
	var want []int64
	balance := int64(1e9)
	ingest := func(name string) vectorStoreJSON {
		t.Helper()
		var vs vectorStoreJSON
		vectorCall(t, s, a.Key, "POST", "/v1/vector_stores", map[string]any{"name": name, "file_ids": []string{f.ID}}, &vs)
		got := waitIngested(t, s, a.Key, vs.ID, f.ID, 20*time.Second)
		if got.Status != "completed" || got.LastError != nil || got.UsageBytes != chunkBytes {
			t.Fatalf("%s: the file after ingestion: %+v (want %d bytes of chunks)", name, got, chunkBytes)
		}
		want = append(want, perRequest...)
		recs := usageOf(t, c, len(want))
		var tokens []int64
		for _, r := range recs[:len(perRequest)] {
			if r.GetModel() != "sim-embed" || r.GetUsage().GetCompletionTokens() != 0 || r.GetCostNanos() != costOf(r.GetUsage().GetPromptTokens(), inPrice) {
				t.Fatalf("%s: ingestion record %v", name, r)
			}
			tokens = append(tokens, r.GetUsage().GetPromptTokens())
			balance -= r.GetCostNanos()
		}
		slices.Reverse(tokens) // the records are newest first
		if !slices.Equal(tokens, perRequest) {
			t.Fatalf("%s: the ingestion's records have %v tokens, want %v (%d chunks, %d a request)", name, tokens, perRequest, len(chunks), batchInputs)
		}
		bal, err := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil || bal.Msg.GetBalanceNanos() != balance || bal.Msg.GetReservedNanos() != 0 {
			t.Fatalf("%s: balance %v %v, want %d, nothing held", name, bal, err, balance)
		}
		return vs
	}
	t.Logf("%d chunks, cut from %d bytes into %d embedding requests of %v tokens", len(chunks), len(text), len(perRequest), perRequest)
	first := ingest("first")
	ingest("second") // the same file in a second store: billed again, once

	// A search embeds its query unbilled.
	var page searchPageJSON
	vectorCall(t, s, a.Key, "POST", "/v1/vector_stores/"+first.ID+"/search", map[string]any{"query": "ledger note 42 measured crates"}, &page)
	if len(page.Data) == 0 || page.Data[0].FileID != f.ID {
		t.Fatalf("search: %+v", page)
	}
	usageOf(t, c, len(want))
	// file_search in a response: the generation is billed, the search not.
	r, _ := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "input": "What did ledger note 42 measure?", "max_output_tokens": 5,
		"tools": []any{map[string]any{"type": "file_search", "vector_store_ids": []string{first.ID}}}})
	recs := usageOf(t, c, len(want)+1)
	if recs[0].GetModel() != "sim-small" || recs[0].GetUsage().GetPromptTokens() != int64(r.Usage.InputTokens) {
		t.Fatalf("the response's record %v (response usage %+v)", recs[0], r.Usage)
	}
	bal, err := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil || bal.Msg.GetBalanceNanos() != balance-recs[0].GetCostNanos() {
		t.Fatalf("balance after the response %v %v, want %d", bal, err, balance-recs[0].GetCostNanos())
	}

	t.Run("NoBalance", func(t *testing.T) {
		z := s.newAccount(t, "vs-broke@example.com")
		fileID := victimFile(t, s, z) // through the session: an API key stores nothing without a balance
		var vs vectorStoreJSON
		vectorCall(t, s, z.Key, "POST", "/v1/vector_stores", map[string]any{"name": "broke", "file_ids": []string{fileID}}, &vs)
		got := waitIngested(t, s, z.Key, vs.ID, fileID, 20*time.Second)
		if got.Status != "failed" || got.LastError == nil || !strings.Contains(got.LastError.Message, "insufficient balance") || got.UsageBytes != 0 {
			t.Fatalf("a file of an owner with no balance: %+v %+v", got, got.LastError)
		}
		vectorCall(t, s, z.Key, "GET", "/v1/vector_stores/"+vs.ID, nil, &vs)
		if vs.Status != "completed" || vs.FileCounts != (fileCountsJSON{Failed: 1, Total: 1}) || vs.UsageBytes != 0 {
			t.Fatalf("the store of an owner with no balance: %+v", vs)
		}
		var page searchPageJSON
		vectorCall(t, s, z.Key, "POST", "/v1/vector_stores/"+vs.ID+"/search", map[string]any{"query": "secret file"}, &page)
		if len(page.Data) != 0 {
			t.Fatalf("a failed file's chunks were searched: %+v", page)
		}
		zc := s.api(protocols[0], cred{bearer: z.Key})
		usageOf(t, zc, 0)
		bal, err := zc.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil || bal.Msg.GetBalanceNanos() != 0 || bal.Msg.GetReservedNanos() != 0 {
			t.Fatalf("the broke owner's balance: %v %v", bal, err)
		}
	})
}

// A gateway killed in the middle of a file's ingestion leaves it in
// progress with part of its chunks indexed; restarted on the same data, it
// takes the file up again once the claim lapses and finishes it, embedding
// and charging only the chunks not yet indexed: the index then holds
// exactly the chunks the chunker cuts, each once, with their text, and a
// search finds them.
func TestVectorStoreIngestionSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	// One chunk per request, each taking 16 ms of simulated prefill: the
	// file takes a few seconds; the lease is the shortest allowed.
	args := append(fastAuth, "--data-dir", dir, "--sim-time-scale", "0.1", "--ingestion-batch", "1",
		"--ingestion-lease", "10s", "--ingestion-poll", "200ms")
	s := startServer(t, args...)
	a := s.newAccount(t, "vs-kill@example.com")
	s.topup(t, a, "1")

	text := sentences("harbour", 3600) // ~280 KB
	chunks := chunksOf(text, knowledge.AutoChunkTokens, knowledge.AutoOverlapTokens)
	f := uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "harbour.txt", []byte(text))
	var vs vectorStoreJSON
	vectorCall(t, s, a.Key, "POST", "/v1/vector_stores", map[string]any{"name": "harbour", "file_ids": []string{f.ID}}, &vs)

	dbPath := filepath.Join(dir, "parley.db")
	query := func(q string, args []any, dest ...any) {
		t.Helper()
		db, err := sql.Open("sqlite", dbPath+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(q, args...).Scan(dest...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	indexed := func() (n int) {
		query(`SELECT count(*) FROM vector_chunks WHERE store_id = ? AND file_id = ?`, []any{vs.ID, f.ID}, &n)
		return n
	}
	waitFor(t, 30*time.Second, "the first chunks to be indexed", func() bool { return indexed() >= 5 })
	s.Signal(syscall.SIGKILL)
	if _, err := s.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	var status string
	left := indexed()
	query(`SELECT status FROM vector_store_files WHERE store_id = ? AND file_id = ?`, []any{vs.ID, f.ID}, &status)
	if left == 0 || left >= len(chunks) || status != "in_progress" {
		t.Fatalf("killed with %d of %d chunks indexed and the file %s: not in the middle of the file", left, len(chunks), status)
	}
	// The embedding requests charged so far: one a chunk indexed, and one
	// more if the kill fell between a chunk's charge and its put.
	charged := func() (n int) {
		query(`SELECT count(*) FROM usage_records WHERE user_id = ? AND model = 'sim-embed'`, []any{a.User.GetUserId()}, &n)
		return n
	}
	chargedAtKill := charged()
	if chargedAtKill != left && chargedAtKill != left+1 {
		t.Fatalf("killed with %d chunks indexed and %d embedding requests charged", left, chargedAtKill)
	}
	t.Logf("killed with %d of %d chunks indexed, %d charged", left, len(chunks), chargedAtKill)

	s2 := startServer(t, args...)
	got := waitIngested(t, s2, a.Key, vs.ID, f.ID, 90*time.Second)
	if got.Status != "completed" || got.LastError != nil {
		t.Fatalf("the file after the restart: %+v %+v", got, got.LastError)
	}
	var page searchPageJSON
	vectorCall(t, s2, a.Key, "POST", "/v1/vector_stores/"+vs.ID+"/search", map[string]any{"query": "harbour note 1234 guarded crates", "max_num_results": 5}, &page)
	if len(page.Data) == 0 {
		t.Fatal("a search after the restart found nothing")
	}
	for _, r := range page.Data {
		if r.FileID != f.ID || len(r.Content) != 1 || !slices.Contains(chunks, r.Content[0].Text) {
			t.Fatalf("a search result that is not one of the file's chunks: %+v", r)
		}
	}
	s2.Signal(syscall.SIGTERM)
	if _, err := s2.Wait(15 * time.Second); err != nil {
		t.Fatal(err)
	}

	// The index: the chunker's chunks, each once, in order.
	var n, ordinals, lo, hi, fileChunks int
	query(`SELECT count(*), count(DISTINCT ordinal), coalesce(min(ordinal), -1), coalesce(max(ordinal), -1) FROM vector_chunks WHERE store_id = ?`,
		[]any{vs.ID}, &n, &ordinals, &lo, &hi)
	query(`SELECT chunks FROM vector_store_files WHERE store_id = ? AND file_id = ?`, []any{vs.ID, f.ID}, &fileChunks)
	if n != len(chunks) || ordinals != n || lo != 0 || hi != n-1 || fileChunks != n {
		t.Fatalf("%d chunks indexed (%d ordinals, %d to %d), the file row says %d; the chunker cuts %d", n, ordinals, lo, hi, fileChunks, len(chunks))
	}
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT ordinal, text FROM vector_chunks WHERE store_id = ? ORDER BY ordinal`, vs.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ord int
		var chunk string
		if err := rows.Scan(&ord, &chunk); err != nil {
			t.Fatal(err)
		}
		if chunk != chunks[ord] {
			t.Fatalf("chunk %d is %.60q…, the chunker's is %.60q…", ord, chunk, chunks[ord])
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	// The resumed run embedded, and charged, only the chunks not yet
	// indexed.
	if got := charged(); got != chargedAtKill+len(chunks)-left {
		t.Fatalf("%d embedding requests charged in all: %d before the kill, then %d for the %d chunks left", got, chargedAtKill, got-chargedAtKill, len(chunks)-left)
	}
	// The lexical index, where the schema has one, holds each chunk once too.
	var hasText int
	query(`SELECT count(*) FROM sqlite_master WHERE name = 'vector_chunk_text'`, nil, &hasText)
	if hasText == 1 {
		var lexical int
		query(`SELECT count(*) FROM vector_chunk_text WHERE store = ?`, []any{vs.ID}, &lexical)
		if lexical != n {
			t.Fatalf("the lexical index holds %d rows of the store, the vector index %d chunks", lexical, n)
		}
	}
}
