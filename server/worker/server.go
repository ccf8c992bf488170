package worker

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"os"
	"time"

	"connectrpc.com/connect"

	workerv1 "github.com/parleyhq/parley/gen/parley/worker/v1"
	"github.com/parleyhq/parley/gen/parley/worker/v1/workerv1connect"
	"github.com/parleyhq/parley/server/llm"
)

// Service serves parley.worker.v1.WorkerService from an Engine: the GPU host's
// side of the generation plane. Zero fields take the defaults documented on
// them.
type Service struct {
	// Engine runs the generations.
	Engine Engine
	// EngineName is the engine's kind as Info reports it ("sim", "openai").
	EngineName string
	// ID is the worker's id, stable for the life of the process (default: the
	// host name and a random suffix).
	ID string
	// Heartbeat is the longest the Load stream stays silent (default 2 s), so a
	// gateway can tell a quiet worker from a dead one.
	Heartbeat time.Duration
	// MinInterval is the shortest time between two Load reports (default 5 ms):
	// a busy engine changes load on every decode step.
	MinInterval time.Duration
	// Logger receives the stream lifecycle lines (default: discarded).
	Logger *slog.Logger
	// Lag, when set, is how late this process lately ran what was ready to
	// run (lag.Probe): sent with every load report, so that gateways do not
	// read the worker's own delays as its upstream's queueing.
	Lag func() time.Duration
	// Wake, when set, is called as each generation starts while the engine
	// reports no batch size (lag.Probe's Wake: the probe ticks only then).
	// Gateways read a worker's lag only against the time to first token of
	// a worker they admit to by measured queueing: one of no known size.
	Wake func()
	// Token, when set, is the worker token every call must carry
	// (Authorization: Bearer); calls without it get unauthenticated (see
	// RequireToken).
	Token string
}

// NewHandler serves WorkerService from engine with the defaults; it returns
// the route prefix and handler, as the generated constructors do.
func NewHandler(engine Engine, opts ...connect.HandlerOption) (string, http.Handler) {
	return (&Service{Engine: engine}).Handler(opts...)
}

// Handler returns the route prefix and handler of the service.
func (s *Service) Handler(opts ...connect.HandlerOption) (string, http.Handler) {
	c := *s
	if c.ID == "" {
		c.ID = NewWorkerID()
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 2 * time.Second
	}
	if c.MinInterval <= 0 {
		c.MinInterval = 5 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	path, h := workerv1connect.NewWorkerServiceHandler(&c, opts...)
	return path, RequireToken(c.Token, h)
}

// NewWorkerID returns a process-unique worker id: the host name and a random
// suffix.
func NewWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	return host + "-" + rand.Text()[:8]
}

// deltaMessage is the message a generation's deltas go out in.
type deltaMessage struct {
	msg   workerv1.GenerateResponse
	kind  workerv1.GenerateResponse_Delta
	delta workerv1.Delta
}

// Generate runs one generation on the engine and streams its deltas, then one
// Finished message. Errors before the first delta carry the code the remote
// client maps back to the engine's sentinel error.
func (s *Service) Generate(ctx context.Context, req *connect.Request[workerv1.GenerateRequest], stream *connect.ServerStream[workerv1.GenerateResponse]) error {
	if req.Msg.GetMaxTokens() < 0 {
		return connect.NewError(connect.CodeInvalidArgument, llm.ErrInvalidRequest)
	}
	if s.Wake != nil && s.Engine.Load().MaxBatch <= 0 {
		s.Wake()
	}
	// Every delta goes out in the same message, filled anew: Send has
	// marshalled it when it returns, and nothing is allocated per token.
	out := new(deltaMessage)
	out.kind.Delta = &out.delta
	out.msg.Kind = &out.kind
	res, err := s.Engine.Generate(ctx, requestFromProto(req.Msg), func(d llm.Delta) error {
		fillDelta(&out.delta, d)
		return stream.Send(&out.msg)
	})
	if err != nil {
		return errorToConnect(err)
	}
	fin := &workerv1.Finished{FinishReason: finishToProto(res.FinishReason), Usage: usageToProto(res.Usage)}
	if res.FinishReason == llm.FinishError && res.Err != nil {
		fin.ErrorMessage = res.Err.Error()
	}
	return stream.Send(&workerv1.GenerateResponse{Kind: &workerv1.GenerateResponse_Finished{Finished: fin}})
}

// Load streams a report at once, then one on every change (no more often than
// MinInterval) and at least every Heartbeat.
func (s *Service) Load(ctx context.Context, req *connect.Request[workerv1.LoadRequest], stream *connect.ServerStream[workerv1.LoadResponse]) error {
	s.Logger.InfoContext(ctx, "load stream opened", "gateway", req.Msg.GetGatewayId())
	defer s.Logger.InfoContext(ctx, "load stream closed", "gateway", req.Msg.GetGatewayId())
	heartbeat := time.NewTimer(s.Heartbeat)
	defer heartbeat.Stop()
	for {
		changed := s.Engine.LoadChanged()
		load := s.Engine.Load()
		if s.Lag != nil {
			load.Lag = s.Lag()
		}
		report := loadToProto(s.ID, load, time.Now())
		if err := stream.Send(&workerv1.LoadResponse{Report: report}); err != nil {
			return err
		}
		heartbeat.Reset(s.Heartbeat)
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			continue
		case <-changed:
		}
		// Coalesce a burst of changes into one report.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.MinInterval):
		}
	}
}

// Embed runs one batch of embeddings on the engine.
func (s *Service) Embed(ctx context.Context, req *connect.Request[workerv1.EmbedRequest]) (*connect.Response[workerv1.EmbedResponse], error) {
	res, err := s.Engine.Embed(ctx, llm.EmbedRequest{ID: req.Msg.GetRequestId(), Model: req.Msg.GetModel(),
		Inputs: req.Msg.GetInputs(), Dimensions: int(req.Msg.GetDimensions())})
	if err != nil {
		return nil, errorToConnect(err)
	}
	out := &workerv1.EmbedResponse{Usage: usageToProto(res.Usage), Vectors: make([]*workerv1.Vector, len(res.Vectors))}
	for i, v := range res.Vectors {
		out.Vectors[i] = &workerv1.Vector{Values: v}
	}
	return connect.NewResponse(out), nil
}

// Info describes the worker and the models its engine serves.
func (s *Service) Info(_ context.Context, _ *connect.Request[workerv1.InfoRequest]) (*connect.Response[workerv1.InfoResponse], error) {
	out := &workerv1.InfoResponse{WorkerId: s.ID, Engine: s.EngineName}
	for _, m := range s.Engine.Models() {
		out.Models = append(out.Models, modelToProto(m))
	}
	return connect.NewResponse(out), nil
}
