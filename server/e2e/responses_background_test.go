package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
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
	// A stream cut short resumes after the last event its client saw.
	resumeAcross(t, s, s, a.Key)
	if status, raw := batchCall(t, s, a.Key, "GET", "/v1/responses/"+r.ID+"?stream=true&starting_after=x", nil); status != 400 || !strings.Contains(string(raw), "starting_after") {
		t.Fatalf("a bad starting_after: %d %s", status, raw)
	}
}

type bgEvent struct {
	Type     string `json:"type"`
	Seq      int    `json:"sequence_number"`
	Delta    string `json:"delta"`
	Response *struct {
		ID string `json:"id"`
	} `json:"response"`
}

// readEvents reads a Responses SSE stream's events until it ends or stop
// says so.
func readRespEvents(t *testing.T, res *http.Response, stop func(bgEvent) bool) []bgEvent {
	t.Helper()
	defer res.Body.Close()
	var out []bgEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ev bgEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev)
		if stop != nil && stop(ev) {
			break
		}
	}
	return out
}

func streamCall(t *testing.T, s *server, key, method, path string, body any) *http.Response {
	t.Helper()
	var r io.Reader = http.NoBody
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	}
	req, _ := http.NewRequestWithContext(ctxTimeout(t, 60*time.Second), method, s.BaseURL+path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res
}

