package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/blob"
	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/detach"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/scheduler"
	"github.com/parleyhq/parley/server/webapp"
	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/server/worker/openai"
	"github.com/parleyhq/parley/server/worker/sim"
)

// The pieces serve wires, each made from its package's configuration.

// openCatalog loads --models-file and sets its policy for the models the
// workers serve that it does not price.
func openCatalog(cfg models.Config, logger *slog.Logger) (*models.Catalog, error) {
	catalog, err := cfg.Catalog()
	if err != nil {
		return nil, err
	}
	unpriced, err := cfg.Unpriced()
	if err != nil {
		return nil, err
	}
	catalog.SetUnpriced(unpriced, logger)
	return catalog, nil
}

// openScheduler starts the scheduler on the configured workers, or on one
// in-process sim worker serving the catalog's models when none is given.
func openScheduler(cfg *config.Serve, catalog *models.Catalog, metrics *obs.Metrics, logger *slog.Logger) (*scheduler.Scheduler, error) {
	workerToken, err := config.ReadToken("worker-token", cfg.WorkerToken, cfg.WorkerTokenFile)
	if err != nil {
		return nil, err
	}
	sc := cfg.Scheduler
	if !sc.InProcess() && workerToken == "" {
		logger.Warn("no --worker-token: the workers must accept calls without one (loopback, or --insecure-no-worker-token)")
	}
	if sc.UpstreamAPIKey, err = config.ReadToken("upstream-api-key", cfg.UpstreamAPIKey, cfg.UpstreamAPIKeyFile); err != nil {
		return nil, err
	}
	sc.Registerer, sc.WorkerToken, sc.OnModels = metrics.Registry, workerToken, catalog.Learn
	sc.DialUpstream = directUpstreams(logger)
	sched, err := scheduler.New(sc, logger)
	if err != nil {
		return nil, err
	}
	metrics.RegisterWorkerLoad(func() []obs.WorkerLoad {
		var out []obs.WorkerLoad
		for _, w := range sched.Workers() {
			out = append(out, obs.WorkerLoad{Worker: w.Address, Running: w.Load.Running, Waiting: w.Load.Waiting, MaxBatch: w.Load.MaxBatch})
		}
		return out
	})
	if sc.InProcess() {
		var ids []string
		for _, m := range catalog.All() {
			ids = append(ids, m.ID)
		}
		sched.AddWorker("in-process", sim.New(sim.Config{Models: ids, TimeScale: cfg.SimTimeScale}))
	}
	return sched, nil
}

// directUpstreams dials the inference servers the gateway addresses
// directly: the openai engine in process for each, sharing one HTTP client
// (one connection pool per server).
func directUpstreams(logger *slog.Logger) func(scheduler.Upstream) (worker.Engine, error) {
	client := &http.Client{Transport: openai.UpstreamTransport()}
	return func(u scheduler.Upstream) (worker.Engine, error) {
		return openai.Open(openai.Config{BaseURL: u.BaseURL, APIKey: u.APIKey, Models: u.Models, MaxBatch: u.MaxBatch,
			HTTPClient: client, Logger: logger.With("upstream", u.BaseURL)})
	}
}

// openLimits makes the per-user request rates, tightened by the load of
// the scheduler's workers (shared between gateways through the stores'
// board); its Load runs until stopped.
func openLimits(cfg limits.Config, s *stores, sched *scheduler.Scheduler, metrics *obs.Metrics, logger *slog.Logger) (*limits.Limits, error) {
	l := limits.New(s.Limiter, time.Now)
	var err error
	if l.Rates, err = limits.ParseRates(cfg.Rates); err != nil {
		return nil, err
	}
	hostname, _ := os.Hostname()
	l.Load, err = limits.NewLoad(limits.LoadConfig{
		Sample: func() (float64, float64) { return scheduler.Slots(sched.Workers()) },
		Window: cfg.LoadWindow, Board: s.board(cfg.LoadKey), Gateway: fmt.Sprintf("%s:%d:%s", hostname, os.Getpid(), rand.Text()[:8]),
		Rates: l.Rates, Registerer: metrics.Registry, Logger: logger,
	})
	return l, err
}

