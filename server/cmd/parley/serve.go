package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"connectrpc.com/otelconnect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/api"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/blob"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/respcache"
	"github.com/parleyhq/parley/server/scheduler"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/server/usage"
	"github.com/parleyhq/parley/server/webapp"
	"github.com/parleyhq/parley/server/worker/sim"
	"github.com/parleyhq/parley/sse"
)

// serve runs the gateway until ctx is done. It reads as the wiring diagram
// of the system: observability, stores, services, middleware, server.
func serve(ctx context.Context, args []string, logOut io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := config.ServeFlags(fs)
	loginRate := fs.Int64("login-rate", auth.DefaultLoginRate, "Login and SignUp attempts allowed per minute per client IP (and SignUp per email); wrong passwords back off per account and address (README: Security notes)")
	modelsFile := fs.String("models-file", "", "YAML catalog of models (default: the embedded sim models)")
	holdTTL := fs.Duration("hold-ttl", 15*time.Minute, "how long an unsettled billing hold lives before the sweeper releases it")
	sweepEvery := fs.Duration("sweep-interval", 30*time.Second, "how often expired billing holds are released")
	apiPriority := fs.Int("api-priority", scheduler.PriorityPro, "scheduling priority of API requests among the web tiers (0 free … 3 max)")
	pingEvery := fs.Duration("ping-interval", 10*time.Second, "keep-alive comment interval on quiet SSE streams")
	queueLimit := fs.Int("queue-limit", 256, "requests per model that may wait for a worker before new ones are refused")
	maxQueueWait := fs.Duration("max-queue-wait", 30*time.Second, "longest a request waits for a worker")
	// Worker pools (README: Worker pools), tried in order: the first is primary.
	var pools []scheduler.Pool
	fs.Func("worker-pool", "a named, ordered pool of workers, name=host:port[,host:port…]; repeat it, primary first (instead of --workers)", func(v string) error {
		p, err := scheduler.ParsePool(v)
		pools = append(pools, p)
		return err
	})
	spillWait := fs.Duration("pool-spill-wait", 500*time.Millisecond, "queue wait for a busy pool past which a request goes on to the next pool, and the pool counts as saturated")
	spillHold := fs.Duration("pool-spill-hold", 10*time.Second, "how long a pool counts as saturated after a request waited past --pool-spill-wait for it")
	// Scaling signal (README: Scaling signals): the scaling article's rule.
	scaleWindow := fs.Duration("scale-window", time.Minute, "window of queue waits and idle workers behind the recommended worker count (parley_scheduler_pool_workers_recommended)")
	scaleUpWait := fs.Duration("scale-up-wait", 5*time.Second, "recent queue wait (p95 over --scale-window) past which a pool is recommended one more worker")
	scaleDownWait := fs.Duration("scale-down-wait", time.Second, "recent queue wait under which a pool with a worker idle all window is recommended one fewer")
	// Models the workers serve that the catalog does not price (README: Models from workers).
	unpricedMode := fs.String("unpriced-models", "refuse", "models the workers serve that --models-file does not price: refuse (logged, in /readyz, a clear error to clients) or default (served at the --unpriced-* prices)")
	unpricedIn := fs.Int64("unpriced-input-price", -1, "with --unpriced-models=default: their price per million prompt tokens, in nano-USD")
	unpricedOut := fs.Int64("unpriced-output-price", -1, "with --unpriced-models=default: their price per million completion tokens, in nano-USD")
	unpricedWindow := fs.Int64("unpriced-context-window", 32_768, "with --unpriced-models=default: their context window, in tokens")
	unpricedMaxOut := fs.Int64("unpriced-max-output-tokens", 4096, "with --unpriced-models=default: their completion bound, in tokens")
	defaults := attach.DefaultLimits()
	imageBytes := fs.Int64("attachment-image-bytes", defaults.ImageBytes, "largest image attachment, in bytes")
	documentBytes := fs.Int64("attachment-document-bytes", defaults.DocumentBytes, "largest document attachment, in bytes")
	quotaBytes := fs.Int64("attachment-quota-bytes", defaults.UserBytes, "attachment storage per user, in bytes")
	blobURLExpiry := fs.Duration("blob-url-expiry", blob.MaxURLExpiry, "how long signed upload and download URLs live (at most 15m)")
	blobBaseURL := fs.String("blob-base-url", "", "absolute base of signed blob URLs (empty: relative to the gateway)")
	openaiUnsupported := fs.String("openai-unsupported", "refuse", "OpenAI request fields Parley cannot honour: refuse (400 naming the field) or drop (count in parley_openai_dropped_params_total, log once per field)")
	debugListen := fs.String("debug-listen", "", "address for Go's /debug/pprof profiles (empty: off; keep it private)")
	faultFile := fs.String("test-fault-file", "", "TESTING ONLY, never in production: a JSON file ({\"latency\":\"700ms\",\"error_ratio\":0.5}) whose latency and share of 5xx are added to every RPC and /v1 request, re-read on change (the region health checker's tests)")
	// The budgets of one request, checked in order of cheapness (README: Budgets).
	budgets := chat.DefaultBudgets()
	fs.IntVar(&budgets.PartsPerMessage, "max-parts-per-message", budgets.PartsPerMessage, "parts one message may have")
	fs.IntVar(&budgets.PartsPerRequest, "max-parts-per-request", budgets.PartsPerRequest, "parts one request may have, all messages together")
	fs.IntVar(&budgets.Attachments, "max-attachments-per-request", budgets.Attachments, "inline images and documents and attachment references one request may have")
	fs.Int64Var(&budgets.AttachmentBytes, "max-attachment-bytes-per-request", budgets.AttachmentBytes, "their declared sizes (inline bytes, uploads' prepared forms) summed, checked before any is loaded")
	fs.IntVar(&budgets.ExactCountBytes, "exact-count-bytes", budgets.ExactCountBytes, "prompt text up to which an API request is tokenized before its hold; longer ones are held at a token per byte and counted after")
	maxPromptBytes := fs.Int("max-prompt-bytes", 8<<20, "largest prompt text of a request, refused before it is tokenized")
	maxElements := fs.Int("max-request-elements", 100_000, "messages, strings and JSON values one request body may decode into, counted before it is unmarshalled")
	publicBodyBytes := fs.Int64("max-public-body-bytes", 64<<10, "largest message, after decompression, of the procedures open to anyone (SignUp, Login, GetSharedConversation, health, reflection)")
	inflateBytes := fs.Int64("document-inflate-bytes", defaults.InflateBytes, "bytes one document's extraction may decompress and parse; there it stops and the text is cut")
	prepareConcurrency := fs.Int("prepare-concurrency", max(2, runtime.GOMAXPROCS(0)), "image decodes and document extractions running at once")
	preparePerUser := fs.Int("prepare-per-user", max(1, runtime.GOMAXPROCS(0)/4), "of those, how many one user may hold")
	prepareQueue := fs.Int("prepare-queue-per-user", defaults.PerUserQueue, "how many more of one user's wait for their share; past that they are refused")
	// Seed 003's elastic gateway: load-adaptive request rates and the
	// response cache (README: Elastic gateway).
	rateLimits := fs.String("rate-limits", "", "per-user request rates by tier, tightened under load: off, or TIER=PER_MINUTE/BURST[@LOAD:FACTOR]...,… replacing the defaults (free=600/20@0.7:0.5, plus=600/20@0.8:0.5, pro=600/20@0.9:0.5, max=600/20); TIER=off drops one")
	loadWindow := fs.Duration("load-window", 5*time.Second, "span the workers' load is averaged over for the request rates")
	loadKey := fs.String("load-key", "", "Redis hash the gateways of one deployment share their load figures in (empty: parley:load); deployments sharing a Redis need their own")
	cacheMode := fs.String("response-cache", "opt-in", "response cache of deterministic API requests: off, opt-in (Parley-Cache: on) or on (unless Parley-Cache: off)")
	cacheEntries := fs.Int("response-cache-entries", 1000, "answers the response cache holds in this process")
	cacheBytes := fs.Int64("response-cache-bytes", 64<<20, "bytes the response cache holds in this process")
	cacheTTL := fs.Duration("response-cache-ttl", 60*time.Second, "how long an answer lives in this process")
	cacheRedisTTL := fs.Duration("response-cache-redis-ttl", 300*time.Second, "how long an answer lives in Redis")
	cacheRedisURL := fs.String("response-cache-redis-url", "", "Redis for the response cache's shared level (empty: --redis-url's; none: this process only); when it is down the cache skips it")
	if err := config.Parse(fs, args, os.Getenv); err != nil {
		return err
	}
	logger := obs.NewLogger(logOut, cfg.LogLevel)
	metrics := obs.NewMetrics()
	tracerProvider, stopTracing, err := obs.Tracing(ctx, cfg.OTLPEndpoint, "parley-gateway")
	if err != nil {
		return err
	}
	defer stopTracing(context.Background())

	// Stores.
	stores, err := openStores(ctx, cfg)
	if err != nil {
		return err
	}
	defer stores.Close()
	metrics.Registry.MustRegister(stores.Collectors...)

	// Authentication: sessions, API keys, the pre-auth limiter, the audit log.
	authn := auth.New(stores.Accounts, stores.Audit, stores.Limiter, time.Now, auth.Config{
		InsecureCookies: cfg.InsecureCookies,
		WebOrigins:      cfg.WebOrigins,
		LoginRate:       *loginRate,
		Logger:          logger,
		Broadcast:       stores.Broadcast,
	})
	if stores.SubscribeEvictions != nil {
		if err := stores.SubscribeEvictions(ctx, authn.Evict, logger); err != nil {
			return fmt.Errorf("subscribing to credential evictions: %w", err)
		}
	}
	// Runs until the server has drained, so the last API key uses are written.
	authCtx, stopAuth := context.WithCancel(context.Background())
	authDone := make(chan struct{})
	go func() { authn.Run(authCtx); close(authDone) }()
	defer func() { stopAuth(); <-authDone }()
	secret, err := stores.Secret(cfg)
	if err != nil {
		return err
	}
	pages := api.PageTokens{Key: secret}

	// Attachments: blobs in the data directory behind signed URLs, checked
	// and prepared once when an upload completes.
	localBlobs, err := blob.NewLocal(filepath.Join(cfg.DataDir, "blobs"), secret, *blobBaseURL, time.Now)
	if err != nil {
		return err
	}
	var blobs blob.Blobs = localBlobs
	if stores.Blobs != nil {
		blobs = stores.Blobs // S3: clients send and fetch the bytes through presigned URLs
	}
	attachments := &attach.Service{
		Store: stores.Attachments, Blobs: blobs, URLExpiry: *blobURLExpiry, Now: time.Now, Logger: logger,
		Checker: attach.NewChecker(attach.Limits{ImageBytes: *imageBytes, DocumentBytes: *documentBytes, UserBytes: *quotaBytes,
			InflateBytes: *inflateBytes, Concurrency: *prepareConcurrency, PerUser: *preparePerUser, PerUserQueue: *prepareQueue}),
	}

	// Models, the scheduler and its workers (none given: one in-process sim).
	catalog, err := models.Load(*modelsFile)
	if err != nil {
		return err
	}
	unpriced, err := models.ParseUnpriced(*unpricedMode, *unpricedIn, *unpricedOut, *unpricedWindow, *unpricedMaxOut)
	if err != nil {
		return err
	}
	catalog.SetUnpriced(unpriced, logger)
	workerToken, err := config.ReadToken("worker-token", cfg.WorkerToken, cfg.WorkerTokenFile)
	if err != nil {
		return err
	}
	if (len(cfg.Workers) > 0 || len(pools) > 0) && workerToken == "" {
		logger.Warn("no --worker-token: the workers must accept calls without one (loopback, or --insecure-no-worker-token)")
	}
	sched, err := scheduler.New(scheduler.Config{
		Workers: cfg.Workers, Pools: pools, SpillWait: *spillWait, SpillHold: *spillHold,
		Registerer: metrics.Registry, QueueLimit: *queueLimit, MaxQueueWait: *maxQueueWait,
		WorkerToken: workerToken, OnModels: catalog.Learn,
		ScaleWindow: *scaleWindow, ScaleUpWait: *scaleUpWait, ScaleDownWait: *scaleDownWait,
	}, logger)
	if err != nil {
		return err
	}
	defer sched.Close()
	metrics.RegisterWorkerLoad(func() []obs.WorkerLoad {
		var out []obs.WorkerLoad
		for _, w := range sched.Workers() {
			out = append(out, obs.WorkerLoad{Worker: w.Address, Running: w.Load.Running, Waiting: w.Load.Waiting, MaxBatch: w.Load.MaxBatch})
		}
		return out
	})
	if len(cfg.Workers) == 0 && len(pools) == 0 {
		var ids []string
		for _, m := range catalog.All() {
			ids = append(ids, m.ID)
		}
		sched.AddWorker("in-process", sim.New(sim.Config{Models: ids, TimeScale: cfg.SimTimeScale}))
	}

	// The generation core: billing and limits, history, usage, live generations.
	bill := billing.New(stores.Ledger, time.Now, *holdTTL, logger)
	bill.Holds = prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_billing_holds_outstanding",
		Help: "Billing holds this gateway made and has not settled yet (requests in flight)."})
	metrics.Registry.MustRegister(bill.Holds)
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	defer stopSweep()
	go bill.Sweep(sweepCtx, *sweepEvery)
	go attachments.Sweep(sweepCtx, 10*time.Minute)
	// Each usage record commits with its charge (Ledger.Settle); with
	// ClickHouse it waits in the ledger's outbox until the relay copies it.
	if stores.Outbox != nil {
		relay := usage.NewRelay(stores.Outbox, stores.Usage, metrics.Registry, logger, usage.Config{})
		defer relay.Close()
		bill.OnRecord = relay.Kick
	}
	tierLimits := limits.New(stores.Limiter, time.Now)
	if tierLimits.Rates, err = limits.ParseRates(*rateLimits); err != nil {
		return err
	}
	hostname, _ := os.Hostname()
	load, err := limits.NewLoad(limits.LoadConfig{
		Sample: func() (float64, float64) { return limits.SchedulerLoad(sched.Workers()) },
		Window: *loadWindow, Board: stores.board(*loadKey), Gateway: fmt.Sprintf("%s:%d:%s", hostname, os.Getpid(), rand.Text()[:8]),
		Rates: tierLimits.Rates, Registerer: metrics.Registry, Logger: logger,
	})
	if err != nil {
		return err
	}
	tierLimits.Load = load
	go load.Run(sweepCtx)
	respCache, cacheByDefault, err := openResponseCache(ctx, *cacheMode, *cacheRedisURL, stores.ResponseCache, respcache.Config{
		LocalTTL: *cacheTTL, LocalEntries: *cacheEntries, LocalBytes: *cacheBytes, RemoteTTL: *cacheRedisTTL,
		Registerer: metrics.Registry, Logger: logger,
	})
	if err != nil {
		return err
	}
	generations, stopGenerations := context.WithCancel(context.Background())
	core := &chat.Core{
		Models: catalog, Tokens: tokenize.Default(), Billing: bill, Router: sched,
		Logger: logger, Now: time.Now, APIPriority: *apiPriority, MaxPromptBytes: *maxPromptBytes, Budgets: budgets,
		Limits: tierLimits, Conversations: stores.Conversations, Messages: stores.Messages,
		Generations: stores.Generations, Background: generations, Attachments: attachments,
		Metrics: chat.NewMetrics(metrics.Registry),
		Cache:   respCache, CacheByDefault: cacheByDefault,
	}
	go core.ListenForCancels(generations)
	defer func() { stopGenerations(); core.Wait() }()

	// Connect options shared by every service: metrics, tracing, auth, message size.
	// A store outage turns internal errors into unavailable + retry.
	outage := gateway.StoreOutage(stores.Checks())
	interceptors := []connect.Interceptor{metrics.Interceptor(), outage}
	var fault *gateway.Fault // TEST ONLY: inside the metrics, so the checker sees it
	if *faultFile != "" {
		logger.Warn("TEST FAULT SWITCH ON: answers may be slowed down or failed on purpose", "file", *faultFile)
		fault = gateway.WatchFault(ctx, *faultFile, logger)
		interceptors = append(interceptors, fault)
	}
	if cfg.OTLPEndpoint != "" { // even a no-op tracer costs a tenth of a small call
		otelInterceptor, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(tracerProvider), otelconnect.WithoutMetrics())
		if err != nil {
			return err
		}
		interceptors = append(interceptors, otelInterceptor)
	}
	handlerOpts := []connect.HandlerOption{
		connect.WithInterceptors(append(interceptors, authn.Interceptor())...),
		// Bytes after decompression, and elements before unmarshalling.
		gateway.DecodeLimits(cfg.MaxBodyBytes, *maxElements),
		// A streamed delta is a few bytes: gzip per message would cost more
		// CPU than the whole rest of the request path.
		connect.WithCompressMinBytes(4096),
	}

	// Services.
	mux := http.NewServeMux()
	services := []string{
		parleyv1connect.AuthServiceName,
		parleyv1connect.ApiKeyServiceName,
		parleyv1connect.ModelServiceName,
		parleyv1connect.ChatServiceName,
		parleyv1connect.EmbeddingServiceName,
		parleyv1connect.ConversationServiceName,
		parleyv1connect.AttachmentServiceName,
		parleyv1connect.BillingServiceName,
		parleyv1connect.AdminServiceName,
	}
	// Procedures open to anyone take small messages only.
	publicOpts := append(slices.Clip(handlerOpts), gateway.DecodeLimits(*publicBodyBytes, 1000))
	mux.Handle(parleyv1connect.NewAuthServiceHandler(&api.AuthHandler{Auth: authn}, publicOpts...))
	mux.Handle(parleyv1connect.NewApiKeyServiceHandler(&api.ApiKeyHandler{Auth: authn, Pages: pages}, handlerOpts...))
	mux.Handle(parleyv1connect.NewModelServiceHandler(&api.ModelHandler{Catalog: catalog}, handlerOpts...))
	mux.Handle(parleyv1connect.NewChatServiceHandler(&api.ChatHandler{Core: core}, handlerOpts...))
	mux.Handle(parleyv1connect.NewEmbeddingServiceHandler(&api.EmbeddingHandler{Core: core}, handlerOpts...))
	conversations := &api.ConversationHandler{
		Core: core, Pages: pages, Search: stores.Search, Shares: stores.Shares, Attachments: stores.Attachments,
	}
	mux.Handle(parleyv1connect.NewConversationServiceHandler(conversations, handlerOpts...))
	// Reading a share link is open to anyone: small messages only, as for the
	// other public procedures.
	_, shared := parleyv1connect.NewConversationServiceHandler(conversations, publicOpts...)
	mux.Handle(parleyv1connect.ConversationServiceGetSharedConversationProcedure, shared)
	mux.Handle(parleyv1connect.NewAttachmentServiceHandler(&api.AttachmentHandler{Attachments: attachments}, handlerOpts...))
	mux.Handle(parleyv1connect.NewBillingServiceHandler(&api.BillingHandler{
		Billing: bill, Usage: stores.Usage, Pages: pages, Limits: tierLimits, Catalog: catalog,
	}, handlerOpts...))
	mux.Handle(parleyv1connect.NewAdminServiceHandler(&api.AdminHandler{
		Auth: authn, Billing: bill, Scheduler: sched, Usage: stores.Usage, Audit: stores.Audit, Pages: pages, Logger: logger, Catalog: catalog,
	}, handlerOpts...))

	// Health and reflection over gRPC, gRPC-Web and Connect.
	health := grpchealth.NewStaticChecker(services...)
	mux.Handle(grpchealth.NewHandler(health, publicOpts...))
	reflector := grpcreflect.NewStaticReflector(append(services, grpchealth.HealthV1ServiceName)...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector, publicOpts...))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector, publicOpts...))

	// The SSE form of every server-streaming RPC, over the same handlers.
	mux.Handle(sse.Prefix, metrics.HTTP("sse", &sse.Adapter{Handler: mux, KeepAlive: *pingEvery}))

	// The OpenAI-compatible surface, over the same core.
	unsupported, err := api.ParseUnsupported(*openaiUnsupported)
	if err != nil {
		return err
	}
	droppedParams := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_openai_dropped_params_total",
		Help: "OpenAI request fields dropped by --openai-unsupported=drop, by field.",
	}, []string{"field"})
	metrics.Registry.MustRegister(droppedParams)
	openai := &api.OpenAIHandler{Core: core, Catalog: catalog, PingInterval: *pingEvery, Outage: outage,
		Unsupported: unsupported, DroppedParams: droppedParams}
	v1 := authn.Middleware(auth.AccessAny, func(w http.ResponseWriter, r *http.Request, err *connect.Error) {
		api.WriteOpenAIError(w, r, err)
	})
	v1 = gateway.Then(v1, gateway.JSONElements(*maxElements)) // counted as read, after authentication
	if fault != nil {
		v1 = gateway.Then(v1, fault.Middleware)
	}
	mux.Handle("POST /v1/chat/completions", metrics.HTTP("openai_chat_completions", v1(http.HandlerFunc(openai.ChatCompletions))))
	mux.Handle("POST /v1/embeddings", metrics.HTTP("openai_embeddings", v1(http.HandlerFunc(openai.Embeddings))))
	mux.Handle("GET /v1/models", metrics.HTTP("openai_models", v1(http.HandlerFunc(openai.Models))))
	mux.Handle("GET /v1/models/{id}", metrics.HTTP("openai_models", v1(http.HandlerFunc(openai.Model))))
	mux.Handle("POST /v1/responses", metrics.HTTP("openai_responses", v1(http.HandlerFunc(openai.CreateResponse))))
	mux.Handle("GET /v1/responses/{id}", metrics.HTTP("openai_responses_get", v1(http.HandlerFunc(openai.GetResponse))))
	mux.Handle("DELETE /v1/responses/{id}", metrics.HTTP("openai_responses_delete", v1(http.HandlerFunc(openai.DeleteResponse))))
	mux.Handle("GET /v1/responses/{id}/input_items", metrics.HTTP("openai_responses_input_items", v1(http.HandlerFunc(openai.ListResponseInputItems))))
	mux.Handle("POST /v1/completions", metrics.HTTP("openai_completions", v1(http.HandlerFunc(openai.Completions))))
	// Anthropic's Messages API (x-api-key or Bearer; errors in Anthropic's JSON).
	anthropic := &api.AnthropicHandler{OpenAI: openai}
	anthropicV1 := authn.Middleware(auth.AccessAny, func(w http.ResponseWriter, r *http.Request, err *connect.Error) {
		api.WriteAnthropicError(w, r, err)
	})
	anthropicV1 = gateway.Then(anthropicV1, gateway.JSONElements(*maxElements))
	mux.Handle("POST /v1/messages", metrics.HTTP("anthropic_messages", anthropicV1(http.HandlerFunc(anthropic.Messages))))
	mux.Handle("POST /v1/messages/count_tokens", metrics.HTTP("anthropic_count_tokens", anthropicV1(http.HandlerFunc(anthropic.CountTokens))))
	mux.Handle("/v1/", metrics.HTTP("openai_not_found", http.HandlerFunc(openai.NotFound)))

	// Plain HTTP endpoints.
	checks := stores.Checks()
	checks["workers"] = sched.Ready
	checks["models"] = catalog.Ready // refused unpriced models: said, not unready
	mux.Handle("GET /healthz", metrics.HTTP("healthz", gateway.Healthz()))
	mux.Handle("GET /readyz", metrics.HTTP("readyz", gateway.Readyz(checks)))
	mux.Handle("GET /metrics", metrics.HTTP("metrics", metrics.Handler()))
	mux.Handle(blob.Prefix, metrics.HTTP("blob", localBlobs)) // signed URLs: the URL is the credential
	// Conversation downloads (Content-Disposition), over ExportConversation.
	exportAuth := authn.Middleware(auth.AccessAny, func(w http.ResponseWriter, r *http.Request, err *connect.Error) {
		_ = connect.NewErrorWriter().Write(w, r, err)
	})
	mux.Handle(api.ExportPath, metrics.HTTP("export", exportAuth(http.HandlerFunc(conversations.ServeExport))))

	// The browser chat app, embedded; registered at "/" so every API route wins.
	mux.Handle("/", webapp.New())

	handler := gateway.Chain(mux,
		gateway.RequestID,
		cacheHeaders(respCache != nil),
		gateway.BodyReadTimeout(cfg.BodyReadTimeout),
		gateway.CORS(cfg.WebOrigins),
		gateway.Except(blob.Prefix, gateway.BodyLimit(cfg.MaxBodyBytes)), // an upload URL bounds its own length
		auth.RecordOrigin,
		authn.Gate, // credentials checked from the headers, before a body is read
	)

	if *debugListen != "" {
		go func() {
			dbg := http.NewServeMux()
			dbg.HandleFunc("/debug/pprof/", pprof.Index)
			dbg.HandleFunc("/debug/pprof/profile", pprof.Profile)
			dbg.HandleFunc("/debug/pprof/trace", pprof.Trace)
			logger.Warn("profiling endpoint on", "addr", *debugListen, "err", http.ListenAndServe(*debugListen, dbg))
		}()
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &gateway.Server{
		Handler: handler,
		Grace:   cfg.ShutdownGrace,
		Logger:  logger,
		// Bodies are timed by gateway.BodyReadTimeout, in the chain.
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		OnShutdown: func() {
			for _, name := range append(services, "") {
				health.SetStatus(name, grpchealth.StatusNotServing)
			}
		},
	}
	return srv.Serve(ctx, ln)
}
