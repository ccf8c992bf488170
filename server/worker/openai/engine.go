// Package openai is the worker engine that forwards generations to an
// OpenAI-compatible inference server (vLLM, SGLang, llama.cpp server, Ollama,
// TGI): streamed chat completions with usage requested, cancellation that closes
// the upstream request at once, typed errors for the upstream's refusals, and
// load read from the server's Prometheus metrics where it has them.
package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/server/compat/openaiwire"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/sse"
)

// Config sets up an Engine. Zero fields take the defaults documented on them.
type Config struct {
	// BaseURL is the upstream's OpenAI base URL, with /v1, as the OpenAI SDKs
	// take it (e.g. http://vllm:8000/v1).
	BaseURL string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// Models are the model ids served; empty: those the upstream lists at
	// {BaseURL}/models when the engine starts.
	Models []string
	// ContextWindow and MaxOutputTokens describe every model (defaults 32768 and
	// 4096); the gateway's catalog has the last word.
	ContextWindow, MaxOutputTokens int
	// MaxBatch is the upstream's sequence slots as reported to the scheduler
	// (0: learned from the upstream when New starts, where it tells — see
	// slotProbes — or from its metrics and llama.cpp's /slots once read,
	// else unknown: the gateways then admit by its measured queueing).
	MaxBatch int
	// HTTPClient reaches the upstream (default: a client without an overall
	// timeout, which would cut long streams, that keeps a connection alive
	// for every stream it has had open at once).
	HTTPClient *http.Client
	// FirstByteTimeout bounds the wait for the response and its first event;
	// IdleTimeout the wait between events (defaults 60 s and 30 s).
	FirstByteTimeout, IdleTimeout time.Duration
	// MetricsURL is the upstream's Prometheus endpoint (default: BaseURL without
	// /v1, plus /metrics; "-" turns polling off, /slots included). llama.cpp's
	// /slots, beside it, is read too where the server has it.
	MetricsURL string
	// MetricsInterval is how often it is read (default 1 s).
	MetricsInterval time.Duration
	// Logger receives upstream failures (default: discarded).
	Logger *slog.Logger
}

// Engine forwards generations to an OpenAI-compatible server. It implements
// worker.Engine and is safe for concurrent use; Close stops its metrics
// polling.
type Engine struct {
	cfg    Config
	tok    *tokenize.Tokenizer
	direct bool // made by Open: a gateway's upstream, watched for liveness

	mu       sync.Mutex
	models   []worker.ModelInfo
	maxBatch int // cfg.MaxBatch, or the slots the upstream told
	inFlight int
	upstream *upstreamLoad // nil until metrics are read
	live     bool
	liveErr  error // why it is not live
	changed  chan struct{}

	stop context.CancelFunc
	done chan struct{}
}

var _ worker.Engine = (*Engine)(nil)

// New returns an engine for cfg, asking the upstream for its models when cfg
// names none, and for its slots when cfg sets no MaxBatch: the worker's
// engine, which fails to start while its one upstream does not answer.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	e, err := newEngine(cfg)
	if err != nil {
		return nil, err
	}
	ids := e.cfg.Models
	if len(ids) == 0 {
		if ids, err = e.listModels(ctx); err != nil {
			return nil, err
		}
	}
	e.setModels(ids)
	e.learnMaxBatch(ctx)
	e.live = true
	e.start()
	return e, nil
}

