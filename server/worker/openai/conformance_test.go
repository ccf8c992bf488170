package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/server/worker/enginetest"
	"github.com/parleyhq/parley/server/worker/openai"
)

// serverUpstream makes the fake upstream behave as an inference server:
// a fixed number of slots with a queue beyond them, a token every few
// milliseconds picked from the prompt's hash (so a request gives the same
// answer twice), max_tokens, stop strings, log probabilities and usage, and
// its load on /metrics (SGLang's names) from its own counters.
type serverUpstream struct {
	*fakeUpstream
	slots   chan struct{}
	mu      sync.Mutex
	busy    int // requests holding a slot
	waiting int // requests queued for one
}

var fakeWords = strings.Fields("the river runs past old stones and quiet fields while a heron waits under grey clouds for fish")

func newServerUpstream(t *testing.T, slots int, perToken time.Duration) *serverUpstream {
	s := &serverUpstream{slots: make(chan struct{}, slots)}
	s.fakeUpstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request) { s.chat(w, r, perToken) })
	s.metricsFunc = func() string {
		busy, waiting := s.probe()
		return fmt.Sprintf("sglang:num_running_reqs{model_name=\"llama-3-8b\"} %d\nsglang:num_queue_reqs{model_name=\"llama-3-8b\"} %d\nsglang:max_running_requests{model_name=\"llama-3-8b\"} %d\n",
			busy, waiting, slots)
	}
	return s
}

func (s *serverUpstream) probe() (busy, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy, s.waiting
}

func (s *serverUpstream) add(busy, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy += busy
	s.waiting += waiting
}

type fakeChatRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxTokens int      `json:"max_tokens"`
	Stop      []string `json:"stop"`
	Logprobs  bool     `json:"logprobs"`
}

func (s *serverUpstream) chat(w http.ResponseWriter, r *http.Request, perToken time.Duration) {
	var req fakeChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.add(0, 1)
	select {
	case s.slots <- struct{}{}:
		s.add(1, -1)
	case <-r.Context().Done():
		s.add(0, -1)
		return
	}
	defer func() { <-s.slots; s.add(-1, 0) }()

	h := fnv.New64a()
	prompt := 0
	for _, m := range req.Messages {
		_, _ = h.Write(m.Content)
		prompt += 4 + len(strings.Fields(string(m.Content)))
	}
	seed := h.Sum64()
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = 256
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		w.(http.Flusher).Flush()
		return true
	}
	chunk := func(text string, finish any) map[string]any {
		choice := map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": finish}
		if req.Logprobs && text != "" {
			choice["logprobs"] = map[string]any{"content": []any{map[string]any{"token": text, "logprob": -0.5, "bytes": utf8Ints(text)}}}
		}
		return map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "llama-3-8b", "choices": []any{choice}}
	}
	var text strings.Builder
	n, finish := 0, "length"
	for n < maxTokens {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(perToken):
		}
		tok := " " + fakeWords[(seed+uint64(n)*2654435761)%uint64(len(fakeWords))]
		next := text.String() + tok
		if i := firstStop(next, req.Stop); i >= 0 {
			if rest := next[text.Len():max(i, text.Len())]; rest != "" {
				n++
				if !send(chunk(rest, nil)) {
					return
				}
			}
			finish = "stop"
			break
		}
		text.WriteString(tok)
		n++
		if !send(chunk(tok, nil)) {
			return
		}
	}
	send(chunk("", finish))
	send(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "llama-3-8b", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": n, "total_tokens": prompt + n}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func firstStop(text string, stops []string) int {
	best := -1
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

// The openai engine against the fake upstream passes the conformance suite.
func TestConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Target {
		u := newServerUpstream(t, 2, 5*time.Millisecond)
		e := newEngine(t, u.fakeUpstream, openai.Config{MetricsInterval: 5 * time.Millisecond})
		return enginetest.Target{
			Engine: e, Model: "llama-3-8b", Slots: 2, AcceptsImages: true, LongTokens: 200,
			Probe: func(context.Context) (int, int, error) {
				busy, waiting := u.probe()
				return busy, waiting, nil
			},
			Upstream: u.URL,
			Connect: func(t *testing.T, baseURL string, firstByte time.Duration) worker.Engine {
				e, err := openai.New(t.Context(), openai.Config{BaseURL: baseURL + "/v1", Models: []string{"llama-3-8b"},
					MaxBatch: 2, MetricsURL: "-", FirstByteTimeout: firstByte})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(e.Close)
				return e
			},
		}
	})
}

func utf8Ints(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}