// openAttachments makes the attachment service: blobs in the data
// directory, or in S3 when configured, behind signed URLs, checked and
// prepared once when an upload completes. The data directory's store is
// returned too: it serves the signed URLs of blob.Prefix.
func openAttachments(cfg *config.Serve, s *stores, secret []byte, logger *slog.Logger) (*blob.Local, *attach.Service, error) {
	local, err := blob.NewLocal(filepath.Join(cfg.DataDir, "blobs"), secret, cfg.Attach.BaseURL, time.Now)
	if err != nil {
		return nil, nil, err
	}
	var blobs blob.Blobs = local
	if s.Blobs != nil {
		blobs = s.Blobs // S3: clients send and fetch the bytes through presigned URLs
	}
	svc := &attach.Service{Store: s.Attachments, Blobs: blobs, URLExpiry: cfg.Attach.URLExpiry,
		Now: time.Now, Logger: logger, Checker: attach.NewChecker(cfg.Attach.Limits),
		UnreferencedTTL: cfg.Attach.UnreferencedTTL, SweepLimit: cfg.Attach.SweepLimit}
	if s.Blobs == nil {
		svc.FreeBytes, svc.MinFreeBytes = local.FreeBytes, cfg.Attach.MinFreeBytes
	}
	return local, svc, nil
}

// watchFault is the testing-only fault switch of --test-fault-file, or nil.
func watchFault(ctx context.Context, file string, logger *slog.Logger) *gateway.Fault {
	if file == "" {
		return nil
	}
	logger.Warn("TEST FAULT SWITCH ON: answers may be slowed down or failed on purpose", "file", file)
	return gateway.WatchFault(ctx, file, logger)
}

// connectOptions are the handler options of every Connect service (opts)
// and of the procedures open to anyone (public: small messages only):
// metrics, the store outage rule (internal errors become unavailable +
// retry), the fault switch (inside the metrics, so the region checker sees
// it), tracing, authentication, and the message bounds.
func connectOptions(cfg *config.Serve, metrics *obs.Metrics, outage connect.Interceptor, fault *gateway.Fault,
	tracer trace.TracerProvider, authn *auth.Authenticator) (opts, public []connect.HandlerOption, err error) {
	interceptors := []connect.Interceptor{metrics.Interceptor(), outage}
	if fault != nil {
		interceptors = append(interceptors, fault)
	}
	if cfg.OTLPEndpoint != "" { // even a no-op tracer costs a tenth of a small call
		otelInterceptor, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(tracer), otelconnect.WithoutMetrics())
		if err != nil {
			return nil, nil, err
		}
		interceptors = append(interceptors, otelInterceptor)
	}
	opts = []connect.HandlerOption{
		connect.WithInterceptors(append(interceptors, authn.Interceptor())...),
		// Bytes after decompression, and elements before unmarshalling.
		gateway.DecodeLimits(cfg.MaxBodyBytes, cfg.MaxRequestElements),
		// A streamed delta is a few bytes: gzip per message would cost more
		// CPU than the whole rest of the request path.
		connect.WithCompressMinBytes(4096),
	}
	public = append(slices.Clip(opts), gateway.DecodeLimits(cfg.MaxPublicBodyBytes, 1000))
	return opts, public, nil
}

// services are the Connect services' handlers.
type services struct {
	auth          parleyv1connect.AuthServiceHandler
	apiKeys       parleyv1connect.ApiKeyServiceHandler
	models        parleyv1connect.ModelServiceHandler
	chat          parleyv1connect.ChatServiceHandler
	embeddings    parleyv1connect.EmbeddingServiceHandler
	conversations parleyv1connect.ConversationServiceHandler
	attachments   parleyv1connect.AttachmentServiceHandler
	files         parleyv1connect.FileServiceHandler
	vectorStores  parleyv1connect.VectorStoreServiceHandler
	projects      parleyv1connect.ProjectServiceHandler
	memories      parleyv1connect.MemoryServiceHandler
	batches       parleyv1connect.BatchServiceHandler
	webhooks      parleyv1connect.WebhookServiceHandler
	billing       parleyv1connect.BillingServiceHandler
	admin         parleyv1connect.AdminServiceHandler
	organizations parleyv1connect.OrganizationServiceHandler
}

// serviceNames are the Connect services, for health and reflection.
var serviceNames = []string{
	parleyv1connect.AuthServiceName,
	parleyv1connect.ApiKeyServiceName,
	parleyv1connect.ModelServiceName,
	parleyv1connect.ChatServiceName,
	parleyv1connect.EmbeddingServiceName,
	parleyv1connect.ConversationServiceName,
	parleyv1connect.AttachmentServiceName,
	parleyv1connect.FileServiceName,
	parleyv1connect.VectorStoreServiceName,
	parleyv1connect.ProjectServiceName,
	parleyv1connect.MemoryServiceName,
	parleyv1connect.BatchServiceName,
	parleyv1connect.WebhookServiceName,
	parleyv1connect.BillingServiceName,
	parleyv1connect.AdminServiceName,
	parleyv1connect.OrganizationServiceName,
}

