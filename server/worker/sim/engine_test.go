package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/server/worker"
)

// outcome is what one Generate call returned, with the deltas it emitted.
type outcome struct {
	res    llm.Result
	err    error
	deltas []string
	tokens int
}

func (o outcome) text() string { return strings.Join(o.deltas, "") }

// start runs Generate in the background; the channel yields its outcome.
func start(ctx context.Context, e *Engine, req llm.Request) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		var o outcome
		o.res, o.err = e.Generate(ctx, &req, func(d llm.Delta) error {
			text, tokens := d.Text, d.Tokens
			o.deltas = append(o.deltas, text)
			o.tokens += tokens
			return nil
		})
		ch <- o
	}()
	return ch
}

// generate runs one request to the end, playing the fake clock (if any) and
// returning the waits the engine asked for.
func generate(t *testing.T, e *Engine, clk *fakeClock, req llm.Request) (outcome, []time.Duration) {
	t.Helper()
	done := start(t.Context(), e, req)
	var waits []time.Duration
	for {
		if clk == nil {
			return <-done, nil
		}
		select {
		case o := <-done:
			return o, waits
		case w := <-clk.waits:
			clk.fire(w)
			waits = append(waits, w.d)
		case <-time.After(2 * time.Second):
			t.Fatal("generation stalled")
		}
	}
}

// drain plays the fake clock until the engine's scheduler has stopped.
func drain(t *testing.T, e *Engine, clk *fakeClock) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		busy := e.busy
		e.mu.Unlock()
		if !busy {
			return
		}
		select {
		case w := <-clk.waits:
			clk.fire(w)
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatal("the scheduler did not stop")
}

// waitLoad waits until the engine's load satisfies ok.
func waitLoad(t *testing.T, e *Engine, ok func(worker.LoadReport) bool) worker.LoadReport {
	t.Helper()
	timeout := time.After(2 * time.Second)
	for {
		ch := e.LoadChanged()
		if l := e.Load(); ok(l) {
			return l
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("load never got there: %+v", e.Load())
		}
	}
}

func userRequest(model, text string, seed int64) llm.Request {
	return llm.Request{
		Model:    model,
		Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: text}}}},
		Seed:     &seed,
	}
}

func TestModelsAreSimulated(t *testing.T) {
	models := New(Config{}).Models()
	if len(models) != 3 || models[0].ID != "sim-small" || models[1].ID != "sim-large" || models[2].ID != "sim-embed" {
		t.Fatalf("models = %+v", models)
	}
	for _, m := range models {
		if !m.Simulated || !strings.Contains(m.Description, "Simulated") || !strings.Contains(m.DisplayName, "simulated") {
			t.Errorf("%s is not labelled as simulated: %+v", m.ID, m)
		}
	}
}

func TestGenerateRejects(t *testing.T) {
	e := New(Config{})
	emit := func(llm.Delta) error { return nil }
	tests := []struct {
		req  llm.Request
		want error
	}{
		{userRequest("gpt-4o", "hi", 1), llm.ErrUnknownModel},
		{llm.Request{Model: "sim-small"}, llm.ErrInvalidRequest},
		{llm.Request{Model: "sim-small", MaxTokens: -1, Messages: userRequest("", "hi", 0).Messages}, llm.ErrInvalidRequest},
		{userRequest("sim-small", strings.Repeat("word ", ContextWindow), 1), llm.ErrInvalidRequest},
	}
	for _, tt := range tests {
		if _, err := e.Generate(t.Context(), &tt.req, emit); !errors.Is(err, tt.want) {
			t.Errorf("Generate = %v, want %v", err, tt.want)
		}
	}
}

func TestDeterministicText(t *testing.T) {
	e := New(Config{})
	a, _ := generate(t, e, nil, userRequest("sim-small", "Tell me a story.", 7))
	b, _ := generate(t, e, nil, userRequest("sim-small", "Tell me a story.", 7))
	c, _ := generate(t, e, nil, userRequest("sim-small", "Tell me a story.", 8))
	d, _ := generate(t, e, nil, userRequest("sim-large", "Tell me a story.", 7))
	f, _ := generate(t, e, nil, userRequest("sim-small", "Tell me another.", 7))
	for _, o := range []outcome{a, b, c, d, f} {
		if o.err != nil || o.res.FinishReason != llm.FinishStop {
			t.Fatalf("outcome %+v", o)
		}
	}
	if a.text() != b.text() {
		t.Fatalf("same seed and prompt, different text:\n%s\n---\n%s", a.text(), b.text())
	}
	for name, o := range map[string]outcome{"seed": c, "model": d, "prompt": f} {
		if o.text() == a.text() {
			t.Errorf("a different %s gave the same text", name)
		}
	}
	t.Logf("sample: %s", a.text())
}

