package e2e

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// TestMeasureKnowledge measures, against the real binary on the embedded
// default (sim-embed, SQLite), the ingestion rate of a vector store file in
// chunks per second (extraction, chunking, embedding through the scheduler,
// indexing), and the time to first token that file_search adds to a
// streamed ChatService answer: the same request with and without it,
// interleaved, from a client on loopback. It is a measurement, not a check:
//
//	PARLEY_MEASURE=1 go test ./server/e2e -run MeasureKnowledge -v
func TestMeasureKnowledge(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("set PARLEY_MEASURE=1 to measure")
	}
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "measure-knowledge@example.com")
	s.topup(t, a, "100")

	// Ingestion: files of static 100-token chunks, one at a time.
	for _, lines := range []int{400, 2000} {
		text := sentences("harbour", lines) + "The lighthouse keeper's cat is named Bartholomew.\n"
		f := uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "corpus.txt", []byte(text))
		var vs vectorStoreJSON
		vectorCall(t, s, a.Key, "POST", "/v1/vector_stores", map[string]any{"name": "measure"}, &vs)
		start := time.Now()
		var added vectorStoreFileJSON
		vectorCall(t, s, a.Key, "POST", "/v1/vector_stores/"+vs.ID+"/files", map[string]any{"file_id": f.ID,
			"chunking_strategy": map[string]any{"type": "static", "static": map[string]any{"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 0}}}, &added)
		done := waitIngested(t, s, a.Key, vs.ID, f.ID, 5*time.Minute)
		took := time.Since(start)
		if done.Status != "completed" {
			t.Fatalf("ingestion ended %+v", done)
		}
		chunks := loggedChunks(t, s, f.ID)
		t.Logf("ingestion: %d bytes of text, %d chunks of at most 100 tokens, in %v: %.0f chunks/s (%.0f KB/s)",
			len(text), chunks, took.Round(time.Millisecond), float64(chunks)/took.Seconds(), float64(len(text))/1024/took.Seconds())
	}

	// Added time to first token: one store of the smaller file, 60 pairs.
	f := uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "keeper.txt",
		[]byte(sentences("harbour", 200)+"The lighthouse keeper's cat is named Bartholomew.\n"+sentences("orchard", 200)))
	var vs vectorStoreJSON
	vectorCall(t, s, a.Key, "POST", "/v1/vector_stores", map[string]any{"name": "keeper", "file_ids": []string{f.ID}}, &vs)
	if got := waitIngested(t, s, a.Key, vs.ID, f.ID, time.Minute); got.Status != "completed" {
		t.Fatalf("ingestion ended %+v", got)
	}
	c := s.api(protocols[0], cred{bearer: a.Key})
	question := userText("What is the lighthouse keeper's cat named?")
	ttft := func(search *parleyv1.FileSearch) time.Duration {
		start := time.Now()
		stream, err := c.Chat.CompleteStream(t.Context(), connect.NewRequest(&parleyv1.CompleteStreamRequest{
			Model: "sim-small", Messages: question, FileSearch: search, MaxOutputTokens: 20}))
		if err != nil {
			t.Fatal(err)
		}
		var first time.Duration
		for stream.Receive() {
			if first == 0 && stream.Msg().GetEvent().GetDelta().GetText() != "" {
				first = time.Since(start)
			}
		}
		if err := stream.Err(); err != nil || first == 0 {
			t.Fatalf("a stream failed (%v) or sent no text: the measurement is void", err)
		}
		return first
	}
	const pairs = 60
	var plain, searched []time.Duration
	search := &parleyv1.FileSearch{VectorStoreIds: []string{vs.ID}, MaxNumResults: 5}
	for range 5 { // warm up both paths
		ttft(nil)
		ttft(search)
	}
	for range pairs {
		plain = append(plain, ttft(nil))
		searched = append(searched, ttft(search))
	}
	slices.Sort(plain)
	slices.Sort(searched)
	q := func(d []time.Duration, p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
	t.Logf("time to first token, %d successful streams each, interleaved: without file_search p50 %v p99 %v; with it p50 %v p99 %v; added p50 %v",
		pairs, q(plain, .5).Round(10*time.Microsecond), q(plain, .99).Round(10*time.Microsecond),
		q(searched, .5).Round(10*time.Microsecond), q(searched, .99).Round(10*time.Microsecond),
		(q(searched, .5) - q(plain, .5)).Round(10*time.Microsecond))
}

// loggedChunks is the chunk count the server logged for a file's ingestion.
func loggedChunks(t *testing.T, s *server, fileID string) int {
	t.Helper()
	for line := range strings.Lines(s.Logs()) {
		if !strings.Contains(line, `"ingested a file"`) || !strings.Contains(line, fileID) {
			continue
		}
		var rec struct {
			Chunks int `json:"chunks"`
		}
		if err := json.Unmarshal([]byte(line[strings.Index(line, "{"):]), &rec); err == nil && rec.Chunks > 0 {
			return rec.Chunks
		}
	}
	t.Fatalf("no ingestion of %s logged", fileID)
	return 0
}
