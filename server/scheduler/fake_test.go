package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/internal/wait"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// fakeEngine is a worker whose load, liveness and generations the test sets.
type fakeEngine struct {
	calls atomic.Int32
	gen   atomic.Pointer[genFunc]

	mu      sync.Mutex
	load    worker.LoadReport
	dead    bool
	changed chan struct{}
	closed  bool
}

type genFunc func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error)

func newFake(maxBatch int, models ...string) *fakeEngine {
	if len(models) == 0 {
		models = []string{"m"}
	}
	f := &fakeEngine{changed: make(chan struct{}), load: worker.LoadReport{Models: models, MaxBatch: maxBatch}}
	f.setGen(func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		if err := emit(llm.Delta{Text: "ok", Tokens: 1}); err != nil {
			return llm.Result{FinishReason: llm.FinishCancelled}, nil
		}
		return llm.Result{FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 1}}, nil
	})
	return f
}

func (f *fakeEngine) setGen(g genFunc) { f.gen.Store(&g) }

func (f *fakeEngine) Models() []worker.ModelInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []worker.ModelInfo
	for _, m := range f.load.Models {
		out = append(out, worker.ModelInfo{ID: m})
	}
	return out
}

func (f *fakeEngine) Generate(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
	f.calls.Add(1)
	return (*f.gen.Load())(ctx, req, emit)
}

// Embed gives each input a one-dimensional vector of its length.
func (f *fakeEngine) Embed(_ context.Context, req llm.EmbedRequest) (llm.EmbedResult, error) {
	f.calls.Add(1)
	out := llm.EmbedResult{}
	for _, in := range req.Inputs {
		out.Vectors = append(out.Vectors, []float32{float32(len(in))})
	}
	return out, nil
}

func (f *fakeEngine) Load() worker.LoadReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load
}

func (f *fakeEngine) LoadChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeEngine) Live() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.dead
}

func (f *fakeEngine) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
}

func (f *fakeEngine) update(fn func(l *worker.LoadReport)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.load)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeEngine) setDead(dead bool) {
	f.update(func(*worker.LoadReport) { f.dead = dead })
}

func newScheduler(t testing.TB, cfg Config, workers ...*fakeEngine) *Scheduler {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for i, w := range workers {
		s.AddWorker(string(rune('a'+i)), w)
	}
	return s
}

func job(key string, priority int) llm.Job {
	return llm.Job{Request: llm.Request{Model: "m", MaxTokens: 10}, AffinityKey: key, Priority: priority}
}

func discard(llm.Delta) error { return nil }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 5*time.Second, what, cond)
}

// keyFor finds an affinity key whose rendezvous target among s's workers is
// the one named.
func keyFor(t *testing.T, s *Scheduler, name string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range 10000 {
		key := "conv-" + string(rune('A'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i/260))
		var best *member
		var bestW uint64
		for _, m := range s.members {
			if w := mix64(hashString(key) ^ m.hash); best == nil || w > bestW {
				best, bestW = m, w
			}
		}
		if best.name == name {
			return key
		}
	}
	t.Fatalf("no key maps to %s", name)
	return ""
}

// queued returns how many jobs wait for model.
func (s *Scheduler) queued(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[model]; q != nil {
		return q.Len()
	}
	return 0
}
