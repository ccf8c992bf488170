// Package enginetest is the conformance suite every worker engine must pass,
// in the style of server/store/storetest: an engine's test calls Run with a
// factory that returns the engine under test and what the suite may ask of
// the server behind it.
//
//	func TestConformance(t *testing.T) { enginetest.Run(t, newTarget) }
//
// It checks streaming, usage equal to what was streamed, stop strings,
// max_tokens, cancellation freeing the server's slot within 100 ms (on the
// server's own count), concurrency up to the server's slots and the
// queueing beyond them, an upstream that dies mid-stream or is slow to its
// first byte, and images (accepted, or refused as the caller's fault).
package enginetest

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// Target is one engine under test and the server behind it.
type Target struct {
	// Engine is the engine under test; Model a chat model it serves.
	Engine worker.Engine
	Model  string
	// Slots is the sequences the server runs at once.
	Slots int
	// Probe reads the server's own view of its load: the sequences it is
	// processing (its busy slots, or the upstream requests it holds open) and
	// those queued. For llama.cpp it is its /slots and /metrics.
	Probe func(ctx context.Context) (busy, waiting int, err error)
	// AcceptsImages: the model takes image input; else images must be
	// refused before generation, as the caller's fault, naming the image.
	AcceptsImages bool
	// LongTokens is a max_tokens that keeps a generation running for at
	// least a second or so (the cancellation and concurrency cases).
	LongTokens int
	// Upstream is the server's base URL (without /v1) when the engine
	// reaches it over HTTP; Connect returns another engine of the same kind
	// for baseURL (a proxy in front of the server), serving Model and polling
	// no metrics, with the first-byte timeout given. Both empty for an
	// engine with no upstream (the sim): the dying and slow upstream cases
	// do not apply to it.
	Upstream string
	Connect  func(t *testing.T, baseURL string, firstByte time.Duration) worker.Engine
}

// Factory returns the target for one test, cleaned up with t.
type Factory func(t *testing.T) Target

// Run runs every case as a subtest.
func Run(t *testing.T, newTarget Factory) {
	t.Run("StreamAndUsage", func(t *testing.T) { testStreamAndUsage(t, newTarget(t)) })
	t.Run("MaxTokens", func(t *testing.T) { testMaxTokens(t, newTarget(t)) })
	t.Run("Stop", func(t *testing.T) { testStop(t, newTarget(t)) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, newTarget(t)) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, newTarget(t)) })
	t.Run("Images", func(t *testing.T) { testImages(t, newTarget(t)) })
	t.Run("UpstreamDiesMidStream", func(t *testing.T) { testDies(t, newTarget(t)) })
	t.Run("SlowFirstByte", func(t *testing.T) { testSlowFirstByte(t, newTarget(t)) })
}

// noUpstream says, for an engine with no upstream, that a case about one
// does not apply (not a skip: nothing is missing).
func noUpstream(t *testing.T, tg Target) bool {
	if tg.Connect != nil {
		return false
	}
	t.Log("the engine has no upstream: this case does not apply")
	return true
}

// Request is a chat request for the target's model, greedy and seeded so
// that the same request gives the same answer.
func Request(tg Target, maxTokens int, user string) llm.Request {
	zero, seed := 0.0, int64(7)
	return llm.Request{ID: "conformance", Model: tg.Model, MaxTokens: maxTokens,
		Temperature: &zero, Seed: &seed,
		Messages: []llm.ChatMessage{
			{Role: "system", Parts: []llm.Part{{Text: "You are a helpful assistant."}}},
			{Role: "user", Parts: []llm.Part{{Text: user}}},
		}}
}

// Stream is what one generation streamed.
type Stream struct {
	Deltas    []llm.Delta
	Text      string
	Tokens    int // the deltas' Tokens added up
	Logprobs  int // log probabilities streamed (one per token)
	FirstByte time.Duration
}