// resumeAcross streams a background response from g0, drops the stream
// after a few text deltas, resumes it from g1 after the last event seen,
// and checks the two parts join into the stored answer, numbered without a
// gap or a repeat.
func resumeAcross(t *testing.T, g0, g1 *server, key string) {
	first := readRespEvents(t, streamCall(t, g0, key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "input": "Tell me a story.",
		"background": true, "stream": true, "max_output_tokens": 60}), func(ev bgEvent) bool { return ev.Type == "response.output_text.delta" && ev.Seq >= 6 })
	if len(first) == 0 || first[0].Type != "response.created" || first[0].Response == nil {
		t.Fatalf("the stream began %+v", first)
	}
	id, last := first[0].Response.ID, first[len(first)-1].Seq
	rest := readRespEvents(t, streamCall(t, g1, key, "GET", fmt.Sprintf("/v1/responses/%s?stream=true&starting_after=%d", id, last), nil), nil)
	if len(rest) == 0 || rest[0].Seq != last+1 {
		t.Fatalf("resumed after %d: %+v", last, rest)
	}
	var text strings.Builder
	for i, ev := range append(first, rest...) {
		if ev.Seq != i {
			t.Fatalf("event %d numbered %d", i, ev.Seq)
		}
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
	}
	if end := rest[len(rest)-1].Type; end != "response.completed" && end != "response.incomplete" {
		t.Fatalf("the resumed stream ended with %s", end)
	}
	var got bgResponse
	deadline := time.Now().Add(10 * time.Second)
	for got = getResponse(t, g1, key, id); got.Status == "queued" || got.Status == "in_progress"; got = getResponse(t, g1, key, id) {
		if time.Now().After(deadline) {
			t.Fatalf("still %s", got.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got.Output) == 0 || got.Output[0].Content[0].Text != text.String() {
		t.Fatalf("the streamed text %q, the stored %+v", text.String(), got.Output)
	}
}

// ChatService's background generations over Connect and gRPC: started,
// followed, the stream dropped and resumed after the last seq seen, read
// back completed with the same text; one cancelled; another user's is
// not found.
func TestBackgroundGenerationsOverConnect(t *testing.T) {
	s := startServer(t, append(fastAuth, "--sim-time-scale", "1")...)
	a, b := s.newAccount(t, "bg-connect@example.com"), s.newAccount(t, "bg-other@example.com")
	s.topup(t, a, "5")
	for _, p := range protocols[:2] {
		t.Run(p.name, func(t *testing.T) {
			c := s.api(p, cred{bearer: a.Key})
			ctx := ctxTimeout(t, 60*time.Second)
			st, err := c.Chat.StartBackground(ctx, connect.NewRequest(&parleyv1.StartBackgroundRequest{Request: &parleyv1.CompleteRequest{
				Model: "sim-small", Messages: userText("Tell me a story."), MaxOutputTokens: 40}}))
			if err != nil || st.Msg.GetGeneration().GetStatus() != parleyv1.BackgroundStatus_BACKGROUND_STATUS_QUEUED {
				t.Fatalf("StartBackground: %v %v", st, err)
			}
			id := st.Msg.GetGeneration().GetId()
			var text strings.Builder
			var last uint64
			follow, err := c.Chat.FollowBackground(ctx, connect.NewRequest(&parleyv1.FollowBackgroundRequest{Id: id}))
			if err != nil {
				t.Fatal(err)
			}
			for deltas := 0; deltas < 3 && follow.Receive(); {
				ev := follow.Msg().GetEvent()
				last = ev.GetSeq()
				if d := ev.GetDelta().GetText(); d != "" {
					text.WriteString(d)
					deltas++
				}
			}
			follow.Close()
			rest, err := c.Chat.FollowBackground(ctx, connect.NewRequest(&parleyv1.FollowBackgroundRequest{Id: id, AfterSeq: last}))
			if err != nil {
				t.Fatal(err)
			}
			first := true
			var fin *parleyv1.GenerationFinished
			for rest.Receive() {
				ev := rest.Msg().GetEvent()
				if first && ev.GetSeq() != last+1 {
					t.Fatalf("resumed after %d at %d", last, ev.GetSeq())
				}
				first = false
				text.WriteString(ev.GetDelta().GetText())
				if f := ev.GetFinished(); f != nil {
					fin = f
				}
			}
			if err := rest.Err(); err != nil || fin == nil {
				t.Fatalf("the resumed stream: %v, finished %v", err, fin)
			}
			var g *parleyv1.BackgroundGeneration
			waitFor(t, 10*time.Second, "the stored end", func() bool {
				res, err := c.Chat.GetBackground(ctx, connect.NewRequest(&parleyv1.GetBackgroundRequest{Id: id}))
				g = res.Msg.GetGeneration()
				return err == nil && g.GetStatus() == parleyv1.BackgroundStatus_BACKGROUND_STATUS_COMPLETED
			})
			if got := g.GetResponse().GetMessage().GetParts()[0].GetText(); got != text.String() || g.GetResponse().GetCostNanos() == 0 {
				t.Fatalf("stored %q (cost %d), streamed %q", got, g.GetResponse().GetCostNanos(), text.String())
			}
			other := s.api(p, cred{bearer: b.Key})
			if _, err := other.Chat.GetBackground(ctx, connect.NewRequest(&parleyv1.GetBackgroundRequest{Id: id})); connect.CodeOf(err) != connect.CodeNotFound {
				t.Fatalf("another user's GetBackground: %v", err)
			}
			if _, err := other.Chat.CancelBackground(ctx, connect.NewRequest(&parleyv1.CancelBackgroundRequest{Id: id})); connect.CodeOf(err) != connect.CodeNotFound {
				t.Fatalf("another user's CancelBackground: %v", err)
			}

			long, err := c.Chat.StartBackground(ctx, connect.NewRequest(&parleyv1.StartBackgroundRequest{Request: &parleyv1.CompleteRequest{
				Model: "sim-small", Messages: userText("Tell me everything."), MaxOutputTokens: 1000}}))
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			cc, err := c.Chat.CancelBackground(ctx, connect.NewRequest(&parleyv1.CancelBackgroundRequest{Id: long.Msg.GetGeneration().GetId()}))
			if err != nil || cc.Msg.GetGeneration().GetStatus() != parleyv1.BackgroundStatus_BACKGROUND_STATUS_CANCELLED {
				t.Fatalf("CancelBackground: %v %v", cc, err)
			}
		})
	}
}
