package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	workerv1 "github.com/parleyhq/parley/gen/parley/worker/v1"
	"github.com/parleyhq/parley/gen/parley/worker/v1/workerv1connect"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
)

// Remote is an Engine on another host, reached over WorkerService with gRPC over
// h2c, so the scheduler treats local and remote workers alike. Its load comes
// from one live Load stream, reconnected with exponential back-off whenever it
// breaks; while it is broken Live reports false.
type Remote struct {
	client  workerv1connect.WorkerServiceClient
	baseURL string
	opts    dialOptions

	mu      sync.Mutex
	id      string
	models  []ModelInfo
	report  LoadReport
	live    bool
	lastErr error
	changed chan struct{}

	stop context.CancelFunc
	done chan struct{}
}

var _ Engine = (*Remote)(nil)

// Liveness is implemented by engines that can be out of reach (a Remote): Live
// reports whether the engine is connected and reporting load now.
type Liveness interface {
	Live() bool
}

// DialOption configures Dial.
type DialOption func(*dialOptions)

type dialOptions struct {
	gatewayID              string
	minBackoff, maxBackoff time.Duration
	idleTimeout            time.Duration
	logger                 *slog.Logger
	clientOpts             []connect.ClientOption
}

// WithGatewayID names the calling gateway in the worker's logs.
func WithGatewayID(id string) DialOption { return func(o *dialOptions) { o.gatewayID = id } }

// WithBackoff bounds the wait between reconnection attempts of the Load stream
// (defaults 100 ms doubling up to 5 s, with jitter).
func WithBackoff(min, max time.Duration) DialOption {
	return func(o *dialOptions) { o.minBackoff, o.maxBackoff = min, max }
}

// WithIdleTimeout is how long the Load stream may stay silent before the
// worker is taken for dead and the stream reopened (default 10 s: five of the
// worker's heartbeats).
func WithIdleTimeout(d time.Duration) DialOption { return func(o *dialOptions) { o.idleTimeout = d } }

// WithDialLogger receives connection state changes.
func WithDialLogger(l *slog.Logger) DialOption { return func(o *dialOptions) { o.logger = l } }

// WithClientOptions adds Connect client options (interceptors, compression).
func WithClientOptions(opts ...connect.ClientOption) DialOption {
	return func(o *dialOptions) { o.clientOpts = append(o.clientOpts, opts...) }
}

// Dial returns the worker at baseURL ("http://host:port") as an Engine and
// starts following its load; httpClient must speak h2c (see H2CClient). Close
// stops it.
func Dial(httpClient connect.HTTPClient, baseURL string, opts ...DialOption) *Remote {
	o := dialOptions{minBackoff: 100 * time.Millisecond, maxBackoff: 5 * time.Second, idleTimeout: 10 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &Remote{
		client:  workerv1connect.NewWorkerServiceClient(httpClient, baseURL, append([]connect.ClientOption{connect.WithGRPC()}, o.clientOpts...)...),
		baseURL: baseURL,
		opts:    o,
		changed: make(chan struct{}),
		stop:    stop,
		done:    make(chan struct{}),
	}
	go r.follow(ctx)
	return r
}

// H2CClient returns an HTTP client for workers: cleartext HTTP/2 with pings, so
// a worker that vanishes without closing its connection is noticed in seconds.
func H2CClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{
		Protocols:   &p,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		HTTP2:       &http.HTTP2Config{SendPingTimeout: 10 * time.Second, PingTimeout: 5 * time.Second},
	}}
}

// Close stops following the worker's load; generations in flight go on.
func (r *Remote) Close() {
	r.stop()
	<-r.done
}

// Models lists the models the worker served when last connected.
func (r *Remote) Models() []ModelInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.models
}

// Load returns the worker's last reported load.
func (r *Remote) Load() LoadReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.report
}

// LoadChanged is closed on the next load report or change of liveness.
func (r *Remote) LoadChanged() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Live reports whether the Load stream is connected.
func (r *Remote) Live() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live
}

// WorkerID is the id the worker reports for itself; empty until it has.
func (r *Remote) WorkerID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