func newEngine(cfg Config) (*Engine, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: no upstream URL")
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.ContextWindow <= 0 {
		cfg.ContextWindow = 32768
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = 4096
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: UpstreamTransport()}
	}
	if cfg.FirstByteTimeout <= 0 {
		cfg.FirstByteTimeout = 60 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	if cfg.MetricsURL == "" {
		cfg.MetricsURL = strings.TrimSuffix(cfg.BaseURL, "/v1") + "/metrics"
	}
	if cfg.MetricsInterval <= 0 {
		cfg.MetricsInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{cfg: cfg, tok: tokenize.Default(), maxBatch: cfg.MaxBatch, changed: make(chan struct{}), done: make(chan struct{})}, nil
}

// setModels sets the models served, each described by the configured
// window and output bound.
func (e *Engine) setModels(ids []string) {
	models := make([]worker.ModelInfo, 0, len(ids))
	for _, id := range ids {
		models = append(models, worker.ModelInfo{
			ID: id, DisplayName: id, Description: "Served by an OpenAI-compatible inference server.",
			ContextWindow: e.cfg.ContextWindow, MaxOutputTokens: e.cfg.MaxOutputTokens,
		})
	}
	e.mu.Lock()
	e.models = models
	e.notifyLocked()
	e.mu.Unlock()
}

// learnMaxBatch asks the upstream for its slots when none is configured.
func (e *Engine) learnMaxBatch(ctx context.Context) {
	if e.cfg.MaxBatch > 0 {
		return
	}
	if n, server := e.learnSlots(ctx); n > 0 {
		e.mu.Lock()
		e.maxBatch = n
		e.notifyLocked()
		e.mu.Unlock()
		e.cfg.Logger.Info("upstream slots learned", "server", server, "slots", n)
		return
	}
	e.cfg.Logger.Info("upstream's /props, /info and /get_server_info tell no slot count: its metrics may (logged at the first reading); else reporting none, so gateways admit until it reports requests waiting (set --max-batch to cap)")
}

// start begins watching the upstream (watch.go).
func (e *Engine) start() {
	ctx, stop := context.WithCancel(context.Background())
	e.stop = stop
	go e.watch(ctx)
}

// UpstreamTransport is the default client's transport. Every stream is a
// connection to the upstream, so as many are kept alive as are used (the
// default keeps two, and every other answer paid for a new connection).
// Plain-HTTP requests go through streamTransport (no goroutine and one small
// buffer per open stream); https and proxied ones through net/http's
// Transport, whose buffers are small too (each open stream keeps them; the
// decoder has its own).
func UpstreamTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no limit
	t.MaxIdleConnsPerHost = streamMaxIdle
	t.IdleConnTimeout = streamIdleTimeout
	t.WriteBufferSize = 1024
	t.ReadBufferSize = 2048
	return newStreamTransport(t)
}

// Close stops polling the upstream's metrics.
func (e *Engine) Close() {
	e.stop()
	<-e.done
}

// Models lists the models served (none yet, for an engine from Open whose
// upstream has not answered).
func (e *Engine) Models() []worker.ModelInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.models
}

// serves reports whether model is one the engine serves.
func (e *Engine) serves(model string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.ContainsFunc(e.models, func(m worker.ModelInfo) bool { return m.ID == model })
}

func (e *Engine) listModels(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.FirstByteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cfg.BaseURL+"/models", nil)
	if err != nil {
		return nil, err
	}
	e.authorize(req)
	resp, err := e.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("openai: listing models: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("openai: listing models: %w", upstreamError(resp))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("openai: listing models: %w", err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if len(ids) == 0 {
		return nil, errors.New("openai: the upstream lists no models")
	}
	return ids, nil
}

func (e *Engine) authorize(req *http.Request) {
	if e.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
}

// post makes a JSON POST to the upstream's path. It is marked replayable
// (an Idempotency-Key entry with no value, which net/http does not send):
// when the upstream closes a kept-alive connection just as the request goes
// out on it — llama.cpp's server closes idle ones after 5 s, any server may
// at its keep-alive bound — the transport sends it again on a new
// connection instead of failing it with EOF. It retries only a reused
// connection that failed before any response, where the upstream has not
// answered; nothing it streamed is ever lost or doubled.
func (e *Engine) post(ctx context.Context, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header["Idempotency-Key"] = nil
	e.authorize(req)
	return req, nil
}

