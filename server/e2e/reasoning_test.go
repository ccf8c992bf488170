package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// reasoningUpstream is an OpenAI-style server for two models: "reasoner"
// streams its reasoning as vLLM and llama.cpp do (reasoning_content deltas
// before the answer), "textonly" only answers. It records the reasoning
// effort each request asked for.
type reasoningUpstream struct {
	URL     string
	mu      sync.Mutex
	efforts []string
	last    []byte // the last request's body
}

const (
	upstreamThought = "The user says hello; a short greeting back will do."
	upstreamAnswer  = "Hello there."
)

func startReasoningUpstream(t *testing.T) *reasoningUpstream {
	t.Helper()
	u := &reasoningUpstream{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"reasoner","object":"model"},{"id":"textonly","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model           string `json:"model"`
			ReasoningEffort string `json:"reasoning_effort"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		u.mu.Lock()
		u.efforts = append(u.efforts, body.ReasoningEffort)
		u.last = raw
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(delta string) {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", body.Model, delta)
			fl.Flush()
		}
		if body.Model == "reasoner" {
			for _, w := range strings.SplitAfter(upstreamThought, " ") {
				chunk(fmt.Sprintf(`{"reasoning_content":%q}`, w))
			}
		}
		for _, w := range strings.SplitAfter(upstreamAnswer, " ") {
			chunk(fmt.Sprintf(`{"content":%q}`, w))
		}
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":14,\"total_tokens\":26}}\n\ndata: [DONE]\n\n", body.Model)
		fl.Flush()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	u.URL = "http://" + ln.Addr().String() + "/v1"
	return u
}

func (u *reasoningUpstream) lastBody() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return string(u.last)
}

func (u *reasoningUpstream) lastEffort() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.efforts) == 0 {
		return "<none>"
	}
	return u.efforts[len(u.efforts)-1]
}

// reasoningStack is the gateway, an openai-engine worker and the upstream,
// with a catalog listing "reasoner" with the reasoning capability (and a
// Claude-style alias) and "textonly" with no capabilities at all.
func reasoningStack(t *testing.T, extra ...string) (*server, *reasoningUpstream, *account) {
	t.Helper()
	up := startReasoningUpstream(t)
	w := startWorker(t, "--engine", "openai", "--upstream", up.URL)
	file := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(file, []byte(`models:
- id: reasoner
  display_name: Reasoner
  context_window: 32768
  max_output_tokens: 4096
  input_price_nanos_per_million: 100000000
  output_price_nanos_per_million: 200000000
  capabilities: [tools, structured_output, reasoning]
  aliases: [claude-think-1]
- id: textonly
  display_name: Text only
  context_window: 32768
  max_output_tokens: 4096
  input_price_nanos_per_million: 100000000
  output_price_nanos_per_million: 200000000
  capabilities: []
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, append(append(fastAuth, "--workers", w.Addr(), "--models-file", file), extra...)...)
	a := s.newAccount(t, "reasoning@example.com")
	s.topup(t, a, "10")
	waitFor(t, 10*time.Second, "the worker's models", func() bool {
		res, body := s.getRaw(t, "/v1/models/reasoner", map[string]string{"Authorization": "Bearer " + a.Key})
		return res.StatusCode == 200 && strings.Contains(string(body), "reasoning")
	})
	return s, up, a
}