// LastError is why the Load stream last broke, or nil.
func (r *Remote) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// follow keeps one Load stream open, reconnecting with jittered exponential
// back-off, until ctx ends.
func (r *Remote) follow(ctx context.Context) {
	defer close(r.done)
	backoff := r.opts.minBackoff
	refused := false // the worker refused the token, and it has been logged
	for ctx.Err() == nil {
		reported, err := r.session(ctx)
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		wasLive := r.live
		r.live, r.lastErr = false, err
		r.notifyLocked()
		r.mu.Unlock()
		if wasLive {
			r.opts.logger.Warn("worker load stream lost", "worker", r.baseURL, "err", err)
		}
		if unauth := connect.CodeOf(err) == connect.CodeUnauthenticated; unauth && !refused {
			r.opts.logger.Error("worker refuses this gateway: its --worker-token differs from the gateway's", "worker", r.baseURL)
			refused = true
		} else if !unauth {
			refused = false
		}
		if reported {
			backoff = r.opts.minBackoff
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(2*backoff, r.opts.maxBackoff)
	}
}

// session asks the worker for its models, then reads its Load stream until the
// stream breaks or stays silent past the idle timeout. reported says whether
// any report came.
func (r *Remote) session(ctx context.Context) (reported bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	infoCtx, cancelInfo := context.WithTimeout(ctx, 5*time.Second)
	info, err := r.client.Info(infoCtx, connect.NewRequest(&workerv1.InfoRequest{}))
	cancelInfo()
	if err != nil {
		return false, err
	}
	models := make([]ModelInfo, 0, len(info.Msg.GetModels()))
	for _, m := range info.Msg.GetModels() {
		models = append(models, modelFromProto(m))
	}
	r.mu.Lock()
	r.id, r.models = info.Msg.GetWorkerId(), models
	r.mu.Unlock()

	idle := time.AfterFunc(r.opts.idleTimeout, cancel)
	defer idle.Stop()
	stream, err := r.client.Load(ctx, connect.NewRequest(&workerv1.LoadRequest{GatewayId: r.opts.gatewayID}))
	if err != nil {
		return false, err
	}
	defer stream.Close()
	for stream.Receive() {
		idle.Reset(r.opts.idleTimeout)
		rep := loadFromProto(stream.Msg().GetReport())
		r.mu.Lock()
		if !r.live {
			r.opts.logger.Info("worker connected", "worker", r.baseURL, "worker_id", r.id)
		}
		r.report, r.live, reported = rep, true, true
		r.notifyLocked()
		r.mu.Unlock()
	}
	if err := stream.Err(); err != nil {
		return reported, err
	}
	return reported, errors.New("worker: load stream ended")
}

func (r *Remote) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Generate runs the generation on the worker. Before the first delta, a
// failure is returned as an error (matching ErrUnknownModel, ErrInvalidRequest,
// ErrOverloaded or ErrUpstreamTimeout where the worker said so); after it, the
// Result ends in FinishError with the usage so far, the prompt estimated by the
// tokenizer.
func (r *Remote) Generate(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := r.client.Generate(callCtx, connect.NewRequest(requestToProto(req, "")))
	if err != nil {
		return llm.Result{}, r.startError(ctx, err)
	}
	defer stream.Close()
	var (
		completion int
		started    bool
	)
	for stream.Receive() {
		switch k := stream.Msg().GetKind().(type) {
		case *workerv1.GenerateResponse_Delta:
			started = true
			completion += int(k.Delta.GetTokens())
			if err := emit(deltaFromProto(k.Delta)); err != nil {
				cancel()
				return llm.Result{FinishReason: llm.FinishCancelled, Usage: partialUsage(req, completion), Err: err}, nil
			}
		case *workerv1.GenerateResponse_Finished:
			res := llm.Result{FinishReason: finishFromProto(k.Finished.GetFinishReason()), Usage: usageFromProto(k.Finished.GetUsage())}
			if msg := k.Finished.GetErrorMessage(); msg != "" {
				res.Err = errors.New(msg)
			}
			return res, nil
		}
	}
	err = stream.Err()
	if err == nil {
		err = errors.New("worker: generate stream ended without a finish")
	}
	if !started {
		return llm.Result{}, r.startError(ctx, err)
	}
	if ctx.Err() != nil {
		return llm.Result{FinishReason: llm.FinishCancelled, Usage: partialUsage(req, completion), Err: context.Cause(ctx)}, nil
	}
	return llm.Result{FinishReason: llm.FinishError, Usage: partialUsage(req, completion), Err: err}, nil
}

// Embed runs one batch of embeddings on the worker; errors match the
// sentinels the worker's code stands for, as Generate's do.
func (r *Remote) Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResult, error) {
	res, err := r.client.Embed(ctx, connect.NewRequest(&workerv1.EmbedRequest{
		RequestId: req.ID, Model: req.Model, Inputs: req.Inputs, Dimensions: int32(req.Dimensions)}))
	if err != nil {
		return llm.EmbedResult{}, r.startError(ctx, err)
	}
	out := llm.EmbedResult{Usage: usageFromProto(res.Msg.GetUsage()), Vectors: make([][]float32, len(res.Msg.GetVectors()))}
	for i, v := range res.Msg.GetVectors() {
		out.Vectors[i] = v.GetValues()
	}
	if len(out.Vectors) != len(req.Inputs) {
		return llm.EmbedResult{}, fmt.Errorf("worker: %d vectors for %d inputs", len(out.Vectors), len(req.Inputs))
	}
	return out, nil
}

func (r *Remote) startError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return errorFromConnect(err)
}

// partialUsage is the usage of a generation the worker never finished: the
// completion tokens it streamed and the prompt counted here, an estimate.
func partialUsage(req *llm.Request, completion int) llm.Usage {
	return llm.Usage{PromptTokens: EstimatePromptTokens(req), CompletionTokens: completion, Estimated: true}
}

// EstimatePromptTokens counts the text of req's tools and messages with the
// process's tokenizer (documents and tool calls included, images at a flat
// 765, OpenAI's 1024×1024 high-detail cost): the prompt's size when the engine
// reports none.
func EstimatePromptTokens(req *llm.Request) int {
	tok := tokenize.Default()
	n := tok.Count(llm.ToolsPrompt(req.Tools))
	for _, m := range req.Messages {
		n += 4 + tok.Count(m.Role) // the chat template's role tag and separators
		for _, p := range m.Parts {
			switch {
			case p.Image != nil:
				n += 765
			case p.Document != nil:
				n += tok.Count(p.Document.Filename) + tok.Count(p.Document.Text) + 8
			case p.ToolCall != nil:
				n += tok.Count(p.ToolCall.Name) + tok.Count(p.ToolCall.Arguments) + 8
			case p.ToolResult != nil:
				n += tok.Count(p.ToolResult.Content) + 8
			default:
				n += tok.Count(p.Text)
			}
		}
	}
	return n + 3
}
