package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/parleyhq/parley/server/api"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/batch"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/blob"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/compat"
	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/obs/tracing"
	"github.com/parleyhq/parley/server/org"
	"github.com/parleyhq/parley/server/sso"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/server/usage"
	"github.com/parleyhq/parley/server/webapp"
	"github.com/parleyhq/parley/server/webhook"
	"github.com/parleyhq/parley/sse"
)

// serve runs the gateway until ctx is done. It reads as the wiring diagram
// of the system: observability, stores, services, middleware, server.
func serve(ctx context.Context, args []string, stdout, logOut io.Writer) error {
	fs := newFlagSet("serve")
	cfg := config.ServeFlags(fs)
	if err := parseFlags(fs, cfg.Groups, args, stdout); err != nil {
		return err
	}
	if err := cfg.RequestLog.Validate(); err != nil {
		return err
	}
	if err := cfg.Core.Validate(); err != nil {
		return err
	}
	if err := cfg.Batch.Validate(); err != nil {
		return err
	}
	if err := cfg.Webhook.Validate(); err != nil {
		return err
	}
	if err := cfg.Knowledge.Validate(); err != nil {
		return err
	}
	if err := cfg.SSO.Validate(); err != nil {
		return err
	}
	logger := obs.NewLogger(logOut, cfg.LogLevel)
	logger.Info("parley serve starting", "version", buildVersion())
	metrics := obs.NewMetrics()
	// Once the HTTP server has drained (srv.Serve returns), the background
	// work stops in this order: the live generations finish, the usage relay
	// ships what is left, the sweeps stop, the scheduler lets its workers go,
	// the last API key uses are written, the stores close, and the last
	// spans are exported.
	life := newLifecycle("generations", "relay", "sweeps", "scheduler", "auth", "stores", "tracing")
	defer life.Stop()
	tracerProvider, stopTracing, err := tracing.Setup(ctx, cfg.OTLPEndpoint, "parley-gateway")
	if err != nil {
		return err
	}
	life.OnStop("tracing", func() { _ = stopTracing(context.Background()) })

	// Stores (looked at first: a fresh data directory is a first start).
	created := noteFirstStart(cfg)
	stores, err := openStores(ctx, &cfg.Stores)
	if err != nil {
		return err
	}
	life.OnStop("stores", stores.Close)
	metrics.Registry.MustRegister(stores.Collectors...)

	// Authentication: sessions, API keys, the pre-auth limiter, the audit log.
	authn := auth.New(stores.Accounts, stores.Audit, stores.Limiter, time.Now, auth.Config{
		InsecureCookies: cfg.InsecureCookies, WebOrigins: cfg.WebOrigins, LoginRate: cfg.Auth.LoginRate,
		SignUp: cfg.Auth.SignUp, SignUpRateGlobal: cfg.Auth.SignUpRateGlobal,
		Logger: logger, Broadcast: stores.Broadcast,
	})
	if stores.SubscribeEvictions != nil {
		if err := stores.SubscribeEvictions(ctx, authn.Evict, logger); err != nil {
			return fmt.Errorf("subscribing to credential evictions: %w", err)
		}
	}
	life.Go("auth", authn.Run) // until the server has drained, so the last API key uses are written
	secret, err := stores.Secret(cfg.Secret, cfg.DataDir)
	if err != nil {
		return err
	}
	pages := api.PageTokens{Key: secret}
	first := created()

	// Attachments: blobs in the data directory (or S3) behind signed URLs.
	localBlobs, attachments, err := openAttachments(cfg, stores, secret, logger)
	if err != nil {
		return err
	}

	// Models, the scheduler and its workers (none given: one in-process sim).
	catalog, err := openCatalog(cfg.Models, logger)
	if err != nil {
		return err
	}
	sched, err := openScheduler(cfg, catalog, metrics, logger)
	if err != nil {
		return err
	}
	life.OnStop("scheduler", sched.Close)

	// The generation core: billing and limits, history, usage, live generations.
	bill := billing.New(stores.Ledger, time.Now, cfg.Billing.HoldTTL, logger)
	attachments.Balance = func(ctx context.Context, userID string) (int64, error) {
		b, err := bill.Balance(ctx, userID)
		return b.AvailableNanos, err
	}
	bill.RegisterMetrics(metrics.Registry)
	life.Go("sweeps", func(ctx context.Context) { bill.Sweep(ctx, cfg.Billing.SweepInterval) })
	attachments.Metrics = attach.NewMetrics(metrics.Registry)
	life.Go("sweeps", func(ctx context.Context) { attachments.Sweep(ctx, cfg.Attach.SweepInterval) })
	// Each usage record commits with its charge (Ledger.Settle); with
	// ClickHouse it waits in the ledger's outbox until the relay copies it.
	if stores.Outbox != nil {
		relay := usage.NewRelay(stores.Outbox, stores.Usage, metrics.Registry, logger, usage.Config{})
		life.OnStop("relay", relay.Close)
		bill.OnRecord = relay.Kick
	}
	tierLimits, err := openLimits(cfg.Limits, stores, sched, metrics, logger)
	if err != nil {
		return err
	}
	life.Go("sweeps", tierLimits.Load.Run)
	respCache, cacheByDefault, err := openResponseCache(ctx, cfg.Cache, stores.ResponseCache, metrics.Registry, logger)
	if err != nil {
		return err
	}
	core := &chat.Core{
		Models: catalog, Tokens: tokenize.Default(), Billing: bill, Router: sched,
		Logger: logger, Now: time.Now, APIPriority: cfg.Core.APIPriority, BackgroundPriority: cfg.Core.BackgroundPriority, AutoTitles: cfg.Core.AutoTitles, MaxPromptBytes: cfg.Core.MaxPromptBytes,
		Budgets: cfg.Core.Budgets, Limits: tierLimits, Conversations: stores.Conversations, Messages: stores.Messages,
		Generations: stores.Generations, Memories: stores.Memories, Background: life.Context("generations"), Attachments: attachments,
		Metrics: chat.NewMetrics(metrics.Registry), Cache: respCache, CacheByDefault: cacheByDefault,
	}
	life.Go("generations", core.ListenForCancels)
	life.OnStop("generations", core.Wait)

	// Connect options shared by every service: metrics, the store outage
	// rule, the test fault switch, tracing, auth, message sizes; the
	// procedures open to anyone take small messages only.
	outage := gateway.StoreOutage(stores.Checks())
	fault := watchFault(ctx, cfg.TestFaultFile, logger)
	handlerOpts, publicOpts, err := connectOptions(cfg, metrics, outage, fault, tracerProvider, authn)
	if err != nil {
		return err
	}

	// Services, with health and reflection over gRPC, gRPC-Web and Connect.
	mux := http.NewServeMux()
	conversations := &api.ConversationHandler{
		Core: core, Pages: pages, Search: stores.Search, Shares: stores.Shares, Attachments: stores.Attachments, Feedback: stores.Feedback,
		Prompts: stores.Prompts,
	}

	// Vector stores: files cut, embedded and indexed by whichever gateway
	// claims them first, searched by /v1/vector_stores and file_search.
	var knowledgeSvc *knowledge.Service
	if stores.VectorStores != nil && stores.Vectors != nil {
		knowledgeSvc = &knowledge.Service{Stores: stores.VectorStores, Index: stores.Vectors, Files: attachments, Embed: core,
			Users: stores.Accounts, Catalog: catalog, Tokens: core.Tokens, Config: cfg.Knowledge, Logger: logger, Now: time.Now}
		knowledgeSvc.Start()
		life.Go("sweeps", knowledgeSvc.Run)
		attachments.OnFileDeleted = knowledgeSvc.FileDeleted
		// ChatService's file_search, and web projects (their chats answer
		// from their files).
		core.Retriever, core.Projects = knowledgeSvc, stores.Projects
	}

	// Batches: claimed and run by whichever gateway is free, each line
	// through its endpoint's own handler on idle capacity.
	unsupported, err := compat.ParseUnsupported(cfg.OpenAIUnsupported)
	if err != nil {
		return err
	}
	compatCfg := compat.Config{Core: core, Catalog: catalog, Knowledge: knowledgeSvc, PingInterval: cfg.PingInterval, Outage: outage,
		Unsupported: unsupported, DroppedParams: compat.NewDroppedParams(metrics.Registry), Auth: authn,
		MaxElements: cfg.MaxRequestElements, Fault: fault, Observe: metrics.HTTP}
	var webhooks *webhook.Service
	if stores.Webhooks != nil {
		webhooks = &webhook.Service{Store: stores.Webhooks, Config: cfg.Webhook, Logger: logger, Now: time.Now}
		life.Go("sweeps", webhooks.Run)
		compatCfg.Events = webhooks
	}
	var batches *batch.Service
	if stores.Batches != nil {
		batches = &batch.Service{Store: stores.Batches, Files: attachments, Catalog: catalog, Exec: compat.BatchHandler(compatCfg),
			Keys:   stores.Accounts.GetAPIKey,
			Config: cfg.Batch, Logger: logger, Now: time.Now}
		if webhooks != nil {
			batches.Events = webhooks
		}
		batches.IdleSlots = sched.IdleSlots
		batches.Start()
		life.Go("sweeps", batches.Run)
		compatCfg.Batches = batches
	}

	orgs := &org.Service{
		Orgs: stores.Organizations, Accounts: stores.Accounts, Ledger: stores.Ledger, Audit: stores.Audit, Records: stores.Usage,
		Auth: authn, Catalog: catalog, Logger: logger, Now: time.Now,
	}
	orgHandler := &api.OrganizationHandler{Orgs: orgs, Audit: stores.Audit, Pages: pages}
	authHandler := &api.AuthHandler{Auth: authn}
	if cfg.SSO.Enabled() {
		// Sign-in through the identity provider: plain HTTP redirects,
		// ending in the session cookie a password login sets.
		ssoHandler := metrics.HTTP("sso", &sso.Handler{Config: cfg.SSO, Auth: authn, Orgs: orgs, Logger: logger})
		mux.Handle(sso.LoginPath, ssoHandler)
		mux.Handle(sso.CallbackPath, ssoHandler)
		authHandler.SSOLoginURL, authHandler.SSOName = sso.LoginPath, cfg.SSO.Name
	}
	health := mountServices(mux, handlerOpts, publicOpts, services{
		auth:          authHandler,
		apiKeys:       &api.ApiKeyHandler{Auth: authn, Pages: pages},
		models:        &api.ModelHandler{Catalog: catalog},
		chat:          &api.ChatHandler{Core: core},
		embeddings:    &api.EmbeddingHandler{Core: core},
		conversations: conversations,
		attachments:   &api.AttachmentHandler{Attachments: attachments},
		files:         &api.FileHandler{Attachments: attachments, Pages: pages},
		vectorStores:  &api.VectorStoreHandler{Knowledge: knowledgeSvc, Pages: pages, Now: time.Now},
		projects: &api.ProjectHandler{Projects: core.Projects, Knowledge: knowledgeSvc, Conversations: conversations,
			Pages: pages, Now: time.Now},
		memories: &api.MemoryHandler{Memories: core.Memories, Pages: pages, Now: time.Now},
		batches:  &api.BatchHandler{Batches: batches, Pages: pages},
		webhooks: &api.WebhookHandler{Webhooks: webhooks, Pages: pages},
		billing: &api.BillingHandler{
			Billing: bill, Usage: stores.Usage, Pages: pages, Limits: tierLimits, Catalog: catalog,
		},
		admin: &api.AdminHandler{
			Auth: authn, Billing: bill, Scheduler: sched, Usage: stores.Usage, Audit: stores.Audit, Pages: pages, Logger: logger, Catalog: catalog,
			Batches: batches, Feedback: stores.Feedback,
		},
		organizations: orgHandler,
	})

	// The SSE form of every server-streaming RPC, over the same handlers.
	mux.Handle(sse.Prefix, metrics.HTTP("sse", &sse.Adapter{Handler: mux, KeepAlive: cfg.PingInterval}))

	// The compatible surfaces (OpenAI, Anthropic), over the same core.
	mux.Handle("/v1/", compat.New(compatCfg))

	// Plain HTTP endpoints.
	checks := stores.Checks()
	checks["workers"] = sched.Ready
	checks["models"] = catalog.Ready // refused unpriced models: said, not unready
	mux.Handle("GET /healthz", metrics.HTTP("healthz", gateway.Healthz()))
	mux.Handle("GET /readyz", metrics.HTTP("readyz", gateway.Readyz(checks)))
	mux.Handle("GET /metrics", metrics.HTTP("metrics", metrics.Handler()))
	mux.Handle(blob.Prefix, metrics.HTTP("blob", localBlobs)) // signed URLs: the URL is the credential
	// Conversation downloads (Content-Disposition), over ExportConversation.
	exportAuth := authn.Middleware(auth.AccessAny, writeConnectError)
	mux.Handle(api.ExportPath, metrics.HTTP("export", exportAuth(http.HandlerFunc(conversations.ServeExport))))
	// Organisation usage as CSV, over GetOrganizationUsage (a browser session).
	orgExportAuth := authn.Middleware(auth.AccessSession, writeConnectError)
	mux.Handle(api.UsageCSVPath, metrics.HTTP("export", orgExportAuth(http.HandlerFunc(orgHandler.ServeUsageCSV))))

	// The browser chat app, embedded; registered at "/" so every API route wins.
	web := webapp.New(webOptions(cfg))
	mux.Handle(api.SharePagePath, obs.Route("share_page", conversations.ServeSharePage(web)))
	mux.Handle("/", obs.Route("webapp", web))

	// One line per request, bounded (health and metrics only at debug).
	requestLog := func(h http.Handler) http.Handler { return h }
	if cfg.RequestLog.Mode == "on" {
		rl := obs.NewRequestLog(logger, cfg.RequestLog.Rate, "/healthz", "/readyz", "/metrics", "/grpc.health.v1.Health/")
		life.Go("sweeps", rl.Run)
		requestLog = rl.Middleware
	}
	handler := gateway.Chain(mux,
		gateway.RealIP(cfg.TrustedProxies),
		gateway.RequestID,
		requestLog,
		cacheHeaders(respCache != nil),
		gateway.BodyReadTimeout(cfg.BodyReadTimeout),
		gateway.CORS(cfg.WebOrigins),
		gateway.Except(blob.Prefix, gateway.BodyLimit(cfg.MaxBodyBytes)), // an upload URL bounds its own length
		auth.RecordOrigin,
		authn.Gate, // credentials checked from the headers, before a body is read
	)

	if cfg.DebugListen != "" {
		go serveDebug(cfg.DebugListen, logger) // until the process ends
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
		OnShutdown:        health.notServing,
		OnListen: func(addr net.Addr) {
			if first != nil {
				first.URL = webURL(addr)
				sayFirstStart(first, logOut, logger)
			}
		},
	}
	return srv.Serve(ctx, ln)
}
