package e2e

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

type bgResponse struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	Background bool   `json:"background"`
	Output     []struct {
		Type    string `json:"type"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Error *struct{ Code, Message string } `json:"error"`
}

func getResponse(t *testing.T, s *server, key, id string) bgResponse {
	t.Helper()
	status, body := batchCall(t, s, key, "GET", "/v1/responses/"+id, nil)
	if status != 200 {
		t.Fatalf("GET /v1/responses/%s: %d %s", id, status, body)
	}
	var r bgResponse
	_ = json.Unmarshal(body, &r)
	return r
}

// A background response returns queued at once, runs after the request
// has gone, reads in_progress while it runs and completed with its output
// and usage after; one is cancelled from another request; background
// without store is refused naming the field; a gateway killed while one
// runs leaves it reading failed after the restart, not queued for ever.
func TestBackgroundResponses(t *testing.T) {
	dir := t.TempDir()
	args := append(fastAuth, "--data-dir", dir, "--sim-time-scale", "1")
	s := startServer(t, args...)
	a := s.newAccount(t, "background@example.com")
	s.topup(t, a, "10")
	create := func(body map[string]any) bgResponse {
		t.Helper()
		status, raw := batchCall(t, s, a.Key, "POST", "/v1/responses", body)
		if status != 200 {
			t.Fatalf("POST /v1/responses: %d %s", status, raw)
		}
		var r bgResponse
		_ = json.Unmarshal(raw, &r)
		return r
	}
	start := time.Now()
	r := create(map[string]any{"model": "sim-small", "input": "Tell me about the sea.", "background": true, "max_output_tokens": 40})
	if r.Status != "queued" || !r.Background || time.Since(start) > 2*time.Second {
		t.Fatalf("created: %+v after %v", r, time.Since(start))
	}
	sawRunning := false
	deadline := time.Now().Add(30 * time.Second)
	for r.Status == "queued" || r.Status == "in_progress" {
		if time.Now().After(deadline) {
			t.Fatalf("still %s", r.Status)
		}
		time.Sleep(50 * time.Millisecond)
		r = getResponse(t, s, a.Key, r.ID)
		sawRunning = sawRunning || r.Status == "in_progress"
	}
	if (r.Status != "completed" && r.Status != "incomplete") || r.Usage == nil || r.Usage.OutputTokens == 0 || len(r.Output) == 0 || r.Output[0].Content[0].Text == "" || !sawRunning {
		t.Fatalf("ended: %+v (saw in_progress: %v)", r, sawRunning)
	}

	long := create(map[string]any{"model": "sim-small", "input": "Tell me everything.", "background": true, "max_output_tokens": 1000})
	time.Sleep(300 * time.Millisecond)
	status, raw := batchCall(t, s, a.Key, "POST", "/v1/responses/"+long.ID+"/cancel", nil)
	var c bgResponse
	_ = json.Unmarshal(raw, &c)
	if status != 200 || c.Status != "cancelled" {
		t.Fatalf("cancel: %d %s", status, raw)
	}
	if got := getResponse(t, s, a.Key, long.ID); got.Status != "cancelled" {
		t.Fatalf("after the cancel: %+v", got)
	}
	other := s.newAccount(t, "other-bg@example.com")
	if status, _ := batchCall(t, s, other.Key, "POST", "/v1/responses/"+long.ID+"/cancel", nil); status != 404 {
		t.Fatalf("another user's cancel: %d", status)
	}
	if status, raw := batchCall(t, s, a.Key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "input": "hi", "background": true, "store": false}); status != 400 || !strings.Contains(string(raw), "background") {
		t.Fatalf("background without store: %d %s", status, raw)
	}

	dying := create(map[string]any{"model": "sim-small", "input": "A long story, please.", "background": true, "max_output_tokens": 1000})
	time.Sleep(300 * time.Millisecond)
	s.Signal(syscall.SIGKILL)
	if _, err := s.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, args...)
	if got := getResponse(t, s, a.Key, dying.ID); got.Status != "failed" || got.Error == nil {
		t.Fatalf("a response whose gateway died: %+v", got)
	}
}
