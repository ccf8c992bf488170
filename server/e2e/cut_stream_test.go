package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// readOpenAIStream reads an OpenAI chat stream, calling onDelta after each
// content delta, and returns the finish reasons seen and whether an error
// event came.
func readOpenAIStream(t *testing.T, res *http.Response, onDelta func(n int)) (finishes []string, errored bool) {
	t.Helper()
	n := 0
	for ev := range sseEvents(res.Body) {
		data := ev.Data
		if data == "" || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Error   *struct{ Message string } `json:"error"`
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if chunk.Error != nil {
			errored = true
		}
		for _, c := range chunk.Choices {
			if c.FinishReason != nil {
				finishes = append(finishes, *c.FinishReason)
			}
			if c.Delta.Content != "" {
				n++
				onDelta(n)
			}
		}
	}
	return finishes, errored
}

func openAIStream(t *testing.T, s *server, key string) *http.Response {
	t.Helper()
	body := `{"model":"sim-small","stream":true,"max_tokens":1000,"messages":[{"role":"user","content":"Tell me a long story."}]}`
	for try := 0; ; try++ { // the gateway may need a moment to open the worker's load stream
		req, _ := http.NewRequest("POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := h1Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == 200 || try == 50 {
			return res
		}
		res.Body.Close()
		time.Sleep(100 * time.Millisecond)
	}
}

// A stream cut by its worker's death or by the gateway's shutdown never
// ends with finish_reason "stop": the client sees an error event, and the
// usage record says how it ended.
func TestOpenAIStreamCutNeverSaysStop(t *testing.T) {
	t.Run("worker dies", func(t *testing.T) {
		w := startWorker(t, "--engine", "sim", "--time-scale", "1")
		s := startServer(t, append(fastAuth, "--workers", w.Addr())...)
		a := s.newAccount(t, "cut-worker@example.com")
		s.topup(t, a, "1")
		res := openAIStream(t, s, a.Key)
		defer res.Body.Close()
		finishes, errored := readOpenAIStream(t, res, func(n int) {
			if n == 5 {
				w.Signal(syscall.SIGKILL)
			}
		})
		if !errored || len(finishes) != 0 {
			t.Fatalf("error event %v, finish reasons %v: want an error and no finish reason", errored, finishes)
		}
		rec := waitUsage(t, s, a, 1)[0]
		if rec.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_ERROR || rec.GetUsage().GetCompletionTokens() < 5 {
			t.Fatalf("usage record %v", rec)
		}
	})
	t.Run("gateway shuts down", func(t *testing.T) {
		s := startServer(t, append(fastAuth, "--sim-time-scale", "1", "--shutdown-grace", "300ms")...)
		a := s.newAccount(t, "cut-shutdown@example.com")
		s.topup(t, a, "1")
		res := openAIStream(t, s, a.Key)
		defer res.Body.Close()
		finishes, errored := readOpenAIStream(t, res, func(n int) {
			if n == 5 {
				s.Signal(syscall.SIGTERM)
			}
		})
		if !errored || len(finishes) != 0 {
			t.Fatalf("error event %v, finish reasons %v: want an error and no finish reason", errored, finishes)
		}
	})
}

// waitUsage waits for n of the account's usage records.
func waitUsage(t *testing.T, s *server, a *account, n int) []*parleyv1.UsageRecord {
	t.Helper()
	bill := s.api(protocols[0], cred{bearer: a.Key}).Billing
	deadline := time.Now().Add(10 * time.Second)
	for {
		u, err := bill.ListUsage(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if recs := u.Msg.GetUsageRecords(); len(recs) >= n || time.Now().After(deadline) {
			if len(recs) < n {
				t.Fatalf("%d usage records, want %d", len(recs), n)
			}
			return recs
		}
		time.Sleep(100 * time.Millisecond)
	}
}
