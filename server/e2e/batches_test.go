package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

type batchJSON struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Status        string  `json:"status"`
	Endpoint      string  `json:"endpoint"`
	OutputFileID  *string `json:"output_file_id"`
	ErrorFileID   *string `json:"error_file_id"`
	InProgressAt  *int64  `json:"in_progress_at"`
	CompletedAt   *int64  `json:"completed_at"`
	ExpiredAt     *int64  `json:"expired_at"`
	CancelledAt   *int64  `json:"cancelled_at"`
	FailedAt      *int64  `json:"failed_at"`
	RequestCounts struct {
		Total, Completed, Failed int
	} `json:"request_counts"`
	Errors *struct {
		Data []struct {
			Code, Message string
			Param         *string
			Line          *int
		}
	} `json:"errors"`
	Metadata map[string]string `json:"metadata"`
}

type batchOutputLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct{ Code, Message string } `json:"error"`
}

func batchCall(t *testing.T, s *server, key, method, path string, body any) (int, []byte) {
	t.Helper()
	var r *bytes.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	} else {
		r = bytes.NewReader(nil)
	}
	req, _ := http.NewRequestWithContext(ctxTimeout(t, 20*time.Second), method, s.BaseURL+path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	return res.StatusCode, buf.Bytes()
}

