package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// slotUpstream is an OpenAI-style server with a fixed number of slots that
// queues the requests beyond them, as vLLM or llama.cpp do, and tells no one
// its slot count: no /metrics, no /slots.
func slotUpstream(t *testing.T, slots, tokens int, gap time.Duration) string {
	t.Helper()
	sem := make(chan struct{}, slots)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"relay-model","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-sem }()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range tokens {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"relay-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", i)
			fl.Flush()
			time.Sleep(gap)
		}
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"relay-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", tokens, tokens+9)
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/v1"
}

// A worker whose upstream tells no slot count: the gateway does not cap it
// at a small fixed number (200 concurrent streams, none refused) but admits
// by measured queueing — it logs once what it assumed and lowers its limit
// as the upstream's queue shows in the time to first token. The model the
// upstream serves is not in the catalog: served at the default price.
func TestUnknownCapacityThroughRelay(t *testing.T) {
	const slots, streams, rounds = 20, 200, 2
	up := slotUpstream(t, slots, 5, 20*time.Millisecond)
	w := startWorker(t, "--engine", "openai", "--upstream", up)
	s := startServer(t, append(fastAuth, "--workers", w.Addr(), "--unpriced-models", "default",
		"--unpriced-input-price", "100000000", "--unpriced-output-price", "200000000")...)
	a := s.newAccount(t, "relay@example.com")
	s.topup(t, a, "100")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.Logs(), "serving it at the default price") {
		if time.Now().After(deadline) {
			t.Fatal("the relay's model was not learned")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx := ctxTimeout(t, 120*time.Second)
	var mu sync.Mutex
	var ttfts []time.Duration
	var failed []string
	var wg sync.WaitGroup
	start := time.Now()
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				o := streamChatModel(ctx, s, a.Key, "relay-model", 5)
				mu.Lock()
				if !o.done || o.err != "" {
					failed = append(failed, fmt.Sprintf("HTTP %d %s", o.status, o.err))
				} else {
					ttfts = append(ttfts, o.first.Sub(o.start))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if len(failed) > 0 {
		t.Fatalf("%d of %d streams failed, first: %s", len(failed), streams*rounds, failed[0])
	}
	slices.Sort(ttfts)
	t.Logf("%d streams over %d upstream slots in %v: TTFT p50 %v, p99 %v", streams*rounds, slots, took,
		ttfts[len(ttfts)/2], ttfts[len(ttfts)*99/100])
	logs := s.Logs()
	if n := strings.Count(logs, "assuming no fixed cap"); n != 1 {
		t.Errorf("logged what it assumed %d times, want once", n)
	}
	limits := regexp.MustCompile(`admission limit lowered".*?"limit":(\d+)`).FindAllStringSubmatch(logs, -1)
	if len(limits) == 0 {
		t.Fatal("the upstream's queueing never lowered the admission limit")
	}
	var seq []string
	for _, m := range limits {
		seq = append(seq, m[1])
	}
	t.Logf("admission limit cuts: %s", strings.Join(seq, " → "))
	if strings.Contains(logs, "all workers are busy") {
		t.Error("requests were refused as busy")
	}
}

// streamChatModel is streamChat for any model.
func streamChatModel(ctx context.Context, s *server, key, model string, maxTokens int) outcome {
	return streamChatBody(ctx, s, key, fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"messages":[{"role":"user","content":"Tell me about the rabbit."}]}`, model, maxTokens))
}