// Generate runs req on e and gathers what it streamed.
func Generate(ctx context.Context, e worker.Engine, req llm.Request) (llm.Result, Stream, error) {
	var s Stream
	var text strings.Builder
	start := time.Now()
	res, err := e.Generate(ctx, &req, func(d llm.Delta) error {
		if len(s.Deltas) == 0 {
			s.FirstByte = time.Since(start)
		}
		s.Deltas = append(s.Deltas, d)
		text.WriteString(d.Text)
		s.Tokens += d.Tokens
		s.Logprobs += len(d.Logprobs)
		return nil
	})
	s.Text = text.String()
	return res, s, err
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// The answer comes as several deltas, each counted, and the usage reported
// at the end equals what was streamed: one log probability per token, and
// as many tokens as the deltas said.
func testStreamAndUsage(t *testing.T, tg Target) {
	req := Request(tg, 24, "Say hello to the conformance suite.")
	req.Logprobs = true
	res, s, err := Generate(ctxFor(t, 30*time.Second), tg.Engine, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != llm.FinishStop && res.FinishReason != llm.FinishLength {
		t.Fatalf("finish %q (%v), want stop or length", res.FinishReason, res.Err)
	}
	if len(s.Deltas) < 2 || s.Text == "" {
		t.Fatalf("%d deltas (%q): want a streamed answer", len(s.Deltas), s.Text)
	}
	for i, d := range s.Deltas {
		if d.Text != "" && d.Tokens < 1 {
			t.Errorf("delta %d %q counts %d tokens", i, d.Text, d.Tokens)
		}
	}
	u := res.Usage
	if u.Estimated || u.PromptTokens < 5 {
		t.Errorf("usage %+v: want the server's own count of the prompt", u)
	}
	if u.CompletionTokens != s.Tokens || u.CompletionTokens != s.Logprobs {
		t.Errorf("usage %d completion tokens; streamed %d tokens with %d log probabilities", u.CompletionTokens, s.Tokens, s.Logprobs)
	}
	if res.FinishReason == llm.FinishLength && u.CompletionTokens != 24 {
		t.Errorf("finish length after %d tokens, max_tokens 24", u.CompletionTokens)
	}
}

func testMaxTokens(t *testing.T, tg Target) {
	res, s, err := Generate(ctxFor(t, 30*time.Second), tg.Engine, Request(tg, 5, "Tell me a long story about a cat."))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != llm.FinishLength || res.Usage.CompletionTokens != 5 || s.Text == "" {
		t.Errorf("result %+v, text %q: want finish length after exactly 5 tokens", res, s.Text)
	}
}

// A stop string taken from the middle of the greedy answer ends the same
// request's answer right before its first occurrence.
func testStop(t *testing.T, tg Target) {
	ctx := ctxFor(t, 60*time.Second)
	req := Request(tg, 32, "Count slowly and say why.")
	_, full, err := Generate(ctx, tg.Engine, req)
	if err != nil {
		t.Fatal(err)
	}
	stop := stopString(full.Text)
	if stop == "" {
		t.Fatalf("no stop string to take from %q", full.Text)
	}
	want := full.Text[:strings.Index(full.Text, stop)]
	req.Stop = []string{stop}
	res, s, err := Generate(ctx, tg.Engine, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != llm.FinishStop || s.Text != want {
		t.Errorf("with stop %q: finish %q, text %q; want stop and %q (the full answer: %q)", stop, res.FinishReason, s.Text, want, full.Text)
	}
	if res.Usage.CompletionTokens < 1 && want != "" {
		t.Errorf("usage %+v after %q", res.Usage, s.Text)
	}
}

// stopString is two or three printable, non-space runes from past the
// middle of text; "" when it has none.
func stopString(text string) string {
	runes := []rune(text)
	for i := len(runes) / 2; i+2 <= len(runes); i++ {
		ok := true
		for _, r := range runes[i : i+2] {
			if !unicode.IsPrint(r) || unicode.IsSpace(r) || r == utf8.RuneError {
				ok = false
			}
		}
		if ok {
			return string(runes[i : i+2])
		}
	}
	return ""
}

// waitFree polls the server until nothing is busy or queued, returning how
// long that took; fails past limit.
func waitFree(t *testing.T, tg Target, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		busy, waiting, err := tg.Probe(t.Context())
		if err == nil && busy == 0 && waiting == 0 {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("the server still has %d busy, %d waiting (err %v) %v later", busy, waiting, err, limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Cancelling a generation ends it at once with the usage so far, and the
// server frees the slot within 100 ms, by its own count.
func testCancel(t *testing.T, tg Target) {
	waitFree(t, tg, 30*time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cancelledAt time.Time
	deltas := 0
	res, err := tg.Engine.Generate(ctx, new(Request(tg, tg.LongTokens, "Write an endless poem.")), func(d llm.Delta) error {
		deltas++
		if deltas == 3 {
			cancelledAt = time.Now()
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	returned := time.Since(cancelledAt)
	if deltas < 3 {
		t.Fatalf("only %d deltas before the end (%+v)", deltas, res)
	}
	if res.FinishReason != llm.FinishCancelled || res.Usage.CompletionTokens < 1 {
		t.Errorf("result %+v, want cancelled with the usage so far", res)
	}
	freed := returned + waitFree(t, tg, 5*time.Second)
	t.Logf("Generate returned %v after the cancel; the server's slot was free %v after it", returned, freed)
	if freed > 100*time.Millisecond {
		t.Errorf("the server freed the slot %v after the cancel, want under 100 ms", freed)
	}
}

// Slots+2 generations at once: all succeed, the server runs at most Slots
// of them at a time (and does reach Slots), and queues the rest; the
// engine's load report sees the same.
func testConcurrency(t *testing.T, tg Target) {
	waitFree(t, tg, 30*time.Second)
	// The engine learns the server's slots when it starts or at its first
	// reading of the server's load.
	for deadline := time.Now().Add(5 * time.Second); tg.Engine.Load().MaxBatch != tg.Slots; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine reports MaxBatch %d, want the server's %d slots", tg.Engine.Load().MaxBatch, tg.Slots)
		}
	}
	ctx := ctxFor(t, 120*time.Second)
	n := tg.Slots + 2
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, s, err := Generate(ctx, tg.Engine, Request(tg, tg.LongTokens, "Request "+string(rune('A'+i))+": tell a story."))
			switch {
			case err != nil:
				errs <- err
			case res.FinishReason != llm.FinishLength && res.FinishReason != llm.FinishStop:
				errs <- errors.New("finish " + string(res.FinishReason))
			case s.Text == "":
				errs <- errors.New("no text")
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	peakBusy, peakWaiting, peakRunning, peakQueued, maxBatch := 0, 0, 0, 0, 0
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		case <-time.After(5 * time.Millisecond):
		}
		if busy, waiting, err := tg.Probe(ctx); err == nil {
			peakBusy, peakWaiting = max(peakBusy, busy), max(peakWaiting, waiting)
		}
		l := tg.Engine.Load()
		peakRunning, peakQueued, maxBatch = max(peakRunning, l.Running), max(peakQueued, l.Waiting), max(maxBatch, l.MaxBatch)
	}
	close(errs)
	for err := range errs {
		t.Errorf("a generation failed: %v", err)
	}
	t.Logf("server: peak %d busy, %d waiting; engine load: peak %d running, %d waiting, MaxBatch %d", peakBusy, peakWaiting, peakRunning, peakQueued, maxBatch)
	if peakBusy != tg.Slots {
		t.Errorf("the server ran at most %d at once, want its %d slots", peakBusy, tg.Slots)
	}
	if peakWaiting < 1 {
		t.Errorf("the server never queued a request beyond its %d slots", tg.Slots)
	}
	if maxBatch != tg.Slots || peakRunning != tg.Slots || peakQueued < 1 {
		t.Errorf("the engine's load report: peak running %d, waiting %d, MaxBatch %d; want %d running, some waiting, MaxBatch %d",
			peakRunning, peakQueued, maxBatch, tg.Slots, tg.Slots)
	}
}

// PNG is a small valid PNG image (8×8, two colours).
func PNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for y := range 8 {
		for x := range 8 {
			c := color.RGBA{R: 200, A: 255}
			if (x+y)%2 == 0 {
				c = color.RGBA{B: 200, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

func testImages(t *testing.T, tg Target) {
	req := Request(tg, 8, "What is in this picture?")
	req.Messages[1].Parts = append(req.Messages[1].Parts, llm.Part{Image: &llm.Image{Data: PNG(), MimeType: "image/png", Width: 8, Height: 8}})
	res, s, err := Generate(ctxFor(t, 30*time.Second), tg.Engine, req)
	if tg.AcceptsImages {
		if err != nil || s.Text == "" || res.Usage.PromptTokens < 5 {
			t.Errorf("an image to a model that takes them: %+v, %q, %v", res, s.Text, err)
		}
		return
	}
	if err == nil {
		t.Fatalf("an image to a text-only model was answered: %+v %q", res, s.Text)
	}
	if !errors.Is(err, llm.ErrInvalidRequest) || !llm.CallerFault(err) || !strings.Contains(strings.ToLower(err.Error()), "image") {
		t.Errorf("refusal %q: want the caller's fault (ErrInvalidRequest), naming the image", err)
	}
	t.Logf("refused: %v", err)
}

// The upstream's connection is cut after a few events: the generation ends
// in an error, with the text so far and its usage estimated.
func testDies(t *testing.T, tg Target) {
	if noUpstream(t, tg) {
		return
	}
	p := NewProxy(t, tg.Upstream)
	p.CutAfterEvents(4)
	e := tg.Connect(t, p.URL, 30*time.Second)
	res, s, err := Generate(ctxFor(t, 30*time.Second), e, Request(tg, tg.LongTokens, "Tell me about rivers."))
	if err != nil {
		t.Fatalf("err %v: the stream had begun, want a Result", err)
	}
	if res.FinishReason != llm.FinishError || res.Err == nil || s.Text == "" {
		t.Fatalf("result %+v, text %q: want finish error with the text so far", res, s.Text)
	}
	if !res.Usage.Estimated || res.Usage.CompletionTokens != s.Tokens || res.Usage.PromptTokens < 5 {
		t.Errorf("usage %+v, streamed %d tokens: want the estimate of what was streamed", res.Usage, s.Tokens)
	}
	waitFree(t, tg, 10*time.Second) // the server let go of the cut request
}

// An upstream slow to its first byte is waited for up to the first-byte
// timeout, and given up on at it.
func testSlowFirstByte(t *testing.T, tg Target) {
	const delay = 400 * time.Millisecond
	if noUpstream(t, tg) {
		return
	}
	p := NewProxy(t, tg.Upstream)
	p.DelayResponses(delay)
	patient := tg.Connect(t, p.URL, 5*time.Second)
	res, s, err := Generate(ctxFor(t, 30*time.Second), patient, Request(tg, 8, "Hello?"))
	if err != nil || s.Text == "" || s.FirstByte < delay {
		t.Errorf("patient engine: %+v, %q, first byte after %v, err %v", res, s.Text, s.FirstByte, err)
	}
	impatient := tg.Connect(t, p.URL, 100*time.Millisecond)
	start := time.Now()
	_, _, err = Generate(ctxFor(t, 30*time.Second), impatient, Request(tg, 8, "Hello?"))
	if !errors.Is(err, llm.ErrUpstreamTimeout) {
		t.Errorf("impatient engine: err %v, want ErrUpstreamTimeout", err)
	}
	if d := time.Since(start); d > delay {
		t.Errorf("gave up after %v, want at the 100 ms timeout", d)
	}
	waitFree(t, tg, 10*time.Second)
}
