package worker_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/internal/wait"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// fakeEngine is an Engine whose generations the test scripts.
type fakeEngine struct {
	generate func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error)

	mu      sync.Mutex
	load    worker.LoadReport
	changed chan struct{}
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{changed: make(chan struct{}), load: worker.LoadReport{Models: []string{"m1"}, MaxBatch: 8}}
}

func (f *fakeEngine) Models() []worker.ModelInfo {
	return []worker.ModelInfo{{ID: "m1", DisplayName: "Model one", ContextWindow: 1000, MaxOutputTokens: 100}}
}

func (f *fakeEngine) Generate(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
	return f.generate(ctx, req, emit)
}

// Embed gives each input the vector (length, 1), or fails for model "bad".
func (f *fakeEngine) Embed(_ context.Context, req llm.EmbedRequest) (llm.EmbedResult, error) {
	if req.Model != "m1" {
		return llm.EmbedResult{}, llm.ErrUnknownModel
	}
	out := llm.EmbedResult{Usage: llm.Usage{PromptTokens: len(req.Inputs)}}
	for _, in := range req.Inputs {
		out.Vectors = append(out.Vectors, []float32{float32(len(in)), 1})
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

func (f *fakeEngine) setRunning(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.load.Running = n
	close(f.changed)
	f.changed = make(chan struct{})
}

// serveWorker serves engine over h2c and dials it.
func serveWorker(t *testing.T, engine worker.Engine) (*httptest.Server, *worker.Remote) {
	t.Helper()
	return serveService(t, &worker.Service{Engine: engine, EngineName: "fake", ID: "w1", Heartbeat: 50 * time.Millisecond})
}

// serveService serves svc over h2c, with opts, and dials it.
func serveService(t *testing.T, svc *worker.Service, opts ...connect.HandlerOption) (*httptest.Server, *worker.Remote) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(svc.Handler(opts...))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	r := worker.Dial(worker.H2CClient(), srv.URL, worker.WithBackoff(10*time.Millisecond, 50*time.Millisecond), worker.WithIdleTimeout(time.Second))
	t.Cleanup(r.Close)
	return srv, r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 5*time.Second, what, cond)
}

func TestGenerateRoundTrip(t *testing.T) {
	eng := newFakeEngine()
	eng.generate = func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		if req.Model != "m1" || req.MaxTokens != 10 || len(req.Messages) != 1 || req.Messages[0].Parts[1].Document.Text != "doc text" {
			return llm.Result{}, errors.New("request mangled on the wire")
		}
		for _, d := range []string{"Hello", ",", " world"} {
			if err := emit(llm.Delta{Text: d, Tokens: 1}); err != nil {
				return llm.Result{FinishReason: llm.FinishCancelled}, nil
			}
		}
		return llm.Result{FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 3, CachedTokens: 4}}, nil
	}
	_, remote := serveWorker(t, eng)
	var got string
	res, err := remote.Generate(context.Background(), &llm.Request{
		ID: "r1", Model: "m1", MaxTokens: 10,
		Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: "hi"}, {Document: &llm.Document{Filename: "a.pdf", Text: "doc text"}}}}},
	}, func(d llm.Delta) error { got += d.Text; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got != "Hello, world" {
		t.Errorf("text = %q", got)
	}
	want := llm.Result{FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 3, CachedTokens: 4}}
	if res != want {
		t.Errorf("result = %+v, want %+v", res, want)
	}
	waitFor(t, "models", func() bool { return len(remote.Models()) == 1 })
	if m := remote.Models()[0]; m.ID != "m1" || m.MaxOutputTokens != 100 {
		t.Errorf("models = %+v", remote.Models())
	}
	if remote.WorkerID() != "w1" {
		t.Errorf("worker id = %q", remote.WorkerID())
	}
}

// The worker sends every delta in one message, filled anew: nothing of a
// delta carries over into the next.
func TestDeltasCarryNothingOver(t *testing.T) {
	sent := []llm.Delta{
		{Text: "a", Reasoning: "why", Tokens: 2, Choice: 1, Finish: llm.FinishStop,
			ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_1", Name: "f", Arguments: "{}"}},
			Logprobs:  []llm.TokenLogprob{{Token: "a", Logprob: -0.5, Top: []llm.TopLogprob{{Token: "a", Logprob: -0.5}}}}},
		{Text: "b", Tokens: 1},
		{Reasoning: "c", Tokens: 1},
	}
	eng := newFakeEngine()
	eng.generate = func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		for _, d := range sent {
			if err := emit(d); err != nil {
				return llm.Result{FinishReason: llm.FinishCancelled}, nil
			}
		}
		return llm.Result{FinishReason: llm.FinishStop}, nil
	}
	_, remote := serveWorker(t, eng)
	var got []llm.Delta
	if _, err := remote.Generate(context.Background(), &llm.Request{ID: "r1", Model: "m1", MaxTokens: 10,
		Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: "hi"}}}}},
		func(d llm.Delta) error { got = append(got, d); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sent) {
		t.Errorf("received %+v\nsent     %+v", got, sent)
	}
}

