package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"
)

// MockConfig shapes the mock upstream's answers.
type MockConfig struct {
	// Model is the one model it lists and answers for (default "mock").
	Model string
	// TokenDelay is the wait before each token, the first included.
	TokenDelay time.Duration
	// Tokens is how many tokens an answer has (fewer when max_tokens says so).
	Tokens int
}

// mockWords are the mock's tokens: common words, one o200k token each, so
// the worker's tokenizer counts what a real answer would make it count.
var mockWords = []string{" the", " rabbit", " took", " a", " watch", " out", " of", " its", " waistcoat", " pocket",
	" and", " looked", " at", " it", ",", " then", " hurried", " on", ".", " Alice"}

// mockPace is the directive a prompt may carry to set its own pace, so one
// mock serves both the load runs and the open-stream runs:
// "mock-pace delay=1s tokens=1000".
var mockPace = regexp.MustCompile(`mock-pace delay=([0-9a-zµ.]+) tokens=([0-9]+)`)

// Mock is an OpenAI-compatible inference server that streams canned tokens
// at a set pace, as vLLM does (a role chunk, one chunk per token, a finish
// chunk, a usage chunk with stream_options.include_usage, [DONE]). It has
// no /metrics, so a worker learns nothing of its slots from it.
type Mock struct {
	cfg  MockConfig
	seq  atomic.Int64
	open atomic.Int64
}

// NewMock returns a mock upstream for cfg.
func NewMock(cfg MockConfig) *Mock {
	if cfg.Model == "" {
		cfg.Model = "mock"
	}
	if cfg.Tokens <= 0 {
		cfg.Tokens = 50
	}
	return &Mock{cfg: cfg}
}

// Open is the number of answers streaming now.
func (m *Mock) Open() int64 { return m.open.Load() }

// ServeHTTP serves GET /v1/models and POST /v1/chat/completions.
func (m *Mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"mock"}]}`, m.cfg.Model)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		m.complete(w, r)
	default:
		http.NotFound(w, r)
	}
}

type mockRequest struct {
	Model     string `json:"model"`
	Stream    bool   `json:"stream"`
	MaxTokens int    `json:"max_tokens"`
	Messages  []struct {
		Content any `json:"content"`
	} `json:"messages"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (m *Mock) complete(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req mockRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	if req.Model != m.cfg.Model {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"message":"model %q does not exist","type":"invalid_request_error"}}`, req.Model)
		return
	}
	delay, tokens := m.cfg.TokenDelay, m.cfg.Tokens
	if p := mockPace.FindSubmatch(body); p != nil {
		if d, err := time.ParseDuration(string(p[1])); err == nil {
			delay = d
		}
		if n, err := strconv.Atoi(string(p[2])); err == nil && n > 0 {
			tokens = n
		}
	}
	finish := "stop"
	if req.MaxTokens > 0 && req.MaxTokens < tokens {
		tokens, finish = req.MaxTokens, "length"
	}
	m.open.Add(1)
	defer m.open.Add(-1)
	id := "chatcmpl-mock" + strconv.FormatInt(m.seq.Add(1), 10)
	created := time.Now().Unix()
	prompt := len(body) / 4
	if !req.Stream {
		var text []byte
		for i := range tokens {
			if !sleep(r.Context(), delay) {
				return
			}
			text = append(text, mockWords[i%len(mockWords)]...)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":%d,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`,
			id, created, req.Model, text, finish, prompt, prompt+tokens, tokens)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	head := fmt.Appendf(nil, `data: {"id":%q,"object":"chat.completion.chunk","created":%d,"model":%q,"choices":[{"index":0,"delta":`, id, created, req.Model)
	var buf []byte
	send := func(delta, finish string) bool {
		buf = append(buf[:0], head...)
		buf = append(buf, delta...)
		buf = append(buf, `,"logprobs":null,"finish_reason":`...)
		buf = append(buf, finish...)
		buf = append(buf, "}]}\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(`{"role":"assistant","content":""}`, "null") {
		return
	}
	for i := range tokens {
		if !sleep(r.Context(), delay) {
			return
		}
		word := mockWords[i%len(mockWords)]
		if !send(`{"content":"`+word+`"}`, "null") {
			return
		}
	}
	if !send(`{}`, `"`+finish+`"`) {
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":%d,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n",
			id, created, req.Model, prompt, prompt+tokens, tokens)
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// RunMock serves a mock upstream on listen until ctx ends, logging
// "listening on http://ADDR" when ready, as parley serve does.
func RunMock(ctx context.Context, listen string, cfg MockConfig, logger *slog.Logger) error {
	return serveUntil(ctx, listen, NewMock(cfg), logger, "token_delay", cfg.TokenDelay.String(), "tokens", cfg.Tokens)
}

// serveUntil serves h on listen until ctx ends, logging "listening on
// http://ADDR" (with attrs) when ready, which the relay benchmark waits for.
func serveUntil(ctx context.Context, listen string, h http.Handler, logger *slog.Logger, attrs ...any) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	logger.Info("listening on http://"+ln.Addr().String(), attrs...)
	if err := srv.Serve(ln); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
