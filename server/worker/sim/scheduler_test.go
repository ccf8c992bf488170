package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

func prefillCost(tokens int) time.Duration {
	return time.Duration(float64(tokens) / 5000 * float64(time.Second))
}

func TestStepCost(t *testing.T) {
	clk := newFakeClock()
	e := New(Config{TimeScale: 1, Clock: clk})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	req := userRequest("sim-small", "Hi", 1)
	start(ctx, e, req)
	prompt := len(llm.PromptIDs(e.tok, req.Messages))
	if d, want := clk.step(t), prefillCost(prompt)+15*time.Millisecond+200*time.Microsecond; d != want {
		t.Fatalf("first step %v, want prefill + step = %v", d, want)
	}
	for range 3 {
		if d := clk.step(t); d != 15200*time.Microsecond {
			t.Fatalf("batch-1 step %v, want 15.2ms (~65 tokens/s)", d)
		}
	}
	for i := range 31 {
		start(ctx, e, userRequest("sim-small", fmt.Sprint("Hi ", i), int64(i)))
	}
	waitLoad(t, e, func(l worker.LoadReport) bool { return l.InFlight == 32 })
	// Read the load before firing a step: once it shows all 32 running, the
	// step that admitted the last ones has been asked for, and firing it
	// leaves pure decode next (read after firing, the admitting step could
	// still be pending).
	for {
		l := e.Load()
		clk.step(t)
		if l.Running == 32 && l.Waiting == 0 {
			break
		}
	}
	// The step that admitted the last ones paid their prefill; the next is pure decode.
	if d := clk.step(t); d != 21400*time.Microsecond {
		t.Fatalf("batch-32 step %v, want 21.4ms (~47 tokens/s)", d)
	}
	cancel()
	drain(t, e, clk)
	if l := e.Load(); l.Running != 0 || l.Waiting != 0 {
		t.Fatalf("after cancelling all: %+v", l)
	}
}

func TestPrefixCache(t *testing.T) {
	clk := newFakeClock()
	e := New(Config{TimeScale: 1, Clock: clk})
	long := strings.Repeat("The quick brown fox jumps over the lazy dog, again and again. ", 60)
	first := userRequest("sim-small", long, 1)
	o1, waits1 := generate(t, e, clk, first)
	p1 := o1.res.Usage.PromptTokens
	if o1.res.Usage.CachedTokens != 0 {
		t.Fatalf("cold cache reported %d cached tokens", o1.res.Usage.CachedTokens)
	}
	if want := prefillCost(p1) + 15200*time.Microsecond; waits1[0] != want {
		t.Fatalf("cold first step %v, want %v", waits1[0], want)
	}
	if l := e.Load(); l.KVUsedTokens != int64((p1-1)/64*64) {
		t.Fatalf("KV used %d after one prompt of %d tokens", l.KVUsedTokens, p1)
	}

	// The same prompt again: every full block before the last token hits.
	o2, waits2 := generate(t, e, clk, first)
	cached := (p1 - 1) / 64 * 64
	if o2.res.Usage.CachedTokens != cached {
		t.Fatalf("warm cache: %d cached tokens, want %d", o2.res.Usage.CachedTokens, cached)
	}
	if want := prefillCost(p1-cached) + 15200*time.Microsecond; waits2[0] != want {
		t.Fatalf("warm first step %v, want %v", waits2[0], want)
	}

	// The next turn of the conversation shares the prefix up to where it diverges.
	next := first
	next.Messages = append(next.Messages[:1:1],
		llm.ChatMessage{Role: "assistant", Parts: []llm.Part{{Text: o1.text()}}},
		llm.ChatMessage{Role: "user", Parts: []llm.Part{{Text: "Go on."}}})
	a, b := llm.PromptIDs(e.tok, first.Messages), llm.PromptIDs(e.tok, next.Messages)
	common := 0
	for common < len(a) && common < len(b) && a[common] == b[common] {
		common++
	}
	o3, _ := generate(t, e, clk, next)
	if want := min(common, len(b)-1) / 64 * 64; o3.res.Usage.CachedTokens != want || want == 0 {
		t.Fatalf("next turn: %d cached tokens, want %d", o3.res.Usage.CachedTokens, want)
	}

	// Another model has its own cache.
	other := first
	other.Model = "sim-large"
	if o4, _ := generate(t, e, clk, other); o4.res.Usage.CachedTokens != 0 {
		t.Fatalf("other model hit the cache: %d", o4.res.Usage.CachedTokens)
	}
}