func TestGenerateErrorsKeepTheirMeaning(t *testing.T) {
	cases := []struct {
		err      error
		sentinel error
	}{
		{llm.ErrUnknownModel, llm.ErrUnknownModel},
		{llm.ErrInvalidRequest, llm.ErrInvalidRequest},
		{&worker.UpstreamError{Status: 400, Message: "bad"}, llm.ErrInvalidRequest},
		{&worker.UpstreamError{Status: 429}, llm.ErrOverloaded},
		{llm.ErrUpstreamTimeout, llm.ErrUpstreamTimeout},
	}
	eng := newFakeEngine()
	var mu sync.Mutex
	var next error
	eng.generate = func(context.Context, *llm.Request, llm.Emit) (llm.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		return llm.Result{}, next
	}
	_, remote := serveWorker(t, eng)
	for _, c := range cases {
		mu.Lock()
		next = c.err
		mu.Unlock()
		_, err := remote.Generate(context.Background(), new(llm.Request{Model: "m1"}), func(llm.Delta) error { return nil })
		if !errors.Is(err, c.sentinel) {
			t.Errorf("%v came back as %v, want it to match %v", c.err, err, c.sentinel)
		}
	}
	mu.Lock()
	next = &worker.UpstreamError{Status: 502}
	mu.Unlock()
	_, err := remote.Generate(context.Background(), new(llm.Request{Model: "m1"}), func(llm.Delta) error { return nil })
	if err == nil || llm.CallerFault(err) || errors.Is(err, llm.ErrOverloaded) {
		t.Errorf("502 came back as %v, want a worker fault", err)
	}
}

func TestGenerateCancelReachesEngine(t *testing.T) {
	eng := newFakeEngine()
	stopped := make(chan struct{})
	eng.generate = func(ctx context.Context, _ *llm.Request, emit llm.Emit) (llm.Result, error) {
		_ = emit(llm.Delta{Text: "a", Tokens: 1})
		<-ctx.Done()
		close(stopped)
		return llm.Result{FinishReason: llm.FinishCancelled}, nil
	}
	_, remote := serveWorker(t, eng)
	ctx, cancel := context.WithCancel(context.Background())
	res, err := remote.Generate(ctx, new(llm.Request{Model: "m1"}), func(llm.Delta) error { cancel(); return nil })
	if err != nil || res.FinishReason != llm.FinishCancelled {
		t.Fatalf("got %+v, %v; want cancelled", res, err)
	}
	select {
	case <-stopped:
	case <-time.After(time.Second):
		t.Fatal("the engine's generation was not cancelled")
	}
}

func TestWorkerGoneMidStream(t *testing.T) {
	eng := newFakeEngine()
	eng.generate = func(ctx context.Context, _ *llm.Request, emit llm.Emit) (llm.Result, error) {
		_ = emit(llm.Delta{Text: "one two", Tokens: 2})
		<-ctx.Done()
		return llm.Result{FinishReason: llm.FinishCancelled}, nil
	}
	srv, remote := serveWorker(t, eng)
	res, err := remote.Generate(context.Background(), new(llm.Request{Model: "m1", Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: "hello there"}}}}}),
		func(llm.Delta) error { srv.CloseClientConnections(); return nil })
	if err != nil {
		t.Fatalf("error after the first delta: %v; want a result", err)
	}
	if res.FinishReason != llm.FinishError || res.Err == nil {
		t.Errorf("result = %+v, want finish error", res)
	}
	if res.Usage.CompletionTokens != 2 || res.Usage.PromptTokens == 0 || !res.Usage.Estimated {
		t.Errorf("usage = %+v, want 2 completion tokens and an estimated prompt", res.Usage)
	}
}

func TestLoadStreamFollowsAndReconnects(t *testing.T) {
	eng := newFakeEngine()
	srv, remote := serveWorker(t, eng)
	waitFor(t, "live", remote.Live)
	eng.setRunning(3)
	waitFor(t, "running 3", func() bool { return remote.Load().Running == 3 })
	if got := remote.Load(); got.MaxBatch != 8 || len(got.Models) != 1 {
		t.Errorf("load = %+v", got)
	}

	changed := remote.LoadChanged()
	srv.CloseClientConnections()
	waitFor(t, "the break noticed", func() bool { return remote.LastError() != nil })
	select {
	case <-changed:
	default:
		t.Error("LoadChanged not closed when the stream broke")
	}
	// The server still listens: the client reconnects on its own.
	waitFor(t, "live again", remote.Live)
}