// A model that reasons has its reasoning reach every surface in that
// surface's own form, apart from the answer: chat completions'
// reasoning_content, Anthropic thinking blocks (when thinking is asked
// for), Responses reasoning items (also as stored); the effort asked for
// reaches the upstream as it takes it.
func TestReasoningThroughEverySurface(t *testing.T) {
	s, up, a := reasoningStack(t)
	bearer := map[string]string{"Authorization": "Bearer " + a.Key}
	anthropicHdr := map[string]string{"x-api-key": a.Key, "anthropic-version": "2023-06-01"}

	t.Run("chat completions", func(t *testing.T) {
		res, body := s.postRaw(t, "/v1/chat/completions", `{"model":"reasoner","reasoning_effort":"minimal","messages":[{"role":"user","content":"hi"}]}`, bearer)
		var c struct {
			Choices []struct {
				Message struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &c) != nil || len(c.Choices) != 1 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		if m := c.Choices[0].Message; m.Content != upstreamAnswer || m.ReasoningContent != upstreamThought {
			t.Errorf("message = %+v", m)
		}
		if e := up.lastEffort(); e != "low" {
			t.Errorf("effort upstream = %q, want low (minimal as the upstream takes it)", e)
		}
		res, body = s.postRaw(t, "/v1/chat/completions", `{"model":"reasoner","stream":true,"messages":[{"role":"user","content":"hi"}]}`, bearer)
		var thought, answer strings.Builder
		for _, ev := range readEvents(t, body) {
			var ch struct {
				Choices []struct {
					Delta struct {
						Content          string `json:"content"`
						ReasoningContent string `json:"reasoning_content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if ev.Data == "[DONE]" || json.Unmarshal([]byte(ev.Data), &ch) != nil || len(ch.Choices) == 0 {
				continue
			}
			if answer.Len() > 0 && ch.Choices[0].Delta.ReasoningContent != "" {
				t.Errorf("reasoning after the answer began: %s", ev.Data)
			}
			thought.WriteString(ch.Choices[0].Delta.ReasoningContent)
			answer.WriteString(ch.Choices[0].Delta.Content)
		}
		if res.StatusCode != 200 || thought.String() != upstreamThought || answer.String() != upstreamAnswer {
			t.Errorf("streamed: %d reasoning %q answer %q", res.StatusCode, thought.String(), answer.String())
		}
		if e := up.lastEffort(); e != "" {
			t.Errorf("effort upstream = %q, want none sent", e)
		}
	})

	t.Run("anthropic", func(t *testing.T) {
		ask := func(thinking string, stream bool) []byte {
			body := fmt.Sprintf(`{"model":"claude-think-1","max_tokens":64000,"stream":%t,%s"messages":[{"role":"user","content":"hi"}]}`, stream, thinking)
			res, out := s.postRaw(t, "/v1/messages", body, anthropicHdr)
			if res.StatusCode != 200 {
				t.Fatalf("%s: %d %s", body, res.StatusCode, out)
			}
			return out
		}
		var m struct {
			Content []struct {
				Type, Text, Thinking, Signature string
			} `json:"content"`
		}
		if err := json.Unmarshal(ask(`"thinking":{"type":"adaptive"},"output_config":{"effort":"max"},`, false), &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Content) != 2 || m.Content[0].Type != "thinking" || m.Content[0].Thinking != upstreamThought || m.Content[0].Signature == "" ||
			m.Content[1].Type != "text" || m.Content[1].Text != upstreamAnswer {
			t.Errorf("with thinking: %+v", m.Content)
		}
		if e := up.lastEffort(); e != "high" {
			t.Errorf("effort upstream = %q, want high (max as the upstream takes it)", e)
		}
		if err := json.Unmarshal(ask("", false), &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Content) != 1 || m.Content[0].Type != "text" {
			t.Errorf("without thinking asked for, the reasoning is not shown: %+v", m.Content)
		}
		// Streamed: a thinking block (deltas, then its signature), then the text block.
		var seq []string
		for _, ev := range readEvents(t, ask(`"thinking":{"type":"enabled","budget_tokens":2048},`, true)) {
			var e struct {
				Type         string `json:"type"`
				Index        int    `json:"index"`
				ContentBlock struct {
					Type string `json:"type"`
				} `json:"content_block"`
				Delta struct {
					Type string `json:"type"`
				} `json:"delta"`
			}
			_ = json.Unmarshal([]byte(ev.Data), &e)
			switch e.Type {
			case "content_block_start":
				seq = append(seq, fmt.Sprintf("start %d %s", e.Index, e.ContentBlock.Type))
			case "content_block_delta":
				if d := fmt.Sprintf("%d %s", e.Index, e.Delta.Type); len(seq) == 0 || seq[len(seq)-1] != d {
					seq = append(seq, d)
				}
			case "content_block_stop":
				seq = append(seq, fmt.Sprintf("stop %d", e.Index))
			}
		}
		want := "start 0 thinking|0 thinking_delta|0 signature_delta|stop 0|start 1 text|1 text_delta|stop 1"
		if got := strings.Join(seq, "|"); got != want {
			t.Errorf("streamed blocks:\n got %s\nwant %s", got, want)
		}
	})

	t.Run("responses", func(t *testing.T) {
		res, body := s.postRaw(t, "/v1/responses", `{"model":"reasoner","reasoning":{"effort":"high","summary":"auto"},"input":"hi"}`, bearer)
		var r struct {
			ID     string `json:"id"`
			Output []struct {
				Type    string `json:"type"`
				ID      string `json:"id"`
				Content []struct {
					Type, Text string
				} `json:"content"`
			} `json:"output"`
			Reasoning struct {
				Effort string `json:"effort"`
			} `json:"reasoning"`
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &r) != nil {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		check := func(what string) {
			if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || !strings.HasPrefix(r.Output[0].ID, "rs_") ||
				len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Type != "reasoning_text" || r.Output[0].Content[0].Text != upstreamThought ||
				r.Output[1].Type != "message" || r.Output[1].Content[0].Text != upstreamAnswer {
				t.Errorf("%s: output %s", what, body)
			}
		}
		check("created")
		if r.Reasoning.Effort != "high" || up.lastEffort() != "high" {
			t.Errorf("effort echoed %q, upstream %q", r.Reasoning.Effort, up.lastEffort())
		}
		res, body = s.getRaw(t, "/v1/responses/"+r.ID, bearer)
		if res.StatusCode != 200 || json.Unmarshal(body, &r) != nil {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		check("retrieved")
		// The reasoning item sent back, as Codex does, is accepted and the
		// chain continues.
		next := fmt.Sprintf(`{"model":"reasoner","previous_response_id":%q,"input":[{"type":"reasoning","id":%q,"summary":[],"encrypted_content":null},{"role":"user","content":"and?"}]}`, r.ID, r.Output[0].ID)
		if res, body := s.postRaw(t, "/v1/responses", next, bearer); res.StatusCode != 200 {
			t.Errorf("a reasoning item in the input: %d %s", res.StatusCode, body)
		}
		if res, body := s.postRaw(t, "/v1/responses", `{"model":"reasoner","input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`, bearer); res.StatusCode != 400 || !strings.Contains(string(body), "only reasoning items") {
			t.Errorf("input of reasoning items only: %d %s", res.StatusCode, body)
		}
		// Streamed: the reasoning item's events, then the message's.
		res, body = s.postRaw(t, "/v1/responses", `{"model":"reasoner","stream":true,"input":"hi"}`, bearer)
		var thought strings.Builder
		var types []string
		for _, ev := range readEvents(t, body) {
			var e struct {
				Type  string `json:"type"`
				Delta string `json:"delta"`
			}
			_ = json.Unmarshal([]byte(ev.Data), &e)
			if e.Type == "response.reasoning_text.delta" {
				thought.WriteString(e.Delta)
			}
			if len(types) == 0 || types[len(types)-1] != e.Type {
				types = append(types, e.Type)
			}
		}
		if thought.String() != upstreamThought {
			t.Errorf("streamed reasoning %q (events %v)", thought.String(), types)
		}
		if got := strings.Join(types, " "); !strings.Contains(got, "response.output_item.added response.content_part.added response.reasoning_text.delta response.output_item.added") ||
			!strings.Contains(got, "response.reasoning_text.done response.content_part.done response.output_item.done") {
			t.Errorf("event order: %s", got)
		}
	})
}

// The catalog's capabilities decide what a model is asked: tools and a JSON
// format are refused by name for a model without them; a reasoning effort
// is a hint to a model that does not reason (not sent upstream). The
// models listings report them, in OpenAI's shape or Anthropic's.
func TestModelCapabilities(t *testing.T) {
	s, up, a := reasoningStack(t)
	bearer := map[string]string{"Authorization": "Bearer " + a.Key}
	for _, c := range []struct{ body, field string }{
		{`{"model":"textonly","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`, "tools"},
		{`{"model":"textonly","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`, "response_format"},
		{`{"model":"reasoner","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"huge"}`, "reasoning_effort"},
	} {
		res, body := s.postRaw(t, "/v1/chat/completions", c.body, bearer)
		if res.StatusCode != 400 || !strings.Contains(string(body), `"param":"`+c.field+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, res.StatusCode, body, c.field)
		}
	}
	res, body := s.postRaw(t, "/v1/messages", `{"model":"textonly","max_tokens":100,"messages":[{"role":"user","content":"hi"}],
		"tools":[`+anthropicWeather+`]}`, map[string]string{"x-api-key": a.Key, "anthropic-version": "2023-06-01"})
	if res.StatusCode != 400 || !strings.Contains(string(body), "tools") || !strings.Contains(string(body), "invalid_request_error") {
		t.Errorf("anthropic tools to textonly: %d %s", res.StatusCode, body)
	}
	res, body = s.postRaw(t, "/v1/chat/completions", `{"model":"textonly","reasoning_effort":"high","messages":[{"role":"user","content":"hi"}]}`, bearer)
	if res.StatusCode != 200 || up.lastEffort() != "" {
		t.Errorf("effort to a model that does not reason: %d %s, upstream got %q", res.StatusCode, body, up.lastEffort())
	}

	res, body = s.getRaw(t, "/v1/models/claude-think-1", bearer)
	var m struct {
		ID            string   `json:"id"`
		ContextWindow int64    `json:"context_window"`
		Capabilities  []string `json:"capabilities"`
	}
	if res.StatusCode != 200 || json.Unmarshal(body, &m) != nil || m.ID != "reasoner" || m.ContextWindow != 32768 ||
		strings.Join(m.Capabilities, ",") != "reasoning,structured_output,tools" {
		t.Errorf("/v1/models/{alias}: %d %s", res.StatusCode, body)
	}
	res, body = s.getRaw(t, "/v1/models", map[string]string{"x-api-key": a.Key, "anthropic-version": "2023-06-01"})
	var list struct {
		Data []struct {
			Type, ID, DisplayName string
			MaxTokens             int64 `json:"max_tokens"`
		} `json:"data"`
		HasMore *bool   `json:"has_more"`
		FirstID *string `json:"first_id"`
	}
	if res.StatusCode != 200 || json.Unmarshal(body, &list) != nil || len(list.Data) != 2 || list.Data[0].Type != "model" ||
		list.Data[0].ID != "reasoner" || list.Data[0].MaxTokens != 4096 || list.HasMore == nil || *list.HasMore || list.FirstID == nil {
		t.Errorf("Anthropic's models list: %d %s", res.StatusCode, body)
	}
}

// With --openai-unsupported=drop, what was dropped is named in a response
// header (and counted), so the client can see it was not honoured.
func TestDroppedFieldsNamedInAHeader(t *testing.T) {
	s := startServer(t, append(fastAuth, "--openai-unsupported", "drop")...)
	a := s.newAccount(t, "dropped@example.com")
	s.topup(t, a, "1")
	res, body := s.postRaw(t, "/v1/responses", `{"model":"sim-small","max_output_tokens":5,"input":"hi","tools":[{"type":"web_search"}],"top_logprobs":3}`,
		map[string]string{"Authorization": "Bearer " + a.Key})
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if got := strings.Join(res.Header.Values("Parley-Dropped-Fields"), ","); got != "top_logprobs,tools" {
		t.Errorf("Parley-Dropped-Fields: %q, want top_logprobs,tools", got)
	}
	res, _ = s.postRaw(t, "/v1/chat/completions", `{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Authorization": "Bearer " + a.Key})
	if v := res.Header.Values("Parley-Dropped-Fields"); len(v) != 0 {
		t.Errorf("nothing dropped, yet the header says %v", v)
	}
}

// The official anthropic and openai Python SDKs parse the reasoning
// (openai-py/test_reasoning.py): thinking blocks, whole and streamed;
// Responses reasoning items; reasoning_content on chat completions.
func TestReasoningThroughPythonSDKs(t *testing.T) {
	dir, _ := filepath.Abs("openai-py")
	python := filepath.Join(dir, ".venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the OpenAI Python SDK is not installed: .ci/run must create server/e2e/openai-py/.venv")
		}
		t.Skip("run `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt` in server/e2e/openai-py")
	}
	s, _, a := reasoningStack(t)
	cmd := exec.Command(python, "-m", "pytest", "-q", "-rs", "test_reasoning.py")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PARLEY_URL="+s.BaseURL, "PARLEY_KEY="+a.Key, "PARLEY_BROKE_KEY="+a.Key,
		"PARLEY_REASONING_MODEL=reasoner", "PARLEY_REASONING_THOUGHT="+upstreamThought, "PARLEY_REASONING_ANSWER="+upstreamAnswer)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "passed") || strings.Contains(string(out), "skipped") {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// getRaw sends a GET to path with the given headers and returns the answer.
func (s *server) getRaw(t *testing.T, path string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.BaseURL+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}
