package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/server/worker/openai"
)

// fakeUpstream is an OpenAI-compatible server the test scripts.
type fakeUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []map[string]any
	chat    http.HandlerFunc
	metrics string // served at /metrics; "" → 404
	// metricsFunc, when set before the first request, writes /metrics instead.
	metricsFunc func() string
	// served counts the requests each client connection (by remote
	// address) has carried.
	served map[string]int
	// mux routes the requests; tests add handlers to it.
	mux *http.ServeMux
}

func newUpstream(t *testing.T, chat http.HandlerFunc) *fakeUpstream {
	u := &fakeUpstream{chat: chat, served: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		r.Body = io.NopCloser(bytes.NewReader(data)) // the chat handler may read it too
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.mu.Unlock()
		u.chat(w, r)
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"llama-3-8b","object":"model"}]}`)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if u.metricsFunc != nil {
			fmt.Fprint(w, u.metricsFunc())
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.metrics == "" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, u.metrics)
	})
	u.mux = mux
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.served[r.RemoteAddr]++
		u.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *fakeUpstream) lastBody() map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bodies[len(u.bodies)-1]
}

// stream writes chunks as SSE events, flushing each.
func stream(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

func delta(text string) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":"llama-3-8b","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, text)
}

func finish(reason string) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":"llama-3-8b","choices":[{"index":0,"delta":{},"finish_reason":%q}]}`, reason)
}

const usageChunk = `{"id":"c1","object":"chat.completion.chunk","model":"llama-3-8b","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":3,"total_tokens":45,"prompt_tokens_details":{"cached_tokens":32}}}`

func newEngine(t *testing.T, u *fakeUpstream, cfg openai.Config) *openai.Engine {
	t.Helper()
	cfg.BaseURL = u.URL + "/v1"
	if cfg.MetricsInterval == 0 {
		cfg.MetricsInterval = 10 * time.Millisecond
	}
	e, err := openai.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func request(parts ...llm.Part) llm.Request {
	if len(parts) == 0 {
		parts = []llm.Part{{Text: "Say hello."}}
	}
	return llm.Request{ID: "r1", Model: "llama-3-8b", MaxTokens: 16, Messages: []llm.ChatMessage{
		{Role: "system", Parts: []llm.Part{{Text: "Be brief."}}},
		{Role: "user", Parts: parts},
	}}
}

func collect(text *strings.Builder) func(llm.Delta) error {
	return func(d llm.Delta) error { text.WriteString(d.Text); return nil }
}

func TestDeltasAndUsage(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		stream(w, delta("Hello"), delta(","), delta(" world"), finish("length"), usageChunk, "[DONE]")
	})
	e := newEngine(t, u, openai.Config{APIKey: "sk-test"})
	if ms := e.Models(); len(ms) != 1 || ms[0].ID != "llama-3-8b" {
		t.Fatalf("models from /v1/models = %+v", ms)
	}
	var text strings.Builder
	res, err := e.Generate(context.Background(), new(request(
		llm.Part{Text: "Describe this."},
		llm.Part{Image: &llm.Image{Data: []byte("PNGDATA"), MimeType: "image/png"}},
		llm.Part{Document: &llm.Document{Filename: "notes.txt", Text: "the notes"}},
	)), collect(&text))
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != "Hello, world" {
		t.Errorf("text = %q", text.String())
	}
	want := llm.Result{FinishReason: llm.FinishLength, Usage: llm.Usage{PromptTokens: 42, CompletionTokens: 3, CachedTokens: 32}}
	if res != want {
		t.Errorf("result = %+v, want %+v", res, want)
	}
	body := u.lastBody()
	if body["stream"] != true || body["stream_options"].(map[string]any)["include_usage"] != true || body["max_tokens"] != float64(16) {
		t.Errorf("request body = %v", body)
	}
	msgs := body["messages"].([]any)
	if sys := msgs[0].(map[string]any); sys["content"] != "Be brief." {
		t.Errorf("text-only message = %v, want a plain string", sys)
	}
	parts := msgs[1].(map[string]any)["content"].([]any)
	img := parts[1].(map[string]any)
	if img["type"] != "image_url" || img["image_url"].(map[string]any)["url"] != "data:image/png;base64,UE5HREFUQQ==" {
		t.Errorf("image part = %v", img)
	}
	if doc := parts[2].(map[string]any); doc["type"] != "text" || !strings.Contains(doc["text"].(string), "the notes") {
		t.Errorf("document part = %v", doc)
	}
}

