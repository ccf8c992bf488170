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
	return e
}

// Models lists the simulated models.
func (e *Engine) Models() []worker.ModelInfo {
	return slices.Clone(e.models)
}

// seq is one request inside the engine. The scheduler owns steps; the fields
// under "mu" are guarded by Engine.mu.
type seq struct {
	model        string
	promptTokens int
	blocks       []uint64 // prefix cache keys of the prompt's full blocks
	plan         plan

	produced atomic.Int64  // completion tokens made so far
	notify   chan struct{} // capacity 1: produced moved or the sequence finished
	done     chan struct{} // closed when the last step is taken

	// mu
	steps     int
	cached    int
	cancelled bool
}

// Generate runs one simulated generation; see worker.Engine. The text depends only
// on the seed (zero when nil), the prompt and the model; Temperature and TopP are
// accepted and ignored.
func (e *Engine) Generate(ctx context.Context, req worker.Request, emit func(text string, tokens int) error) (worker.Result, error) {
	if !slices.ContainsFunc(e.models, func(m worker.ModelInfo) bool { return m.ID == req.Model }) {
		return worker.Result{}, fmt.Errorf("%w: %q", worker.ErrUnknownModel, req.Model)
	}
	if len(req.Messages) == 0 {
		return worker.Result{}, fmt.Errorf("%w: messages: none given", worker.ErrInvalidRequest)
	}
	if req.MaxTokens < 0 {
		return worker.Result{}, fmt.Errorf("%w: max_tokens: %d is negative", worker.ErrInvalidRequest, req.MaxTokens)
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = MaxOutputTokens
	}
	prompt := promptTokens(e.tok, req.Messages)
	if len(prompt)+maxTokens > ContextWindow {
		return worker.Result{}, fmt.Errorf("%w: messages: %d prompt tokens and max_tokens %d exceed the context window of %d",
			worker.ErrInvalidRequest, len(prompt), maxTokens, ContextWindow)
	}
	s := &seq{
		model:        req.Model,
		promptTokens: len(prompt),
		blocks:       blockKeys(req.Model, prompt, e.cfg.BlockTokens),
		plan:         makePlan(e.tok, e.text(req, prompt), req.Stop, maxTokens),
		notify:       make(chan struct{}, 1),
		done:         make(chan struct{}),
	}
	e.enqueue(s)

	usage := worker.Usage{PromptTokens: s.promptTokens}
	next := 0 // the next delta to emit
	for {
		if err := ctx.Err(); err != nil {
			return e.cancel(s, usage, context.Cause(ctx)), nil
		}
		produced := int(s.produced.Load())
		for next < len(s.plan.deltas) && s.plan.deltas[next].end <= produced {
			d := s.plan.deltas[next]
			if err := emit(d.text, d.tokens); err != nil {
				return e.cancel(s, usage, err), nil
			}
			usage.CompletionTokens += d.tokens
			next++
		}
		select {
		case <-s.done:
			if int(s.produced.Load()) > produced {
				continue // emit what the last step made
			}
			usage.CachedTokens = e.cachedTokens(s)
			return worker.Result{FinishReason: s.plan.finish, Usage: usage}, nil
		case <-s.notify:
		case <-ctx.Done():
		}
	}
}

// text writes the completion for req: deterministic in (seed, prompt, model).
func (e *Engine) text(req worker.Request, prompt []int) string {
	var seed int64
	if req.Seed != nil {
		seed = *req.Seed
	}
	h := fnvString(fnvOffset, req.Model)
	for _, t := range prompt {
		h = fnvUint64(h, uint64(t))
	}
	rng := rand.New(rand.NewPCG(uint64(seed), h))
	return corpusChain().write(rng, 20+rng.IntN(160))
}

// cancel takes s out of the queue or the batch and reports how it ended.
func (e *Engine) cancel(s *seq, usage worker.Usage, cause error) worker.Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i := slices.Index(e.waiting, s); i >= 0 {
		e.waiting = slices.Delete(e.waiting, i, i+1)
		e.loadChangedLocked()
	}
	// A running sequence leaves the batch at the scheduler's next step.
	s.cancelled = true
	usage.CachedTokens = s.cached
	return worker.Result{FinishReason: worker.FinishCancelled, Usage: usage, Err: cause}
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
		Models:           slices.Clone(e.cfg.Models),
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