func createBatch(t *testing.T, s *server, key, endpoint string, lines []string) batchJSON {
	t.Helper()
	f := uploadFile(t, s, key, map[string]string{"purpose": "batch"}, "requests.jsonl", []byte(strings.Join(lines, "\n")+"\n"))
	status, body := batchCall(t, s, key, "POST", "/v1/batches", map[string]any{"input_file_id": f.ID, "endpoint": endpoint,
		"completion_window": "24h", "metadata": map[string]string{"job": "e2e"}})
	if status != 200 {
		t.Fatalf("POST /v1/batches: %d %s", status, body)
	}
	var b batchJSON
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// waitBatch polls a batch until it has ended.
func waitBatch(t *testing.T, s *server, key, id string, within time.Duration) batchJSON {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		status, body := batchCall(t, s, key, "GET", "/v1/batches/"+id, nil)
		if status != 200 {
			t.Fatalf("GET /v1/batches/%s: %d %s", id, status, body)
		}
		var b batchJSON
		_ = json.Unmarshal(body, &b)
		switch b.Status {
		case "completed", "failed", "expired", "cancelled":
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s still %s after %v: %s", id, b.Status, within, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fileLines downloads a JSONL file and parses its lines.
func fileLines(t *testing.T, s *server, key string, id *string) []batchOutputLine {
	t.Helper()
	if id == nil {
		return nil
	}
	status, body := filesCall(t, s, key, "GET", "/v1/files/"+*id+"/content", nil, "", "", nil)
	if status != 200 {
		t.Fatalf("GET file %s: %d %s", *id, status, body)
	}
	var out []batchOutputLine
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var o batchOutputLine
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		out = append(out, o)
	}
	return out
}

func chatLine(id, model, text string) string {
	b, _ := json.Marshal(map[string]any{"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
		"body": map[string]any{"model": model, "max_tokens": 8, "messages": []map[string]string{{"role": "user", "content": text}}}})
	return string(b)
}

// A batch of chat completions runs to completed: each custom_id is
// answered once in the output file (as OpenAI writes it), a line the
// endpoint refuses is in the error file with its status, the balance falls
// by exactly what the usage records say, each record on the batch channel
// at half the interactive price; a bad input file fails with its line
// numbers and charges nothing; another user sees none of it.
func TestBatchRunsToCompletion(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "batch@example.com")
	s.topup(t, a, "10")
	c := s.api(protocols[0], cred{bearer: a.Key})
	before := balanceNanos(t, c)

	var lines []string
	for i := range 40 {
		lines = append(lines, chatLine(fmt.Sprint("req-", i), "sim-small", fmt.Sprintf("Question number %d", i)))
	}
	lines = append(lines, chatLine("too-long", "sim-small", "x"), "") // an empty line is skipped
	lines[len(lines)-2] = strings.Replace(lines[len(lines)-2], `"max_tokens":8`, `"max_tokens":999999`, 1)
	b := createBatch(t, s, a.Key, "/v1/chat/completions", lines)
	if b.Status != "validating" || b.Object != "batch" || b.Metadata["job"] != "e2e" {
		t.Fatalf("created: %+v", b)
	}
	b = waitBatch(t, s, a.Key, b.ID, 60*time.Second)
	if b.Status != "completed" || b.RequestCounts.Total != 41 || b.RequestCounts.Completed != 40 || b.RequestCounts.Failed != 1 ||
		b.InProgressAt == nil || b.CompletedAt == nil {
		t.Fatalf("ended: %+v", b)
	}
	out := fileLines(t, s, a.Key, b.OutputFileID)
	seen := map[string]int{}
	for _, o := range out {
		seen[o.CustomID]++
		var body struct {
			Object  string `json:"object"`
			Choices []struct {
				Message struct{ Content string }
			}
		}
		_ = json.Unmarshal(o.Response.Body, &body)
		if o.Response == nil || o.Response.StatusCode != 200 || o.Error != nil || body.Object != "chat.completion" ||
			len(body.Choices) != 1 || !strings.HasPrefix(o.ID, "batch_req_") || o.Response.RequestID == "" {
			t.Fatalf("output line: %+v %s", o, o.Response.Body)
		}
	}
	for i := range 40 {
		if seen[fmt.Sprint("req-", i)] != 1 {
			t.Fatalf("req-%d answered %d times", i, seen[fmt.Sprint("req-", i)])
		}
	}
	errs := fileLines(t, s, a.Key, b.ErrorFileID)
	if len(errs) != 1 || errs[0].CustomID != "too-long" || errs[0].Response.StatusCode != 400 || !strings.Contains(string(errs[0].Response.Body), "max_tokens") {
		t.Fatalf("error file: %+v", errs)
	}

	// Charged exactly what the records say, on the batch channel, at half price.
	recs := usageOf(t, c, 40)
	in, outPrice := price(t, c, "sim-small")
	var sum int64
	for _, r := range recs {
		sum += r.GetCostNanos()
		if !r.GetBatch() || r.GetChannel() != parleyv1.AuthChannel_AUTH_CHANNEL_API_KEY {
			t.Fatalf("usage record not marked batch: %v", r)
		}
		full := (r.GetUsage().GetPromptTokens()*in+999_999)/1_000_000 + (r.GetUsage().GetCompletionTokens()*outPrice+999_999)/1_000_000
		if r.GetCostNanos() >= full {
			t.Fatalf("a batch line cost %d, the interactive price %d", r.GetCostNanos(), full)
		}
	}
	if after := balanceNanos(t, c); before-after != sum {
		t.Fatalf("balance fell %d, the usage records sum to %d", before-after, sum)
	}
	pb, err := s.clients(protocols[0], cred{bearer: a.Key}).Batches.GetBatch(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBatchRequest{BatchId: b.ID}))
	if err != nil || pb.Msg.GetBatch().GetStatus() != parleyv1.BatchStatus_BATCH_STATUS_COMPLETED || pb.Msg.GetBatch().GetCostNanos() != sum {
		t.Fatalf("BatchService.GetBatch: %v %v (want cost %d)", pb, err, sum)
	}

	// A bad file fails validation with every line's error and no charge.
	bad := []string{
		chatLine("a", "sim-small", "hi"),
		chatLine("a", "sim-small", "again"),
		`{"custom_id":"b","method":"GET","url":"/v1/chat/completions","body":{"model":"sim-small"}}`,
		`{"custom_id":"c","method":"POST","url":"/v1/embeddings","body":{"model":"sim-small"}}`,
		`{"custom_id":"d","method":"POST","url":"/v1/chat/completions","body":{"model":"no-such-model"}}`,
		`not json`,
	}
	mid := balanceNanos(t, c)
	f := waitBatch(t, s, a.Key, createBatch(t, s, a.Key, "/v1/chat/completions", bad).ID, 30*time.Second)
	if f.Status != "failed" || f.Errors == nil || f.FailedAt == nil {
		t.Fatalf("a bad file: %+v", f)
	}
	codes := map[string]int{}
	for _, e := range f.Errors.Data {
		codes[e.Code] = *e.Line
	}
	want := map[string]int{"duplicate_custom_id": 2, "invalid_method": 3, "mismatched_endpoint": 4, "model_not_found": 5, "invalid_json": 6}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("validation errors %v, want %v", codes, want)
	}
	if balanceNanos(t, c) != mid {
		t.Fatal("a batch that failed validation charged something")
	}

	// Bad requests name their field; another user's batch is not found.
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"input_file_id": "", "endpoint": "/v1/chat/completions", "completion_window": "24h"}, "input_file_id"},
		{map[string]any{"input_file_id": "x", "endpoint": "/v1/images", "completion_window": "24h"}, "endpoint"},
		{map[string]any{"input_file_id": "x", "endpoint": "/v1/chat/completions", "completion_window": "1h"}, "completion_window"},
	} {
		if status, body := batchCall(t, s, a.Key, "POST", "/v1/batches", tc.body); status != 400 || !strings.Contains(string(body), tc.field) {
			t.Errorf("%v: %d %s", tc.body, status, body)
		}
	}
	other := s.newAccount(t, "other@example.com")
	for _, path := range []string{"/v1/batches/" + b.ID} {
		if status, _ := batchCall(t, s, other.Key, "GET", path, nil); status != 404 {
			t.Errorf("another user's GET %s: %d", path, status)
		}
	}
	if status, _ := batchCall(t, s, other.Key, "POST", "/v1/batches/"+b.ID+"/cancel", nil); status != 404 {
		t.Errorf("another user's cancel: %d", status)
	}
	if status, body := batchCall(t, s, other.Key, "GET", "/v1/batches", nil); status != 200 || strings.Contains(string(body), b.ID) {
		t.Errorf("another user's list: %d %s", status, body)
	}
	if status, body := batchCall(t, s, a.Key, "GET", "/v1/batches?limit=1", nil); status != 200 || !strings.Contains(string(body), `"has_more":true`) {
		t.Errorf("list: %d %s", status, body)
	}
}