// Generate streams one chat completion from the upstream. Refusals before the
// stream begins are *worker.UpstreamError (matching ErrInvalidRequest,
// ErrUnknownModel or ErrOverloaded by status) or ErrUpstreamTimeout; a failure
// after the first delta ends the Result in FinishError. Cancelling ctx, or emit
// failing, closes the upstream request at once.
//
// Its frame stays small: an open stream spends its life parked in the loop
// below, waiting for the upstream's next bytes, with every frame above it on
// its stack. The stream's state is a generation on the heap, and the work
// around each wait is in calls of their own, whose frames are gone while it
// waits. Under about 3 KiB of stack in use there, the garbage collector
// halves each waiting stream's stack (16 KiB to 8); docs/perf.md has the
// figures.
func (e *Engine) Generate(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
	g, dec, err := e.begin(ctx, req, emit)
	if err != nil {
		return llm.Result{}, err
	}
	defer g.end()
	for !g.done && g.streamErr == nil {
		if g.holding && !dec.Buffered() {
			if err := g.release(); err != nil {
				return g.stopped(err)
			}
		}
		data, err := dec.NextData()
		if err := g.event(data, err); err != nil {
			return g.stopped(err)
		}
	}
	return g.result()
}

// generation is one streamed generation's state while its answer streams.
type generation struct {
	e        *Engine
	ctx      context.Context
	callCtx  context.Context
	cancel   context.CancelCauseFunc
	req      *llm.Request
	emit     llm.Emit
	body     io.Closer
	start    time.Time
	watchdog *time.Timer
	// lastEvent is the time of the last event since start, in nanoseconds;
	// 0: none yet.
	lastEvent atomic.Int64

	usage      *openaiwire.ChunkUsage
	finishes   []string // each choice's finish reason
	completion int
	started    bool
	done       bool
	streamErr  error
	parser     chunkParser
	// held is text received but not yet emitted: while more chunks have
	// already arrived (the upstream outpaced this worker), their text joins
	// it and goes on as one delta — one message instead of several through
	// the rest of the relay. It is emitted as soon as nothing more is
	// waiting, so nothing is ever delayed.
	held    llm.Delta
	holding bool
}

// begin checks req, opens the upstream's stream and arms its watchdog. On
// success the caller ends the generation with g.end.
//
//go:noinline
func (e *Engine) begin(ctx context.Context, req *llm.Request, emit llm.Emit) (*generation, *sse.Decoder, error) {
	if !e.serves(req.Model) {
		return nil, nil, fmt.Errorf("%w: %q", llm.ErrUnknownModel, req.Model)
	}
	if len(req.Messages) == 0 || req.MaxTokens < 0 {
		return nil, nil, fmt.Errorf("%w: no messages or a negative max_tokens", llm.ErrInvalidRequest)
	}
	body, err := e.chatBody(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", llm.ErrInvalidRequest, err)
	}
	g := &generation{e: e, ctx: ctx, req: req, emit: emit, start: time.Now(), finishes: make([]string, req.Choices())}
	g.callCtx, g.cancel = context.WithCancelCause(ctx)
	// The watchdog: the first event within FirstByteTimeout, each next one
	// within IdleTimeout of the last. Events only note their time; the timer
	// is moved when it fires, not on every token.
	g.watchdog = time.AfterFunc(time.Duration(math.MaxInt64), g.watch)
	g.watchdog.Reset(e.cfg.FirstByteTimeout)
	e.addInFlight(1)
	resp, err := e.open(ctx, g.callCtx, body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = upstreamError(resp)
		resp.Body.Close()
	}
	if err != nil {
		g.end()
		return nil, nil, err
	}
	g.body = resp.Body
	// The body keeps the response (for its trailers) as long as the answer
	// streams; its headers are not read again.
	resp.Header = nil
	// A chunk is a few hundred bytes: 1 KiB holds several, enough to see
	// what is waiting, and each open stream keeps it.
	return g, sse.NewDecoder(resp.Body, sse.WithBufferSize(1024)), nil
}

// watch is the watchdog's timer: it ends a stream whose upstream has been
// silent too long.
func (g *generation) watch() {
	last := g.lastEvent.Load()
	if last == 0 {
		g.cancel(llm.ErrUpstreamTimeout)
		return
	}
	idle := time.Since(g.start) - time.Duration(last)
	if idle >= g.e.cfg.IdleTimeout {
		g.cancel(llm.ErrUpstreamTimeout)
		return
	}
	g.watchdog.Reset(g.e.cfg.IdleTimeout - idle)
}