// mountServices mounts the Connect services on mux, and gRPC health and
// reflection over them. The procedures open to anyone (AuthService, reading
// a share link, health, reflection) take publicOpts: small messages only.
// streamRequestMax is the largest streaming call read whole before it is
// detached; a larger one (a long pasted prompt) runs in place.
const streamRequestMax = 1 << 20

func mountServices(mux *http.ServeMux, opts, publicOpts []connect.HandlerOption, s services) healthChecker {
	mux.Handle(parleyv1connect.NewAuthServiceHandler(s.auth, publicOpts...))
	mux.Handle(parleyv1connect.NewApiKeyServiceHandler(s.apiKeys, opts...))
	mux.Handle(parleyv1connect.NewModelServiceHandler(s.models, opts...))
	// Their token streams leave net/http once the request is read, as the
	// compatible surfaces' do (over HTTP/1.1, by the Connect or gRPC
	// protocol: the SDKs; the web app's gRPC-Web runs in place).
	path, chat := parleyv1connect.NewChatServiceHandler(s.chat, opts...)
	mux.Handle(path, detach.Streams(chat, streamRequestMax,
		parleyv1connect.ChatServiceCompleteStreamProcedure, parleyv1connect.ChatServiceFollowBackgroundProcedure))
	mux.Handle(parleyv1connect.NewEmbeddingServiceHandler(s.embeddings, opts...))
	path, conversations := parleyv1connect.NewConversationServiceHandler(s.conversations, opts...)
	mux.Handle(path, detach.Streams(conversations, streamRequestMax,
		parleyv1connect.ConversationServiceSendMessageProcedure, parleyv1connect.ConversationServiceStreamGenerationProcedure,
		parleyv1connect.ConversationServiceRegenerateMessageProcedure, parleyv1connect.ConversationServiceContinueMessageProcedure))
	_, shared := parleyv1connect.NewConversationServiceHandler(s.conversations, publicOpts...)
	mux.Handle(parleyv1connect.ConversationServiceGetSharedConversationProcedure, shared)
	mux.Handle(parleyv1connect.NewAttachmentServiceHandler(s.attachments, opts...))
	mux.Handle(parleyv1connect.NewFileServiceHandler(s.files, opts...))
	mux.Handle(parleyv1connect.NewVectorStoreServiceHandler(s.vectorStores, opts...))
	mux.Handle(parleyv1connect.NewProjectServiceHandler(s.projects, opts...))
	mux.Handle(parleyv1connect.NewMemoryServiceHandler(s.memories, opts...))
	mux.Handle(parleyv1connect.NewBatchServiceHandler(s.batches, opts...))
	mux.Handle(parleyv1connect.NewWebhookServiceHandler(s.webhooks, opts...))
	mux.Handle(parleyv1connect.NewBillingServiceHandler(s.billing, opts...))
	mux.Handle(parleyv1connect.NewAdminServiceHandler(s.admin, opts...))
	mux.Handle(parleyv1connect.NewOrganizationServiceHandler(s.organizations, opts...))

	health := grpchealth.NewStaticChecker(serviceNames...)
	mux.Handle(grpchealth.NewHandler(health, publicOpts...))
	reflector := grpcreflect.NewStaticReflector(append(serviceNames, grpchealth.HealthV1ServiceName)...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector, publicOpts...))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector, publicOpts...))
	return healthChecker{health}
}

// healthChecker is the gRPC health of the gateway's services.
type healthChecker struct{ *grpchealth.StaticChecker }

// notServing marks every service, and the server, not serving: the
// gateway is shutting down.
func (h healthChecker) notServing() {
	for _, name := range append(serviceNames, "") {
		h.SetStatus(name, grpchealth.StatusNotServing)
	}
}

// writeConnectError writes the authenticator's refusals in Connect's JSON
// form (the routes outside the Connect services and the compatible surfaces).
func writeConnectError(w http.ResponseWriter, r *http.Request, err *connect.Error) {
	_ = connect.NewErrorWriter().Write(w, r, err)
}

// webOptions are the web app's security headers: HSTS when asked for, and
// the S3 endpoint in its Content-Security-Policy when blobs live there
// (the browser sends and fetches attachment bytes by presigned URL).
func webOptions(cfg *config.Serve) webapp.Options {
	o := webapp.Options{HSTSMaxAge: cfg.HSTSMaxAge}
	if u, err := url.Parse(cfg.S3Endpoint); err == nil && cfg.S3Endpoint != "" {
		o.Origins = append(o.Origins, u.Scheme+"://"+u.Host)
	}
	return o
}