func balanceNanos(t *testing.T, c apiClients) int64 {
	t.Helper()
	res, err := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	return res.Msg.GetBalanceNanos()
}

// A cancelled batch ends cancelled with the lines not run in the error
// file as batch_cancelled; a batch whose window ends (a test window of a
// few seconds, the sim slow) ends expired the same way, the lines run
// before in the output file.
func TestBatchCancelAndExpiry(t *testing.T) {
	s := startServer(t, append(fastAuth, "--sim-time-scale", "1", "--batch-concurrency", "2", "--test-batch-window", "3s")...)
	a := s.newAccount(t, "cancel@example.com")
	s.topup(t, a, "10")
	var lines []string
	for i := range 200 {
		b, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint("r", i), "method": "POST", "url": "/v1/chat/completions",
			"body": map[string]any{"model": "sim-small", "max_tokens": 64, "messages": []map[string]string{{"role": "user", "content": "tell me a story"}}}})
		lines = append(lines, string(b))
	}
	b := createBatch(t, s, a.Key, "/v1/chat/completions", lines)
	time.Sleep(300 * time.Millisecond)
	if status, body := batchCall(t, s, a.Key, "POST", "/v1/batches/"+b.ID+"/cancel", nil); status != 200 || !strings.Contains(string(body), `"cancelling"`) {
		t.Fatalf("cancel: %d %s", status, body)
	}
	got := waitBatch(t, s, a.Key, b.ID, 30*time.Second)
	errs := fileLines(t, s, a.Key, got.ErrorFileID)
	if got.Status != "cancelled" || got.CancelledAt == nil || got.RequestCounts.Completed+got.RequestCounts.Failed != 200 || len(errs) == 0 ||
		errs[len(errs)-1].Error == nil || errs[len(errs)-1].Error.Code != "batch_cancelled" {
		t.Fatalf("cancelled: %+v, %d error lines", got, len(errs))
	}
	if status, _ := batchCall(t, s, a.Key, "POST", "/v1/batches/"+b.ID+"/cancel", nil); status != 400 {
		t.Fatalf("cancelling an ended batch: %d", status)
	}

	e := waitBatch(t, s, a.Key, createBatch(t, s, a.Key, "/v1/chat/completions", lines).ID, 30*time.Second)
	errs = fileLines(t, s, a.Key, e.ErrorFileID)
	done := fileLines(t, s, a.Key, e.OutputFileID)
	if e.Status != "expired" || e.ExpiredAt == nil || len(done) == 0 || len(done)+len(errs) != 200 || errs[0].Error == nil || errs[0].Error.Code != "batch_expired" {
		t.Fatalf("expired: %+v, %d answered, %d errors", e, len(done), len(errs))
	}
}

