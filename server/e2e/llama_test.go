package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/worker/enginetest"
)

// llamaStack is `parley serve` → `parley worker --engine openai` → the
// llama.cpp server of the tests, with an account that has money.
type llamaStack struct {
	llama enginetest.LlamaServer
	gw    *server
	acct  *account
}

func startLlamaStack(t *testing.T) llamaStack {
	t.Helper()
	ls := enginetest.Llama(t)
	file := filepath.Join(t.TempDir(), "models.yaml")
	catalog := fmt.Sprintf("models:\n- id: %s\n  display_name: Tiny (llama.cpp)\n  context_window: 1024\n  max_output_tokens: 600\n"+
		"  input_price_nanos_per_million: 1000000000\n  output_price_nanos_per_million: 3000000000\n", ls.Model)
	if err := os.WriteFile(file, []byte(catalog), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, "--engine", "openai", "--upstream", ls.URL+"/v1")
	gw := startServer(t, append(fastAuth, "--workers", w.Addr(), "--models-file", file)...)
	a := gw.newAccount(t, "llama@example.com")
	gw.topup(t, a, "10")
	return llamaStack{llama: ls, gw: gw, acct: a}
}

// chatBody is a greedy, seeded chat request.
func chatBody(model string, maxTokens int, stream bool, user string) string {
	b, _ := json.Marshal(map[string]any{
		"model": model, "max_tokens": maxTokens, "temperature": 0, "seed": 7, "stream": stream,
		"stream_options": map[string]any{"include_usage": true},
		"messages":       []map[string]string{{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": user}},
	})
	if !stream {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		delete(m, "stream_options")
		b, _ = json.Marshal(m)
	}
	return string(b)
}

// streamed is what an OpenAI chat stream carried.
type streamed struct {
	text      string
	deltas    int
	finish    string
	usage     *openAIUsage
	firstByte time.Duration // to the first content delta
	total     time.Duration
}

type openAIUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// postChatStream posts body to baseURL's /v1/chat/completions (retrying
// while the gateway is still opening its worker's load stream) and reads
// the stream, calling onDelta after each content delta; onDelta returning
// false stops reading and closes the response.
func postChatStream(t *testing.T, baseURL, key, body string, onDelta func(n int) bool) streamed {
	t.Helper()
	var res *http.Response
	start := time.Now()
	for try := 0; ; try++ {
		req, _ := http.NewRequest("POST", baseURL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		start = time.Now()
		var err error
		if res, err = h1Client().Do(req); err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == 200 || try == 50 {
			break
		}
		res.Body.Close()
		time.Sleep(100 * time.Millisecond)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("POST %s: %s", baseURL, res.Status)
	}
	var s streamed
	var text strings.Builder
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
			Usage *openAIUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if chunk.Error != nil {
			t.Fatalf("error event: %s", chunk.Error.Message)
		}
		if chunk.Usage != nil {
			s.usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			if c.FinishReason != nil && *c.FinishReason != "" {
				s.finish = *c.FinishReason
			}
			if c.Delta.Content != "" {
				if s.deltas == 0 {
					s.firstByte = time.Since(start)
				}
				s.deltas++
				text.WriteString(c.Delta.Content)
				if onDelta != nil && !onDelta(s.deltas) {
					s.text = text.String()
					return s
				}
			}
		}
	}
	s.total = time.Since(start)
	s.text = text.String()
	return s
}

// A streamed answer through Parley, on the OpenAI endpoint and the web
// channel, is llama.cpp's own answer to the same request, token for token,
// and it is billed at exactly llama.cpp's count.
func TestLlamaCppThroughParley(t *testing.T) {
	st := startLlamaStack(t)
	const user = "Tell me about the sea."

	// llama.cpp directly, not streamed: its answer and its usage.
	req, _ := http.NewRequest("POST", st.llama.URL+"/v1/chat/completions", strings.NewReader(chatBody(st.llama.Model, 24, false, user)))
	req.Header.Set("Content-Type", "application/json")
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var direct struct {
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
		Usage openAIUsage `json:"usage"`
	}
	err = json.NewDecoder(res.Body).Decode(&direct)
	res.Body.Close()
	if err != nil || len(direct.Choices) != 1 {
		t.Fatalf("llama.cpp: %v %+v", err, direct)
	}

	got := postChatStream(t, st.gw.BaseURL, st.acct.Key, chatBody(st.llama.Model, 24, true, user), nil)
	if got.deltas < 2 || got.text != direct.Choices[0].Message.Content || got.finish != direct.Choices[0].FinishReason {
		t.Errorf("through Parley: %d deltas, %q (%s); llama.cpp directly: %q (%s)", got.deltas, got.text, got.finish,
			direct.Choices[0].Message.Content, direct.Choices[0].FinishReason)
	}
	if got.usage == nil || *got.usage != direct.Usage {
		t.Errorf("usage through Parley %+v, llama.cpp's %+v", got.usage, direct.Usage)
	}
	rec := waitUsage(t, st.gw, st.acct, 1)[0]
	u := rec.GetUsage()
	if u.GetPromptTokens() != direct.Usage.PromptTokens || u.GetCompletionTokens() != direct.Usage.CompletionTokens {
		t.Errorf("billed %d prompt + %d completion tokens; llama.cpp counted %+v", u.GetPromptTokens(), u.GetCompletionTokens(), direct.Usage)
	}
	if want := costOf(direct.Usage.PromptTokens, 1e9) + costOf(direct.Usage.CompletionTokens, 3e9); rec.GetCostNanos() != want {
		t.Errorf("cost %d nanos, want %d", rec.GetCostNanos(), want)
	}
	t.Logf("llama.cpp counted %+v; billed %d nanos", direct.Usage, rec.GetCostNanos())

	// The web channel (Connect, as the browser app streams): the same answer
	// and usage.
	zero, seed := 0.0, int64(7)
	msgs := append([]*parleyv1.Message{{Role: parleyv1.Role_ROLE_SYSTEM, Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: "You are a helpful assistant."}}}}},
		userText(user)...)
	stream, err := st.gw.api(protocols[0], cred{bearer: st.acct.Key}).Chat.CompleteStream(ctxTimeout(t, 30*time.Second),
		connect.NewRequest(&parleyv1.CompleteStreamRequest{Model: st.llama.Model, Messages: msgs, MaxOutputTokens: 24, Temperature: &zero, Seed: &seed}))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var fin *parleyv1.GenerationFinished
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		text.WriteString(ev.GetDelta().GetText())
		if f := ev.GetFinished(); f != nil {
			fin = f
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != direct.Choices[0].Message.Content || fin == nil ||
		fin.GetUsage().GetPromptTokens() != direct.Usage.PromptTokens || fin.GetUsage().GetCompletionTokens() != direct.Usage.CompletionTokens {
		t.Errorf("web channel: %q, finished %v; llama.cpp: %q, %+v", text.String(), fin, direct.Choices[0].Message.Content, direct.Usage)
	}
}