func TestTextIsTokensAndUsageExact(t *testing.T) {
	e := New(Config{})
	tok := tokenize.Default()
	for seed := range int64(20) {
		o, _ := generate(t, e, nil, userRequest("sim-small", "Hello there", seed))
		text := o.text()
		if o.res.FinishReason != llm.FinishStop || !endsSentence(text) {
			t.Fatalf("seed %d: finish %q, text ends %q", seed, o.res.FinishReason, text[max(0, len(text)-10):])
		}
		if got, want := o.res.Usage.CompletionTokens, tok.Count(text); got != want || o.tokens != want {
			t.Fatalf("seed %d: completion tokens %d (emitted %d), tokenizer says %d", seed, got, o.tokens, want)
		}
		if want := tok.Count("<|user|>\nHello there\n<|assistant|>\n"); o.res.Usage.PromptTokens != want {
			t.Fatalf("prompt tokens %d, want %d", o.res.Usage.PromptTokens, want)
		}
		if len(o.deltas) != o.tokens {
			t.Fatalf("%d deltas for %d tokens: English text should be one token per delta", len(o.deltas), o.tokens)
		}
		for _, d := range o.deltas {
			if len(tok.Encode(d)) != 1 {
				t.Fatalf("delta %q is not one token", d)
			}
		}
	}
}

func TestMaxTokensAndStop(t *testing.T) {
	e := New(Config{})
	req := userRequest("sim-small", "Hello", 3)
	full, _ := generate(t, e, nil, req)

	req.MaxTokens = 5
	short, _ := generate(t, e, nil, req)
	if short.res.FinishReason != llm.FinishLength || short.res.Usage.CompletionTokens != 5 {
		t.Fatalf("max_tokens 5: %+v", short.res)
	}
	if !strings.HasPrefix(full.text(), short.text()) {
		t.Fatalf("%q is not a prefix of %q", short.text(), full.text())
	}

	words := strings.Fields(full.text())
	stop := " " + words[len(words)/2]
	req.MaxTokens = 0
	req.Stop = []string{"no such text", stop}
	stopped, _ := generate(t, e, nil, req)
	want := full.text()[:strings.Index(full.text(), stop)]
	if stopped.res.FinishReason != llm.FinishStop || stopped.text() != want {
		t.Fatalf("stop %q: %q (%s), want %q", stop, stopped.text(), stopped.res.FinishReason, want)
	}
}

func TestEmitErrorCancels(t *testing.T) {
	e := New(Config{})
	boom := errors.New("client went away")
	n := 0
	res, err := e.Generate(t.Context(), new(userRequest("sim-small", "Hi", 1)), func(llm.Delta) error {
		if n++; n == 3 {
			return boom
		}
		return nil
	})
	if err != nil || res.FinishReason != llm.FinishCancelled || !errors.Is(res.Err, boom) || res.Usage.CompletionTokens != 2 {
		t.Fatalf("Generate = %+v, %v", res, err)
	}
	drain(t, e, newFakeClock())
}

func TestTimeScaleZeroIsFast(t *testing.T) {
	e := New(Config{MaxBatch: 8})
	begin := time.Now()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			o, _ := generate(t, e, nil, userRequest("sim-small", fmt.Sprint("question ", i), int64(i)))
			if o.err != nil || o.res.FinishReason != llm.FinishStop {
				t.Errorf("request %d: %+v", i, o)
			}
		})
	}
	wg.Wait()
	if d := time.Since(begin); d > 2*time.Second {
		t.Fatalf("64 requests took %v at time scale 0", d)
	}
}

func TestRealTimePace(t *testing.T) {
	// A hundredth of real time: 1 ms steps still show the clock is honoured.
	e := New(Config{TimeScale: 0.01})
	req := userRequest("sim-small", "Hi", 1)
	req.MaxTokens = 20
	begin := time.Now()
	o, _ := generate(t, e, nil, req)
	// 20 steps of 15.2 ms plus a short prefill, scaled down: about 3 ms.
	if d := time.Since(begin); o.res.Usage.CompletionTokens != 20 || d < 3*time.Millisecond || d > time.Second {
		t.Fatalf("%d tokens in %v", o.res.Usage.CompletionTokens, d)
	}
}