// A gateway killed with SIGKILL mid-batch loses no line and charges none
// twice: after a restart on the same data directory the batch is claimed
// again once its lease lapses and runs to completed, every custom_id is in
// the output file once, there is one usage record per line, and the
// balance fell by exactly what the records say.
func TestBatchSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	args := append(fastAuth, "--data-dir", dir, "--sim-time-scale", "1", "--batch-concurrency", "4", "--batch-lease", "2s")
	s := startServer(t, args...)
	killMidBatch(t, s, s, func() *server { return startServer(t, args...) })
}

// killMidBatch runs a 40-line batch made on g0, kills g0 with SIGKILL once a
// few lines are answered, and checks that the gateway then running (g1, or
// what restart starts when g1 is g0) finishes it with each line answered
// and charged once.
func killMidBatch(t *testing.T, g0, g1 *server, restart func() *server) {
	t.Helper()
	a := g0.newAccount(t, "kill9@example.com")
	g0.topup(t, a, "10")
	before := balanceNanos(t, g0.api(protocols[0], cred{bearer: a.Key}))
	var lines []string
	for i := range 40 {
		b, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint("k", i), "method": "POST", "url": "/v1/chat/completions",
			"body": map[string]any{"model": "sim-small", "max_tokens": 24, "messages": []map[string]string{{"role": "user", "content": fmt.Sprint("line ", i)}}}})
		lines = append(lines, string(b))
	}
	b := createBatch(t, g0, a.Key, "/v1/chat/completions", lines)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := batchCall(t, g0, a.Key, "GET", "/v1/batches/"+b.ID, nil)
		var cur batchJSON
		_ = json.Unmarshal(body, &cur)
		if cur.RequestCounts.Completed >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line answered in 30s: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g0.Signal(syscall.SIGKILL)
	if _, err := g0.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if g1 == g0 {
		g1 = restart()
	}
	got := waitBatch(t, g1, a.Key, b.ID, 90*time.Second)
	if got.Status != "completed" || got.RequestCounts.Completed != 40 || got.RequestCounts.Failed != 0 {
		t.Fatalf("after the kill: %+v", got)
	}
	seen := map[string]int{}
	for _, o := range fileLines(t, g1, a.Key, got.OutputFileID) {
		seen[o.CustomID]++
	}
	for i := range 40 {
		if n := seen[fmt.Sprint("k", i)]; n != 1 {
			t.Fatalf("k%d is in the output %d times", i, n)
		}
	}
	c := g1.api(protocols[0], cred{bearer: a.Key})
	var sum int64
	for _, r := range usageOf(t, c, 40) {
		sum += r.GetCostNanos()
	}
	if after := balanceNanos(t, c); before-after != sum {
		t.Fatalf("the balance fell %d; the 40 usage records sum to %d", before-after, sum)
	}
}