func TestQueueAndCancellation(t *testing.T) {
	clk := newFakeClock()
	e := New(Config{MaxBatch: 2, TimeScale: 1, Clock: clk})
	ctxs := make([]context.CancelFunc, 3)
	outs := make([]<-chan outcome, 3)
	for i := range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		ctxs[i] = cancel
		outs[i] = start(ctx, e, userRequest("sim-small", fmt.Sprint("request ", i), int64(i)))
		// One at a time, so the queue order is the start order.
		waitLoad(t, e, func(l worker.LoadReport) bool { return l.InFlight == i+1 })
	}
	for e.Load().Running < 2 {
		clk.step(t)
	}
	l := e.Load()
	if l.Running != 2 || l.Waiting != 1 || l.MaxBatch != 2 || l.InFlight != 3 {
		t.Fatalf("load %+v, want 2 running and 1 waiting", l)
	}

	// The load does not change with every token.
	changed := e.LoadChanged()
	clk.step(t)
	clk.step(t)
	select {
	case <-changed:
		t.Fatal("load signalled a change on a plain decode step")
	default:
	}

	// Cancelling a running request (the first) frees its slot for the waiting one
	// at the next step.
	ctxs[0]()
	o := <-outs[0]
	if o.res.FinishReason != llm.FinishCancelled || o.res.Usage.CompletionTokens != o.tokens || !errors.Is(o.res.Err, context.Canceled) {
		t.Fatalf("cancelled request: %+v", o.res)
	}
	clk.step(t)
	waitLoad(t, e, func(l worker.LoadReport) bool { return l.Running == 2 && l.Waiting == 0 })
	select {
	case <-changed:
	default:
		t.Fatal("no load change signalled for the cancellation and admission")
	}

	// Cancelling a waiting request takes it out of the queue at once.
	e2 := New(Config{MaxBatch: 1, TimeScale: 1, Clock: newFakeClock()})
	ctxA, cancelA := context.WithCancel(t.Context())
	start(ctxA, e2, userRequest("sim-small", "a", 1))
	waitLoad(t, e2, func(l worker.LoadReport) bool { return l.Running == 1 })
	ctxB, cancelB := context.WithCancel(t.Context())
	outB := start(ctxB, e2, userRequest("sim-small", "b", 1))
	waitLoad(t, e2, func(l worker.LoadReport) bool { return l.Waiting == 1 })
	cancelB()
	if o := <-outB; o.res.FinishReason != llm.FinishCancelled || o.res.Usage.PromptTokens == 0 {
		t.Fatalf("cancelled while waiting: %+v", o.res)
	}
	waitLoad(t, e2, func(l worker.LoadReport) bool { return l.Waiting == 0 })
	cancelA()
	drain(t, e2, e2.cfg.Clock.(*fakeClock))

	for _, c := range ctxs {
		c()
	}
	drain(t, e, clk)
}

func TestPrefixCacheEviction(t *testing.T) {
	c := newPrefixCache(64)
	a := []uint64{1, 2, 3}
	b := []uint64{4, 5}
	c.insert(a, 0, 1000)
	c.insert(b, 0, 1000)
	if c.lookup(a) != 3 || c.lookup([]uint64{1, 2, 9}) != 2 {
		t.Fatal("lookup does not follow leading blocks")
	}
	// Room for five blocks: b's (least recently used) go, tail first.
	c.insert([]uint64{6}, 0, 5*64)
	if c.tokens() != 5*64 || c.lookup(b) != 1 || c.lookup(a) != 3 {
		t.Fatalf("after eviction: %d tokens, b %d, a %d", c.tokens(), c.lookup(b), c.lookup(a))
	}
	// Tokens held elsewhere (running sequences) squeeze the cache.
	c.insert(nil, 3*64, 4*64)
	if c.tokens() != 64 {
		t.Fatalf("cache holds %d tokens, want 64", c.tokens())
	}
}