// The worker's lag, when it measures one, goes with every load report.
func TestLoadReportCarriesTheWorkersLag(t *testing.T) {
	_, remote := serveService(t, &worker.Service{Engine: newFakeEngine(), ID: "w1", Heartbeat: 50 * time.Millisecond,
		Lag: func() time.Duration { return 70 * time.Millisecond }})
	waitFor(t, "the worker's lag", func() bool { return remote.Load().Lag == 70*time.Millisecond })
}

// Embed crosses the wire both ways: vectors in order, usage, and the
// unknown-model error as its sentinel.
func TestEmbedOverTheWire(t *testing.T) {
	eng := &fakeEngine{}
	_, remote := serveWorker(t, eng)
	res, err := remote.Embed(context.Background(), llm.EmbedRequest{Model: "m1", Inputs: []string{"a", "bcd"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vectors) != 2 || res.Vectors[1][0] != 3 || res.Vectors[1][1] != 1 || res.Usage.PromptTokens != 2 {
		t.Fatalf("%+v", res)
	}
	if _, err := remote.Embed(context.Background(), llm.EmbedRequest{Model: "x", Inputs: []string{"a"}}); !errors.Is(err, llm.ErrUnknownModel) {
		t.Fatalf("unknown model: %v", err)
	}
}

// A token costs the worker path no allocation of Parley's own: measured
// over a real h2c connection (worker service and Remote in this process)
// as the difference between a long generation and a short one. connect-go
// and net/http's HTTP/2 make 10 a token between them (the message Receive
// makes, with its oneof and delta, and the text; the envelope's reader and
// buffer; the server's data frame and its write); the worker's own message
// for each delta would make 3 more.
func TestDeltasAllocatePerToken(t *testing.T) {
	eng := newFakeEngine()
	eng.generate = func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		for range req.MaxTokens {
			if err := emit(llm.Delta{Text: " rabbit", Tokens: 1}); err != nil {
				return llm.Result{FinishReason: llm.FinishCancelled}, nil
			}
		}
		return llm.Result{FinishReason: llm.FinishStop}, nil
	}
	// Served as parley worker serves it: messages under 4 KiB not compressed.
	_, remote := serveService(t, &worker.Service{Engine: eng, EngineName: "fake", ID: "w1", Heartbeat: time.Second},
		connect.WithCompressMinBytes(4096))
	run := func(tokens int) {
		n := 0
		if _, err := remote.Generate(context.Background(), &llm.Request{ID: "r1", Model: "m1", MaxTokens: tokens,
			Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: "hi"}}}}},
			func(d llm.Delta) error { n += len(d.Text); return nil }); err != nil || n != 7*tokens {
			t.Fatal(n, err)
		}
	}
	run(10)
	short := testing.AllocsPerRun(20, func() { run(10) })
	long := testing.AllocsPerRun(20, func() { run(510) })
	theirs := 10.0
	if raceEnabled {
		theirs = 13 // pooled buffers the race detector dropped
	}
	if perToken := (long - short) / 500; perToken > theirs+0.5 {
		t.Errorf("%.2f allocations per token (%.0f for 10 tokens, %.0f for 510), want at most connect-go's and HTTP/2's %.0f", perToken, short, long, theirs)
	}
}

// A worker's lag probe ticks only while its figure will be read: gateways
// read a worker's lag against the time to first token of a worker of no
// known size only, so a generation wakes the probe only while the engine
// reports no batch size.
func TestGenerateWakesTheLagProbeOnlyWithoutABatchSize(t *testing.T) {
	eng := newFakeEngine()
	eng.generate = func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		if err := emit(llm.Delta{Text: "ok", Tokens: 1}); err != nil {
			return llm.Result{FinishReason: llm.FinishCancelled}, nil
		}
		return llm.Result{FinishReason: llm.FinishStop}, nil
	}
	var wakes atomic.Int32
	_, remote := serveService(t, &worker.Service{Engine: eng, Wake: func() { wakes.Add(1) }})
	generate := func() {
		t.Helper()
		if _, err := remote.Generate(context.Background(), &llm.Request{ID: "r", Model: "m1", MaxTokens: 1}, func(llm.Delta) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	generate() // MaxBatch 8
	if n := wakes.Load(); n != 0 {
		t.Fatalf("%d wakes with a batch size reported, want 0", n)
	}
	eng.mu.Lock()
	eng.load.MaxBatch = 0
	eng.mu.Unlock()
	generate()
	generate()
	if n := wakes.Load(); n != 2 {
		t.Fatalf("%d wakes for 2 generations with no batch size, want 2", n)
	}
}
