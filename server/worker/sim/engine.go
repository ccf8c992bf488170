// Package sim is a simulated GPU inference engine: continuous batching with a slot
// limit, a priced decode step, prefill at a set token rate, a prefix cache and a
// waiting queue, producing deterministic English cut into real tokens. It serves
// the embedded default, tests, load tests and capacity planning, and it labels
// every model it serves as simulated.
package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/server/worker"
)

// Context window and output bound of every simulated model.
const (
	ContextWindow   = 131072
	MaxOutputTokens = 4096
)

// Engine is the simulated GPU. It implements worker.Engine and is safe for
// concurrent use; its scheduler goroutine runs only while there is work.
type Engine struct {
	cfg    Config
	tok    *tokenize.Tokenizer
	models []worker.ModelInfo

	mu       sync.Mutex
	waiting  []*seq
	running  []*seq
	cache    *prefixCache
	busy     bool          // the scheduler goroutine is running
	deadline time.Time     // when the scheduler's current step ends
	changed  chan struct{} // closed on the next load change
}

var _ worker.Engine = (*Engine)(nil)

// New returns a simulated engine configured by cfg (see Config for defaults).
func New(cfg Config) *Engine {
	cfg = cfg.withDefaults()
	e := &Engine{
		cfg:     cfg,
		tok:     tokenize.Default(),
		cache:   newPrefixCache(cfg.BlockTokens),
		changed: make(chan struct{}),
	}
	for _, id := range cfg.Models {
		e.models = append(e.models, worker.ModelInfo{
			ID:          id,
			DisplayName: id + " (simulated)",
			Description: "Simulated model: a simulated GPU writes deterministic text from a " +
				"Markov chain over Alice's Adventures in Wonderland; no real inference runs.",
			Simulated:       true,
			ContextWindow:   ContextWindow,
			MaxOutputTokens: MaxOutputTokens,
		})
	}
	for _, id := range cfg.EmbedModels {
		e.models = append(e.models, worker.ModelInfo{
			ID:          id,
			DisplayName: id + " (simulated)",
			Description: "Simulated embedding model: vectors hashed from the words of the text, so texts that " +
				"share words are close; no real model runs.",
			Simulated:     true,
			ContextWindow: 8192,
		})
	}
	return e
}

// Models lists the simulated models.
func (e *Engine) Models() []worker.ModelInfo {
	return slices.Clone(e.models)
}

// seq is one sequence inside the engine: one choice of a request. The
// scheduler owns steps; the fields under "mu" are guarded by Engine.mu.
type seq struct {
	model        string
	promptTokens int
	blocks       []uint64 // prefix cache keys of the prompt's full blocks
	plan         plan

	produced atomic.Int64  // completion tokens made so far
	notify   chan struct{} // capacity 1, shared by a request's sequences: produced moved or a sequence finished
	done     chan struct{} // closed when the last step is taken

	// mu
	steps     int
	cached    int
	cancelled bool
}

// MaxChoices bounds a request's N.
const MaxChoices = 8