// end closes the upstream's stream, if open (also what closes the upstream
// request on an early return), and frees what begin took.
func (g *generation) end() {
	if g.body != nil {
		g.body.Close()
	}
	g.watchdog.Stop()
	g.cancel(nil)
	g.e.addInFlight(-1)
}

// release emits the held delta, if any.
//
//go:noinline
func (g *generation) release() error {
	if !g.holding {
		return nil
	}
	g.holding = false
	return g.emit(g.held)
}

// stopped ends a generation that emit refused (its client left): the
// upstream request is closed, and the usage so far estimated.
//
//go:noinline
func (g *generation) stopped(err error) (llm.Result, error) {
	g.cancel(err)
	return llm.Result{FinishReason: llm.FinishCancelled, Usage: g.e.estimate(g.req, g.completion), Err: err}, nil
}

// event takes in one event of the upstream's stream (data, or the error
// that ended it). It returns emit's error; the stream's own end is noted in
// g.done or g.streamErr.
//
//go:noinline
func (g *generation) event(data []byte, err error) error {
	if err != nil {
		if !errors.Is(err, io.EOF) || g.finishes[0] == "" {
			g.streamErr = err
		}
		g.done = true
		return nil
	}
	if g.lastEvent.Swap(max(int64(time.Since(g.start)), 1)) == 0 {
		g.watchdog.Reset(g.e.cfg.IdleTimeout) // from the first byte's wait to the idle one
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		g.done = true
		return nil
	}
	if bytes.HasPrefix(data, []byte(`{"error"`)) {
		var er openaiwire.ErrorResponse
		_ = json.Unmarshal(data, &er)
		g.streamErr = &worker.UpstreamError{Status: http.StatusInternalServerError, Message: er.Error.Message}
		return nil
	}
	chunk, err := g.parser.parse(data)
	if err != nil {
		g.streamErr = fmt.Errorf("openai: bad chunk: %w", err)
		return nil
	}
	if chunk.Usage != nil {
		g.usage = chunk.Usage
	}
	for _, ch := range chunk.Choices {
		if ch.Index < 0 || ch.Index >= len(g.finishes) {
			continue
		}
		if err := g.choice(ch); err != nil {
			return err
		}
	}
	return nil
}

