package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/parleyhq/parley/gen/parley/worker/v1/workerv1connect"
	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/lag"
	"github.com/parleyhq/parley/server/obs"
	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/server/worker/openai"
	"github.com/parleyhq/parley/server/worker/sim"
)

// runWorker serves WorkerService beside an inference engine until ctx is
// done: the sim, or an OpenAI-compatible upstream.
func runWorker(ctx context.Context, args []string, stdout, logOut io.Writer) error {
	fs := newFlagSet("worker")
	var (
		listen, engineName, upstream, apiKey, logLevel string
		token, tokenFile                               string
		noToken                                        bool
		models                                         []string
		timeScale                                      float64
		maxBatch                                       int
		grace                                          time.Duration
	)
	fs.StringVar(&listen, "listen", "127.0.0.1:7070", "address to listen on")
	fs.StringVar(&engineName, "engine", "sim", "inference engine: sim or openai")
	fs.StringVar(&upstream, "upstream", "", "openai engine: the upstream's OpenAI base URL, with /v1")
	fs.StringVar(&apiKey, "upstream-api-key", "", "openai engine: bearer token for the upstream")
	fs.Func("models", "comma-separated model ids served (sim default: sim-small,sim-large,sim-embed — an id containing \"embed\" embeds; openai: the upstream's list)", func(s string) error {
		models = nil
		for _, m := range strings.Split(s, ",") {
			if m = strings.TrimSpace(m); m != "" {
				models = append(models, m)
			}
		}
		return nil
	})
	fs.Float64Var(&timeScale, "time-scale", 1, "sim engine: time scale (1 real pace, 0 no waiting)")
	fs.IntVar(&maxBatch, "max-batch", 0, "sequences decoded at once (sim default 32; openai: reported to the scheduler, default learned from the upstream where it tells — llama.cpp, TGI, SGLang — else none: the gateways admit by the upstream's measured queueing)")
	fs.DurationVar(&grace, "shutdown-grace", 30*time.Second, "how long open generations may finish after SIGTERM")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	debugListen := fs.String("debug-listen", "", "address for Go's /debug/pprof profiles (empty: off; keep it private)")
	fs.StringVar(&token, "worker-token", "", "shared secret every WorkerService call must carry (Authorization: Bearer); give the gateways the same --worker-token")
	fs.StringVar(&tokenFile, "worker-token-file", "", "file holding the worker token (instead of --worker-token)")
	fs.BoolVar(&noToken, "insecure-no-worker-token", false, "serve without a worker token on a non-loopback address: anyone who reaches the port generates for free")
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return err
	}
	logger := obs.NewLogger(logOut, logLevel)
	token, err := config.ReadToken("worker-token", token, tokenFile)
	if err != nil {
		return err
	}
	if token == "" && !worker.IsLoopback(listen) {
		if !noToken {
			return fmt.Errorf("--listen %s is reachable from other hosts and no --worker-token is set: anyone who reaches it "+
				"could generate without billing or limits. Give the worker and the gateways the same --worker-token "+
				"(or PARLEY_WORKER_TOKEN, or --worker-token-file), or pass --insecure-no-worker-token on a network you trust", listen)
		}
		logger.Warn("INSECURE: no worker token on a non-loopback address; anyone who can reach this port can generate without billing or limits",
			"listen", listen)
	}
	if *debugListen != "" {
		go serveDebug(*debugListen, logger)
	}

	var engine worker.Engine
	switch engineName {
	case "sim":
		engine = sim.New(sim.Config{Models: models, MaxBatch: maxBatch, TimeScale: timeScale})
	case "openai":
		if upstream == "" {
			return fmt.Errorf("--upstream is required with --engine openai")
		}
		e, err := openai.New(ctx, openai.Config{BaseURL: upstream, APIKey: apiKey, Models: models, MaxBatch: maxBatch, Logger: logger})
		if err != nil {
			return err
		}
		defer e.Close()
		engine = e
	default:
		return fmt.Errorf("--engine: want sim or openai, got %q", engineName)
	}

	mux := http.NewServeMux()
	probe := lag.Start() // reported with the load: the gateways set the worker's own delays aside
	defer probe.Close()
	service := &worker.Service{Engine: engine, EngineName: engineName, Logger: logger, Token: token, Lag: probe.Lag, Wake: probe.Wake}
	// Deltas are a few bytes: compressing each one costs far more than it saves.
	mux.Handle(service.Handler(connect.WithReadMaxBytes(64<<20), connect.WithCompressMinBytes(4096)))
	health := grpchealth.NewStaticChecker(workerv1connect.WorkerServiceName)
	mux.Handle(grpchealth.NewHandler(health))
	mux.Handle("GET /healthz", gateway.Healthz())

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logger.Info("worker starting", "engine", engineName, "models", fmt.Sprint(modelIDs(engine)), "worker_token", token != "")
	srv := &gateway.Server{
		Handler: mux,
		Grace:   grace,
		Logger:  logger,
		OnShutdown: func() {
			health.SetStatus(workerv1connect.WorkerServiceName, grpchealth.StatusNotServing)
			health.SetStatus("", grpchealth.StatusNotServing)
		},
	}
	return srv.Serve(ctx, ln)
}

func modelIDs(e worker.Engine) []string {
	var ids []string
	for _, m := range e.Models() {
		ids = append(ids, m.ID)
	}
	return ids
}