// Generate runs one simulated generation; see worker.Engine. The output
// depends only on the seed (zero when nil), the prompt, the model and the
// choice's index; Temperature and TopP are accepted and ignored. Each of N
// choices is its own sequence in the batch, as in a real engine, sharing the
// prompt (the second one finds it in the prefix cache).
func (e *Engine) Generate(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
	if !slices.Contains(e.cfg.Models, req.Model) {
		return llm.Result{}, fmt.Errorf("%w: %q", llm.ErrUnknownModel, req.Model)
	}
	if len(req.Messages) == 0 {
		return llm.Result{}, fmt.Errorf("%w: messages: none given", llm.ErrInvalidRequest)
	}
	if req.MaxTokens < 0 {
		return llm.Result{}, fmt.Errorf("%w: max_tokens: %d is negative", llm.ErrInvalidRequest, req.MaxTokens)
	}
	n := req.Choices()
	if n > MaxChoices {
		return llm.Result{}, fmt.Errorf("%w: n: %d is over %d", llm.ErrInvalidRequest, n, MaxChoices)
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = MaxOutputTokens
	}
	prompt := llm.RequestPromptIDs(e.tok, req)
	if len(prompt)+maxTokens > ContextWindow {
		return llm.Result{}, fmt.Errorf("%w: messages: %d prompt tokens and max_tokens %d exceed the context window of %d",
			llm.ErrInvalidRequest, len(prompt), maxTokens, ContextWindow)
	}
	notify := make(chan struct{}, 1)
	seqs := make([]*seq, n)
	blocks := blockKeys(req.Model, prompt, e.cfg.BlockTokens)
	// Making the answers (schema-guided values) is bounded in time for the
	// whole request, whatever its N and its tools.
	composeCtx, cancelCompose := context.WithTimeoutCause(ctx, schemaWall, fmt.Errorf("making the answers took over %v", schemaWall))
	defer cancelCompose()
	for i := range seqs {
		ans, err := e.compose(composeCtx, *req, e.rng(*req, prompt, i))
		if err != nil && ctx.Err() != nil {
			// The client left while the answer was being made: nothing ran.
			return llm.Result{FinishReason: llm.FinishCancelled, Usage: llm.Usage{PromptTokens: len(prompt)}, Err: context.Cause(ctx)}, nil
		}
		if err != nil {
			return llm.Result{}, err
		}
		p := makePlan(e.tok, ans.text, req.Stop, maxTokens)
		if len(ans.calls) > 0 {
			p = makeCallPlan(e.tok, ans.calls, maxTokens)
		}
		seqs[i] = &seq{model: req.Model, promptTokens: len(prompt), blocks: blocks, plan: p, notify: notify, done: make(chan struct{})}
	}
	for _, s := range seqs {
		e.enqueue(s)
	}

	usage := llm.Usage{PromptTokens: len(prompt)}
	next := make([]int, n)     // each choice's next delta to emit
	ended := make([]bool, n)   // each choice's end was reported
	calls := make([]int, n)    // each choice's tool calls begun
	lp := logprobs{tok: e.tok} // simulated log probabilities
	for {
		if err := ctx.Err(); err != nil {
			return e.cancel(seqs, usage, context.Cause(ctx)), nil
		}
		left := 0
		for i, s := range seqs {
			// done is read before produced: once done, produced is final.
			finished := isClosed(s.done)
			produced := int(s.produced.Load())
			for next[i] < len(s.plan.deltas) && s.plan.deltas[next[i]].end <= produced {
				d := e.delta(req, s.plan, next[i], i, &calls[i], &lp)
				if err := emit(d); err != nil {
					return e.cancel(seqs, usage, err), nil
				}
				usage.CompletionTokens += d.Tokens
				next[i]++
			}
			switch {
			case !finished:
				left++
			case !ended[i]:
				ended[i] = true
				if n > 1 {
					if err := emit(llm.Delta{Choice: i, Finish: s.plan.finish}); err != nil {
						return e.cancel(seqs, usage, err), nil
					}
				}
			}
		}
		if left == 0 {
			usage.CachedTokens = e.cachedTokens(seqs[0])
			return llm.Result{FinishReason: seqs[0].plan.finish, Usage: usage}, nil
		}
		select {
		case <-notify:
		case <-ctx.Done():
		}
	}
}

// delta turns the plan's i-th delta of choice into the engine's form.
func (e *Engine) delta(req *llm.Request, p plan, i, choice int, calls *int, lp *logprobs) llm.Delta {
	d := p.deltas[i]
	out := llm.Delta{Choice: choice, Tokens: d.tokens}
	switch {
	case d.call < 0:
		out.Text = d.text
		if req.Logprobs {
			out.Logprobs = lp.of(d.text, req.TopLogprobs)
		}
	case d.name != "":
		*calls++
		out.ToolCalls = []llm.ToolCallDelta{{Index: d.call, ID: d.id, Name: d.name, Arguments: d.text}}
	default:
		out.ToolCalls = []llm.ToolCallDelta{{Index: d.call, Arguments: d.text}}
	}
	return out
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// rng is the random source of one choice: deterministic in (seed, prompt,
// model, choice).
func (e *Engine) rng(req llm.Request, prompt []int, choice int) *rand.Rand {
	var seed int64
	if req.Seed != nil {
		seed = *req.Seed
	}
	h := fnvString(fnvOffset, req.Model)
	for _, t := range prompt {
		h = fnvUint64(h, uint64(t))
	}
	return rand.New(rand.NewPCG(uint64(seed)+uint64(choice)*0x9E3779B97F4A7C15, h))
}

// cancel takes seqs out of the queue or the batch and reports how the
// generation ended.
func (e *Engine) cancel(seqs []*seq, usage llm.Usage, cause error) llm.Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range seqs {
		if i := slices.Index(e.waiting, s); i >= 0 {
			e.waiting = slices.Delete(e.waiting, i, i+1)
			e.loadChangedLocked()
		}
		// A running sequence leaves the batch at the scheduler's next step.
		s.cancelled = true
	}
	usage.CachedTokens = seqs[0].cached
	return llm.Result{FinishReason: llm.FinishCancelled, Usage: usage, Err: cause}
}

func (e *Engine) cachedTokens(s *seq) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.cached
}

// Load reports the simulated GPU's load. KV use counts the prefix cache plus
// the running sequences' tokens outside it.
func (e *Engine) Load() worker.LoadReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	return worker.LoadReport{
		Models:           slices.Concat(e.cfg.Models, e.cfg.EmbedModels),
		Running:          len(e.running),
		Waiting:          len(e.waiting),
		MaxBatch:         e.cfg.MaxBatch,
		InFlight:         len(e.running) + len(e.waiting),
		KVUsedTokens:     e.cache.tokens() + e.activeTokensLocked(),
		KVCapacityTokens: e.cfg.KVCapacityTokens,
	}
}

// LoadChanged returns a channel closed at the next admission, queueing,
// completion or cancellation (not on every token).
func (e *Engine) LoadChanged() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

func (e *Engine) loadChangedLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}