// choice takes in one choice of an upstream chunk.
func (g *generation) choice(ch openaiwire.Choice) error {
	rest := g.e.delta(ch, g.req.Logprobs)
	r := g.e.splitReasoning(&rest)
	for _, d := range [2]*llm.Delta{&r, &rest} { // (r is empty, and skipped, unless split)
		if d.Text == "" && d.Reasoning == "" && len(d.ToolCalls) == 0 {
			continue
		}
		g.completion += d.Tokens
		g.started = true
		switch {
		case g.holding && len(d.ToolCalls) == 0 && d.Choice == g.held.Choice && (d.Reasoning == "") == (g.held.Reasoning == ""):
			g.held.Text += d.Text
			g.held.Reasoning += d.Reasoning
			g.held.Tokens += d.Tokens
			g.held.Logprobs = append(g.held.Logprobs, d.Logprobs...)
		case len(d.ToolCalls) == 0:
			if err := g.release(); err != nil {
				return err
			}
			g.held, g.holding = *d, true
		default:
			if err := g.release(); err != nil {
				return err
			}
			if err := g.emit(*d); err != nil {
				return err
			}
		}
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" && g.finishes[ch.Index] == "" {
		g.finishes[ch.Index] = *ch.FinishReason
		if len(g.finishes) > 1 {
			if err := g.release(); err != nil {
				return err
			}
			if err := g.emit(llm.Delta{Choice: ch.Index, Finish: finishReason(*ch.FinishReason)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// result is how the stream ended, once it has.
//
//go:noinline
func (g *generation) result() (llm.Result, error) {
	if err := g.release(); err != nil && g.ctx.Err() == nil {
		return g.stopped(err)
	}
	finish := g.finishes[0]
	if g.ctx.Err() != nil {
		return llm.Result{FinishReason: llm.FinishCancelled, Usage: g.e.estimate(g.req, g.completion), Err: context.Cause(g.ctx)}, nil
	}
	if g.streamErr == nil && finish == "" {
		g.streamErr = errors.New("openai: the upstream stream ended without a finish reason")
	}
	if g.streamErr != nil {
		err := g.e.failure(g.ctx, g.callCtx, g.streamErr)
		if !g.started {
			return llm.Result{}, err
		}
		g.e.cfg.Logger.Warn("upstream failed mid-stream", "request", g.req.ID, "err", err)
		return llm.Result{FinishReason: llm.FinishError, Usage: g.e.estimate(g.req, g.completion), Err: err}, nil
	}
	res := llm.Result{FinishReason: finishReason(finish)}
	if g.usage != nil {
		res.Usage = llm.Usage{PromptTokens: g.usage.PromptTokens, CompletionTokens: g.usage.CompletionTokens}
		if g.usage.PromptTokensDetails != nil {
			res.Usage.CachedTokens = g.usage.PromptTokensDetails.CachedTokens
		}
	} else {
		res.Usage = g.e.estimate(g.req, g.completion)
	}
	return res, nil
}

// chatBody is req's upstream request body. It and open are functions of
// their own, kept out of Generate: their locals would otherwise sit in
// Generate's frame, which every open stream keeps on its stack.
//
//go:noinline
func (e *Engine) chatBody(req *llm.Request) ([]byte, error) {
	return json.Marshal(e.chatRequest(*req))
}

// open sends a chat completion request with body and returns the
// response, streaming.
//
//go:noinline
func (e *Engine) open(ctx, callCtx context.Context, body []byte) (*http.Response, error) {
	httpReq, err := e.post(callCtx, "/chat/completions", body)
	if err != nil {
		return nil, err
	}
	httpReq.Header.Set("Accept", "text/event-stream")
	resp, err := e.cfg.HTTPClient.Do(httpReq)
	if err != nil {
		return nil, e.failure(ctx, callCtx, err)
	}
	// The request, with its body (the whole prompt), would otherwise stay
	// with the response for as long as the answer streams.
	resp.Request = nil
	return resp, nil
}

// delta maps one choice of an upstream chunk to the engine's delta: its
// text (counted by the tokenizer, or by its logprobs when the upstream sent
// them), its tool-call pieces and its log probabilities.
func (e *Engine) delta(ch openaiwire.Choice, logprobs bool) llm.Delta {
	d := llm.Delta{Choice: ch.Index}
	if ch.Delta == nil {
		return d
	}
	d.Text = ch.Delta.Content
	if d.Reasoning = ch.Delta.Reasoning; d.Reasoning == "" {
		d.Reasoning = ch.Delta.ReasoningContent
	}
	if d.Reasoning != "" {
		d.Tokens += e.tok.Count(d.Reasoning)
	}
	for i, c := range ch.Delta.ToolCalls {
		tc := llm.ToolCallDelta{Index: i, ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments}
		if c.Index != nil {
			tc.Index = *c.Index
		}
		d.ToolCalls = append(d.ToolCalls, tc)
		d.Tokens += e.tok.Count(c.Function.Name) + e.tok.Count(c.Function.Arguments)
	}
	if ch.Logprobs != nil && logprobs {
		for _, lp := range ch.Logprobs.Content {
			p := llm.TokenLogprob{Token: lp.Token, Logprob: lp.Logprob, Bytes: intBytes(lp.Bytes)}
			for _, t := range lp.TopLogprobs {
				p.Top = append(p.Top, llm.TopLogprob{Token: t.Token, Logprob: t.Logprob, Bytes: intBytes(t.Bytes)})
			}
			d.Logprobs = append(d.Logprobs, p)
		}
	}
	if len(d.Logprobs) > 0 {
		d.Tokens += len(d.Logprobs)
	} else if d.Text != "" {
		d.Tokens += e.tok.Count(d.Text)
	}
	return d
}

// upstreamEffort is a reasoning effort as vLLM, SGLang and llama.cpp take
// it: low, medium or high (none and minimal are the least, low; xhigh the
// most, high).
func upstreamEffort(effort string) string {
	switch effort {
	case "none", "minimal":
		return "low"
	case "xhigh":
		return "high"
	}
	return effort
}

// splitReasoning takes d's reasoning apart from its answer's text and
// calls, to be sent first, when it has both (a chunk rarely does): it
// returns the reasoning's delta, leaving the rest in d, or an empty delta.
// (No slice of the two: nothing is allocated per token.)
func (e *Engine) splitReasoning(d *llm.Delta) llm.Delta {
	if d.Reasoning == "" || (d.Text == "" && len(d.ToolCalls) == 0) {
		return llm.Delta{}
	}
	r := llm.Delta{Choice: d.Choice, Reasoning: d.Reasoning, Tokens: e.tok.Count(d.Reasoning)}
	d.Reasoning, d.Tokens = "", d.Tokens-r.Tokens
	return r
}

func intBytes(in []int) []byte {
	if in == nil {
		return nil
	}
	out := make([]byte, len(in))
	for i, b := range in {
		out[i] = byte(b)
	}
	return out
}

// finishReason maps OpenAI's finish reason to the engine's: "length" and
// "tool_calls" (also the older "function_call") as such, anything else
// ("stop", "eos", "content_filter") as a stop.
func finishReason(s string) llm.FinishReason {
	switch s {
	case "length":
		return llm.FinishLength
	case "tool_calls", "function_call":
		return llm.FinishToolCalls
	}
	return llm.FinishStop
}

// failure names why the call to the upstream failed: its timeout, or err.
func (e *Engine) failure(ctx, callCtx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(context.Cause(callCtx), llm.ErrUpstreamTimeout) {
		return fmt.Errorf("%w after %v", llm.ErrUpstreamTimeout, e.cfg.FirstByteTimeout)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var ue *worker.UpstreamError
	if errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("openai: upstream: %w", err)
}

// estimate is the usage when the upstream reports none: the prompt counted by
// the tokenizer, the completion as streamed.
//
//go:noinline
func (e *Engine) estimate(req *llm.Request, completion int) llm.Usage {
	return llm.Usage{PromptTokens: worker.EstimatePromptTokens(req), CompletionTokens: completion, Estimated: true}
}

// upstreamError reads a refusal's status, message and Retry-After.
func upstreamError(resp *http.Response) *worker.UpstreamError {
	ue := &worker.UpstreamError{Status: resp.StatusCode}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var er openaiwire.ErrorResponse
	if json.Unmarshal(data, &er) == nil && er.Error.Message != "" {
		ue.Message = er.Error.Message
	} else {
		ue.Message = strings.TrimSpace(string(data))
		if len(ue.Message) > 200 {
			ue.Message = ue.Message[:200]
		}
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		ue.RetryAfter = time.Duration(s) * time.Second
	}
	if ue.Status >= 500 && unsupportedInput(ue.Message) {
		// llama.cpp answers 500 for an image (or audio) its model cannot
		// take: the request's fault, as 400 says, and no reason to try
		// another worker or eject this one.
		ue.Message = fmt.Sprintf("the model takes no such input (upstream status %d): %s", ue.Status, ue.Message)
		ue.Status = http.StatusBadRequest
	}
	return ue
}

// unsupportedInput reports whether an upstream's error message refuses a
// kind of input (llama.cpp: "image input is not supported - hint: ...").
func unsupportedInput(msg string) bool {
	m := strings.ToLower(msg)
	for _, kind := range []string{"image", "audio", "video"} {
		if strings.Contains(m, kind+" input is not supported") {
			return true
		}
	}
	return false
}

// chatRequest is the body of POST /chat/completions.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`

	Tools             []tool          `json:"tools,omitempty"`
	ToolChoice        any             `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    *responseFormat `json:"response_format,omitempty"`
	N                 int             `json:"n,omitempty"`
	Logprobs          bool            `json:"logprobs,omitempty"`
	TopLogprobs       int             `json:"top_logprobs,omitempty"`
	ReasoningEffort   string          `json:"reasoning_effort,omitempty"`
}

type tool struct {
	Type     string   `json:"type"`
	Function function `json:"function"`
}

type function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict bool            `json:"strict,omitempty"`
}

// chatMessage's Content is a string when the message is all text (which every
// server accepts), else a list of content parts; null for an assistant
// message that is only tool calls.
type chatMessage struct {
	Role       string                `json:"role"`
	Content    any                   `json:"content"`
	ToolCalls  []openaiwire.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string                `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

func (e *Engine) chatRequest(req llm.Request) chatRequest {
	out := chatRequest{
		Model: req.Model, Stream: true, MaxTokens: req.MaxTokens,
		Temperature: req.Temperature, TopP: req.TopP, Stop: req.Stop, Seed: req.Seed,
	}
	out.StreamOptions.IncludeUsage = true
	out.ParallelToolCalls, out.Logprobs, out.TopLogprobs = req.ParallelToolCalls, req.Logprobs, req.TopLogprobs
	out.ReasoningEffort = upstreamEffort(req.ReasoningEffort)
	if req.N > 1 {
		out.N = req.N
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, tool{Type: "function", Function: function{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
	}
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceFunction:
		out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice.Function}}
	case llm.ToolChoiceAuto:
	default:
		out.ToolChoice = string(req.ToolChoice.Mode)
	}
	switch f := req.ResponseFormat; f.Type {
	case llm.FormatJSONObject:
		out.ResponseFormat = &responseFormat{Type: "json_object"}
	case llm.FormatJSONSchema:
		out.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{Name: f.Name, Schema: f.Schema, Strict: f.Strict}}
	}
	for _, m := range req.Messages {
		if msg, ok := toolMessage(m); ok {
			out.Messages = append(out.Messages, msg)
			continue
		}
		parts := make([]contentPart, 0, len(m.Parts))
		allText := true
		for _, p := range m.Parts {
			switch {
			case p.Image != nil:
				allText = false
				parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{
					URL: "data:" + p.Image.MimeType + ";base64," + base64.StdEncoding.EncodeToString(p.Image.Data)}})
			case p.Document != nil:
				parts = append(parts, contentPart{Type: "text", Text: "<document name=\"" + p.Document.Filename + "\">\n" +
					p.Document.Text + "\n</document>"})
			default:
				parts = append(parts, contentPart{Type: "text", Text: p.Text})
			}
		}
		if allText {
			texts := make([]string, len(parts))
			for i, p := range parts {
				texts[i] = p.Text
			}
			out.Messages = append(out.Messages, chatMessage{Role: m.Role, Content: strings.Join(texts, "\n")})
		} else {
			out.Messages = append(out.Messages, chatMessage{Role: m.Role, Content: parts})
		}
	}
	return out
}

// toolMessage renders a message holding tool calls or a tool result in
// OpenAI's form: an assistant message with tool_calls (and its text, if
// any), or a role "tool" message with tool_call_id.
func toolMessage(m llm.ChatMessage) (chatMessage, bool) {
	out := chatMessage{Role: m.Role}
	var text []string
	for _, p := range m.Parts {
		switch {
		case p.ToolCall != nil:
			out.ToolCalls = append(out.ToolCalls, openaiwire.ToolCall{ID: p.ToolCall.ID, Type: "function",
				Function: openaiwire.FunctionCall{Name: p.ToolCall.Name, Arguments: p.ToolCall.Arguments}})
		case p.ToolResult != nil:
			out.ToolCallID = p.ToolResult.ToolCallID
			text = append(text, p.ToolResult.Content)
		default:
			text = append(text, p.Text)
		}
	}
	if len(out.ToolCalls) == 0 && out.ToolCallID == "" {
		return out, false
	}
	if len(text) > 0 {
		out.Content = strings.Join(text, "\n")
	}
	return out, true
}

func (e *Engine) addInFlight(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inFlight += n
	e.notifyLocked()
}

func (e *Engine) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// LoadChanged is closed on the next change of the in-flight count or of the
// upstream's metrics.
func (e *Engine) LoadChanged() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}