// A batch larger than the balance runs until the balance is spent: the
// lines it covers are answered, the rest fail with 429 insufficient_quota
// in the error file, the batch still completes, and the balance never goes
// below zero and falls by exactly what the usage records say.
func TestBatchLargerThanTheBalance(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "small-balance@example.com")
	s.topup(t, a, "0.0002") // 200,000 nano-USD: a few lines' holds at sim-small's price
	c := s.api(protocols[0], cred{bearer: a.Key})
	before := balanceNanos(t, c)
	var lines []string
	for i := range 60 {
		b, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint("p", i), "method": "POST", "url": "/v1/chat/completions",
			"body": map[string]any{"model": "sim-small", "max_tokens": 100, "messages": []map[string]string{{"role": "user", "content": fmt.Sprint("line ", i)}}}})
		lines = append(lines, string(b))
	}
	got := waitBatch(t, s, a.Key, createBatch(t, s, a.Key, "/v1/chat/completions", lines).ID, 60*time.Second)
	if got.Status != "completed" || got.RequestCounts.Completed == 0 || got.RequestCounts.Failed == 0 || got.RequestCounts.Completed+got.RequestCounts.Failed != 60 {
		t.Fatalf("ended: %+v", got)
	}
	for _, e := range fileLines(t, s, a.Key, got.ErrorFileID) {
		if e.Response == nil || e.Response.StatusCode != 429 || !strings.Contains(string(e.Response.Body), "insufficient_quota") {
			t.Fatalf("an error line: %+v %s", e, e.Response.Body)
		}
	}
	var sum int64
	for _, r := range usageOf(t, c, got.RequestCounts.Completed) {
		sum += r.GetCostNanos()
	}
	after := balanceNanos(t, c)
	if after < 0 || before-after != sum {
		t.Fatalf("balance %d → %d; the usage records sum to %d", before, after, sum)
	}
	t.Logf("%d lines answered on a balance of %d nano-USD, %d refused; %d left", got.RequestCounts.Completed, before, got.RequestCounts.Failed, after)
}

// One user's long batch does not hold up another's: a gateway runs
// batches side by side (--batch-parallel), so a short batch submitted
// after a long one ends while the long one is still running.
func TestBatchesRunSideBySide(t *testing.T) {
	s := startServer(t, append(fastAuth, "--sim-time-scale", "1", "--batch-concurrency", "2")...)
	a, b := s.newAccount(t, "long-batch@example.com"), s.newAccount(t, "short-batch@example.com")
	s.topup(t, a, "10")
	s.topup(t, b, "10")
	var long []string
	for i := range 200 {
		long = append(long, chatLine(fmt.Sprint("l", i), "sim-small", "tell me a long story"))
	}
	lb := createBatch(t, s, a.Key, "/v1/chat/completions", long)
	waitFor(t, 20*time.Second, "the long batch to start", func() bool {
		_, body := batchCall(t, s, a.Key, "GET", "/v1/batches/"+lb.ID, nil)
		return strings.Contains(string(body), `"in_progress"`)
	})
	sb := waitBatch(t, s, b.Key, createBatch(t, s, b.Key, "/v1/chat/completions", []string{chatLine("s0", "sim-small", "hi")}).ID, 30*time.Second)
	if sb.Status != "completed" {
		t.Fatalf("the short batch: %+v", sb)
	}
	_, body := batchCall(t, s, a.Key, "GET", "/v1/batches/"+lb.ID, nil)
	if !strings.Contains(string(body), `"in_progress"`) {
		t.Fatalf("the long batch ended first: %s", body)
	}
}