// A client that leaves mid-stream frees llama.cpp's slot: the gateway
// cancels the worker, which closes the upstream request; the usage record
// says cancelled.
func TestLlamaCppCancelFreesSlot(t *testing.T) {
	st := startLlamaStack(t)
	var closedAt time.Time
	postChatStream(t, st.gw.BaseURL, st.acct.Key, chatBody(st.llama.Model, 600, true, "Write a very long poem."), func(n int) bool {
		if n < 5 {
			return true
		}
		busy, _, err := st.llama.Probe(t.Context())
		if err != nil || busy != 1 {
			t.Errorf("llama.cpp has %d slots busy mid-stream (%v), want 1", busy, err)
		}
		closedAt = time.Now()
		return false
	})
	for {
		busy, waiting, err := st.llama.Probe(t.Context())
		if err == nil && busy == 0 && waiting == 0 {
			break
		}
		if time.Since(closedAt) > 5*time.Second {
			t.Fatalf("llama.cpp still has %d slots busy 5 s after the client left", busy)
		}
		time.Sleep(2 * time.Millisecond)
	}
	freed := time.Since(closedAt)
	t.Logf("llama.cpp's slot was free %v after the client closed its stream", freed)
	if freed > time.Second {
		t.Errorf("the slot was freed %v after the client left, want well under a second", freed)
	}
	rec := waitUsage(t, st.gw, st.acct, 1)[0]
	if rec.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_CANCELLED || rec.GetUsage().GetCompletionTokens() < 5 ||
		rec.GetUsage().GetCompletionTokens() >= 600 {
		t.Errorf("usage record %v, want cancelled after 5+ tokens", rec)
	}
}