func TestNoUsageIsEstimated(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		stream(w, delta("Hello"), delta(" there, friend"), finish("stop"), "[DONE]")
	})
	e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}})
	res, err := e.Generate(context.Background(), new(request()), func(llm.Delta) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != llm.FinishStop || !res.Usage.Estimated || res.Usage.PromptTokens < 5 || res.Usage.CompletionTokens != 4 {
		t.Errorf("result = %+v, want stop with estimated usage (4 completion tokens)", res)
	}
}

func TestUpstreamRefusals(t *testing.T) {
	cases := []struct {
		status   int
		body     string
		sentinel error
	}{
		{400, `{"error":{"message":"max_tokens is too large","type":"invalid_request_error","code":400}}`, llm.ErrInvalidRequest},
		{404, `{"error":{"message":"model not found","type":"not_found"}}`, llm.ErrUnknownModel},
		{429, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`, llm.ErrOverloaded},
		{500, `Internal Server Error`, nil},
		// llama.cpp's answer to an image for a model without a vision projector.
		{500, `{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}`, llm.ErrInvalidRequest},
		{503, `{"error":{"message":"engine dead"}}`, nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			})
			e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}})
			_, err := e.Generate(context.Background(), new(request()), func(llm.Delta) error { return nil })
			var ue *worker.UpstreamError
			want := c.status
			if c.status >= 500 && c.sentinel != nil {
				want = http.StatusBadRequest // an input the model cannot take
			}
			if !errors.As(err, &ue) || ue.Status != want || ue.Message == "" {
				t.Fatalf("err = %v, want an UpstreamError with status %d and a message", err, want)
			}
			if c.sentinel != nil && !errors.Is(err, c.sentinel) {
				t.Errorf("%v does not match %v", err, c.sentinel)
			}
			if c.sentinel == nil && (llm.CallerFault(err) || errors.Is(err, llm.ErrOverloaded)) {
				t.Errorf("%v taken for the caller's fault or overload", err)
			}
			if c.status == 429 && ue.RetryAfter != 7*time.Second {
				t.Errorf("retry-after = %v", ue.RetryAfter)
			}
		})
	}
}

func TestSlowUpstream(t *testing.T) {
	t.Run("no response", func(t *testing.T) {
		u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}, FirstByteTimeout: 50 * time.Millisecond})
		start := time.Now()
		_, err := e.Generate(context.Background(), new(request()), func(llm.Delta) error { return nil })
		if !errors.Is(err, llm.ErrUpstreamTimeout) {
			t.Fatalf("err = %v, want ErrUpstreamTimeout", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("stalls midway", func(t *testing.T) {
		u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			stream(w, delta("Hello"))
			<-r.Context().Done()
		})
		e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}, IdleTimeout: 50 * time.Millisecond})
		res, err := e.Generate(context.Background(), new(request()), func(llm.Delta) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != llm.FinishError || !errors.Is(res.Err, llm.ErrUpstreamTimeout) || res.Usage.CompletionTokens != 1 {
			t.Errorf("result = %+v, want finish error by timeout with the usage so far", res)
		}
	})
}

func TestCancellationClosesUpstream(t *testing.T) {
	upstreamDone := make(chan time.Time, 1)
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		stream(w, delta("Hello"))
		<-r.Context().Done()
		upstreamDone <- time.Now()
	})
	e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancelledAt := make(chan time.Time, 1)
	resc := make(chan llm.Result, 1)
	go func() {
		res, _ := e.Generate(ctx, new(request()), func(llm.Delta) error {
			cancelledAt <- time.Now()
			cancel()
			return nil
		})
		resc <- res
	}()
	select {
	case at := <-upstreamDone:
		if d := at.Sub(<-cancelledAt); d > 100*time.Millisecond {
			t.Errorf("upstream saw the cancellation after %v, want under 100 ms", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the upstream request was not closed")
	}
	if res := <-resc; res.FinishReason != llm.FinishCancelled || res.Usage.CompletionTokens != 1 {
		t.Errorf("result = %+v, want cancelled with the usage so far", res)
	}

	// An emit failure (the client went away) closes it too.
	_, _ = e.Generate(context.Background(), new(request()), func(llm.Delta) error { return io.ErrClosedPipe })
	select {
	case <-upstreamDone:
	case <-time.After(time.Second):
		t.Fatal("the upstream request was not closed after emit failed")
	}
}

func TestLoadFromMetrics(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	u.metrics = `# HELP vllm:num_requests_running Number of requests running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="llama-3-8b"} 5.0
vllm:num_requests_waiting{model_name="llama-3-8b"} 2.0
vllm:gpu_cache_usage_perc{model_name="llama-3-8b"} 0.25
vllm:other_thing 99
`
	e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}, MaxBatch: 64})
	deadline := time.Now().Add(5 * time.Second)
	for e.Load().Running != 5 && time.Now().Before(deadline) {
		<-e.LoadChanged()
	}
	got := e.Load()
	if got.Running != 5 || got.Waiting != 2 || got.KVUsedTokens*4 != got.KVCapacityTokens || got.MaxBatch != 64 {
		t.Errorf("vLLM load = %+v", got)
	}

	u2 := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	u2.metrics = "sglang:num_running_reqs{model_name=\"m\"} 3\nsglang:num_queue_reqs{model_name=\"m\"} 4\nsglang:token_usage{model_name=\"m\"} 0.5\n"
	e2 := newEngine(t, u2, openai.Config{Models: []string{"m"}})
	deadline = time.Now().Add(5 * time.Second)
	for e2.Load().Running != 3 && time.Now().Before(deadline) {
		<-e2.LoadChanged()
	}
	if got := e2.Load(); got.Running != 3 || got.Waiting != 4 || got.KVUsedTokens*2 != got.KVCapacityTokens {
		t.Errorf("SGLang load = %+v", got)
	}
}

func TestLoadWithoutMetricsCountsInFlight(t *testing.T) {
	release := make(chan struct{})
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		stream(w, delta("a"))
		<-release
		stream(w, finish("stop"), "[DONE]")
	})
	e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}})
	started := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			_, _ = e.Generate(context.Background(), new(request()), func(llm.Delta) error { once.Do(func() { started <- struct{}{} }); return nil })
		}()
	}
	<-started
	<-started
	if got := e.Load(); got.Running != 2 || got.InFlight != 2 {
		t.Errorf("load = %+v, want 2 in flight", got)
	}
	close(release)
	wg.Wait()
	if got := e.Load(); got.InFlight != 0 {
		t.Errorf("load after = %+v", got)
	}
}

func TestUnknownModel(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}})
	if _, err := e.Generate(context.Background(), new(llm.Request{Model: "gpt-9", Messages: request().Messages}), nil); !errors.Is(err, llm.ErrUnknownModel) {
		t.Errorf("err = %v", err)
	}
}

// The engine learns its upstream's slots where the server tells them
// (llama.cpp's /props, TGI's /info, SGLang's /get_server_info); --max-batch
// wins; a server that tells none leaves MaxBatch 0.
func TestLearnsUpstreamSlots(t *testing.T) {
	for _, tc := range []struct {
		path, body string
		cfg        int
		want       int
	}{
		{"GET /props", `{"total_slots":4,"default_generation_settings":{"n_ctx":4096}}`, 0, 4},
		{"GET /info", `{"model_id":"m","max_concurrent_requests":128}`, 0, 128},
		{"GET /get_server_info", `{"max_running_requests":48}`, 0, 48},
		{"GET /get_server_info", `{"max_running_requests":null}`, 0, 0},
		{"GET /props", `{"total_slots":4}`, 16, 16},
		{"", "", 0, 0},
	} {
		u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
		if tc.path != "" {
			u.mux.HandleFunc(tc.path, func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, tc.body)
			})
		}
		e := newEngine(t, u, openai.Config{Models: []string{"m"}, MaxBatch: tc.cfg, MetricsURL: "-"})
		if got := e.Load().MaxBatch; got != tc.want {
			t.Errorf("%s %s (--max-batch %d): MaxBatch %d, want %d", tc.path, tc.body, tc.cfg, got, tc.want)
		}
	}
}

// Chunks that arrive together go on as one delta; a chunk with nothing
// behind it goes on at once, never waiting for the next.
func TestQueuedChunksCoalesceWithoutDelay(t *testing.T) {
	emitted := make(chan string, 16)
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		// Three chunks in one write: already waiting when the first is read.
		fmt.Fprintf(w, "data: %s\n\ndata: %s\n\ndata: %s\n\n", delta("Hello"), delta(","), delta(" world"))
		w.(http.Flusher).Flush()
		// The next only once that text was passed on: were the worker
		// holding it for more, this would never come.
		select {
		case <-emitted:
		case <-time.After(5 * time.Second):
			return
		}
		stream(w, delta("!"))
		select {
		case <-emitted:
		case <-time.After(5 * time.Second):
			return
		}
		stream(w, finish("stop"), usageChunk, "[DONE]")
	})
	e := newEngine(t, u, openai.Config{Models: []string{"llama-3-8b"}, MetricsURL: "-"})
	var texts []string
	tokens := 0
	res, err := e.Generate(context.Background(), new(request()), func(d llm.Delta) error {
		texts = append(texts, d.Text)
		tokens += d.Tokens
		emitted <- d.Text
		return nil
	})
	if err != nil || res.FinishReason != llm.FinishStop {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if fmt.Sprint(texts) != "[Hello, world !]" || tokens != 4 {
		t.Errorf("deltas %q (%d tokens), want [\"Hello, world\" \"!\"] (4 tokens)", texts, tokens)
	}
}

// An upstream may close a kept-alive connection just as a request goes out
// on it (llama.cpp's server closes idle ones after 5 s; CI caught the EOF):
// the request is sent again on a new connection, not failed. The upstream
// here drops the first chat request that arrives on a reused connection
// after reading it, without answering.
func TestRetriedWhenAKeptAliveConnectionCloses(t *testing.T) {
	dropped := 0
	var u *fakeUpstream
	u = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		drop := u.served[r.RemoteAddr] > 1 && dropped == 0
		if drop {
			dropped++
		}
		u.mu.Unlock()
		if drop {
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			c.Close()
			return
		}
		if _, sent := r.Header["Idempotency-Key"]; sent {
			t.Error("the replayable mark went out as a header")
		}
		stream(w, delta("Hello"), finish("stop"), usageChunk)
	})
	e := newEngine(t, u, openai.Config{MetricsURL: "-"})
	for i := range 4 {
		var text strings.Builder
		res, err := e.Generate(context.Background(), new(request()), collect(&text))
		if err != nil || res.FinishReason != llm.FinishStop || text.String() != "Hello" {
			t.Fatalf("request %d: %v, %+v, %q", i, err, res, text.String())
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if dropped != 1 {
		t.Fatalf("no request went out on a reused connection (%v): the case was not exercised", u.served)
	}
	if len(u.bodies) != 5 {
		t.Errorf("the upstream read %d chat requests, want 5: 4 and the one dropped", len(u.bodies))
	}
}

// reasoningDelta is a chunk of reasoning under the key a server uses
// (reasoning_content: SGLang, llama.cpp, older vLLM; reasoning: newer vLLM).
func reasoningDelta(key, text string) string {
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":"llama-3-8b","choices":[{"index":0,"delta":{%q:%q},"finish_reason":null}]}`, key, text)
}

// An upstream's reasoning reaches the gateway as reasoning deltas, apart
// from the answer and in order, under either key; a chunk with both
// reasoning and text is split, reasoning first; the reasoning effort is
// passed on as the upstream takes it.
func TestReasoningDeltas(t *testing.T) {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		t.Run(key, func(t *testing.T) {
			both := `{"id":"c1","object":"chat.completion.chunk","model":"llama-3-8b","choices":[{"index":0,"delta":{"` + key + `":" so, hi.","content":"Hi"},"finish_reason":null}]}`
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				stream(w, reasoningDelta(key, "The user greets me"), reasoningDelta(key, ","), both, delta(" there."), finish("stop"), usageChunk, "[DONE]")
			})
			e := newEngine(t, u, openai.Config{})
			var seq []string
			req := request()
			req.ReasoningEffort = "xhigh"
			if _, err := e.Generate(context.Background(), &req, func(d llm.Delta) error {
				switch {
				case d.Reasoning != "" && (d.Text != "" || len(d.ToolCalls) > 0):
					t.Errorf("a delta with reasoning and text: %+v", d)
				case d.Reasoning != "":
					if len(seq) > 0 && strings.HasPrefix(seq[len(seq)-1], "R:") {
						seq[len(seq)-1] += d.Reasoning // coalesced or not: the order is what counts
					} else {
						seq = append(seq, "R:"+d.Reasoning)
					}
				case d.Text != "":
					if len(seq) > 0 && strings.HasPrefix(seq[len(seq)-1], "T:") {
						seq[len(seq)-1] += d.Text
					} else {
						seq = append(seq, "T:"+d.Text)
					}
				}
				if d.Tokens <= 0 && (d.Text != "" || d.Reasoning != "") {
					t.Errorf("a delta of no tokens: %+v", d)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(seq, "|"); got != "R:The user greets me, so, hi.|T:Hi there." {
				t.Errorf("deltas = %q", got)
			}
			if got := u.lastBody()["reasoning_effort"]; got != "high" {
				t.Errorf("reasoning_effort sent upstream = %v, want high", got)
			}
		})
	}
}