// TestMeasureLlamaCpp (PARLEY_MEASURE=1) compares time to first token and
// tokens per second, one request at a time, through Parley and at
// llama.cpp directly.
func TestMeasureLlamaCpp(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("a measurement: set PARLEY_MEASURE=1")
	}
	st := startLlamaStack(t)
	const n, tokens = 12, 128
	measure := func(base, key string) (ttft, tps []float64) {
		for i := range n {
			s := postChatStream(t, base, key, chatBody(st.llama.Model, tokens, true, fmt.Sprintf("Question %d: tell me a story.", i)), nil)
			if s.usage == nil {
				t.Fatalf("no usage from %s", base)
			}
			ttft = append(ttft, float64(s.firstByte.Microseconds())/1000)
			if d := s.total - s.firstByte; d > 0 && s.usage.CompletionTokens > 1 {
				tps = append(tps, float64(s.usage.CompletionTokens-1)/d.Seconds())
			}
		}
		return ttft, tps
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	postChatStream(t, st.gw.BaseURL, st.acct.Key, chatBody(st.llama.Model, 4, true, "warm up"), nil)
	dTTFT, dTPS := measure(st.llama.URL, "")
	pTTFT, pTPS := measure(st.gw.BaseURL, st.acct.Key)
	t.Logf("llama.cpp directly: TTFT median %.1f ms, %.0f tokens/s (median of %d streams of %d tokens)", median(dTTFT), median(dTPS), n, tokens)
	t.Logf("through Parley:     TTFT median %.1f ms, %.0f tokens/s", median(pTTFT), median(pTPS))
}

// What gateways addressing a llama.cpp server directly cost it: each polls
// its /metrics and /slots once a second. The server's CPU time over a window
// with no gateway, then with `gateways` of them, and over the same polls
// made back to back (the cost of one).
func TestMeasureDirectPolls(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("a measurement: set PARLEY_MEASURE=1")
	}
	ls := enginetest.Llama(t)
	pid := listenerPID(t, ls.URL)
	const gateways, window, polls = 8, 20 * time.Second, 2000
	idle0 := cpuSeconds(t, pid)
	time.Sleep(window)
	idle := cpuSeconds(t, pid) - idle0
	catalog := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(catalog, fmt.Appendf(nil, "models:\n- id: %s\n  display_name: Tiny\n  context_window: 1024\n  max_output_tokens: 600\n"+
		"  input_price_nanos_per_million: 1\n  output_price_nanos_per_million: 1\n", ls.Model), 0o600); err != nil {
		t.Fatal(err)
	}
	upstream := "openai+" + ls.URL + "/v1"
	for range gateways {
		gw := startServer(t, "--workers", upstream, "--models-file", catalog)
		waitFor(t, 15*time.Second, "the gateway sees the server", func() bool { return readyWorkers(t, gw) == 1 })
	}
	time.Sleep(2 * time.Second) // past their first discovery
	with0 := cpuSeconds(t, pid)
	time.Sleep(window)
	with := cpuSeconds(t, pid) - with0
	c := &http.Client{}
	get := func(path string) {
		res, err := c.Get(ls.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	b0 := cpuSeconds(t, pid)
	start := time.Now()
	for range polls {
		get("/metrics")
		get("/slots")
	}
	each := (cpuSeconds(t, pid) - b0) / polls
	t.Logf("llama.cpp server CPU: idle %.2f s in %v; with %d gateways polling it directly %.2f s (%.2f ms a gateway a second, %.3f%% of a core)",
		idle, window, gateways, with, (with-idle)/float64(gateways)/window.Seconds()*1000, (with-idle)/window.Seconds()*100)
	t.Logf("one poll (GET /metrics and /slots) back to back: %.3f ms of its CPU, %.2f ms wall (%d polls)",
		each*1000, float64(time.Since(start).Microseconds())/1000/polls, polls)
}

// listenerPID is the process listening on url's port on this machine,
// found through /proc (Linux only).
func listenerPID(t *testing.T, rawURL string) int {
	t.Helper()
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// local_address is HEXIP:HEXPORT; state 0A is LISTEN.
			if len(fs) > 9 && fs[3] == "0A" && strings.HasSuffix(fs[1], fmt.Sprintf(":%04X", port)) {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if target, err := os.Readlink(fd); err == nil && inodes[target] {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			return pid
		}
	}
	t.Skipf("no process of this user listens on port %d", port)
	return 0
}
