package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"connectrpc.com/otelconnect"

	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/config"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/obs"
)

// serve runs the gateway until ctx is done. It reads as the wiring diagram
// of the system: observability, stores, services, middleware, server.
func serve(ctx context.Context, args []string, logOut io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := config.ServeFlags(fs)
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

	// Connect options shared by every service: metrics, tracing, message size.
	otelInterceptor, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(tracerProvider), otelconnect.WithoutMetrics())
	if err != nil {
		return err
	}
	handlerOpts := []connect.HandlerOption{
		connect.WithInterceptors(metrics.Interceptor(), otelInterceptor),
		connect.WithReadMaxBytes(int(cfg.MaxBodyBytes)),
	}

	// Services.
	mux := http.NewServeMux()
	services := []string{
		parleyv1connect.AuthServiceName,
		parleyv1connect.ApiKeyServiceName,
		parleyv1connect.ModelServiceName,
		parleyv1connect.ChatServiceName,
		parleyv1connect.ConversationServiceName,
		parleyv1connect.AttachmentServiceName,
		parleyv1connect.BillingServiceName,
		parleyv1connect.AdminServiceName,
	}
	mux.Handle(parleyv1connect.NewAuthServiceHandler(parleyv1connect.UnimplementedAuthServiceHandler{}, handlerOpts...))
	mux.Handle(parleyv1connect.NewApiKeyServiceHandler(parleyv1connect.UnimplementedApiKeyServiceHandler{}, handlerOpts...))
	mux.Handle(parleyv1connect.NewModelServiceHandler(parleyv1connect.UnimplementedModelServiceHandler{}, handlerOpts...))
	mux.Handle(parleyv1connect.NewChatServiceHandler(parleyv1connect.UnimplementedChatServiceHandler{}, handlerOpts...))
	mux.Handle(parleyv1connect.NewConversationServiceHandler(parleyv1connect.UnimplementedConversationServiceHandler{}, handlerOpts...))
	mux.Handle(parleyv1connect.NewAttachmentServiceHandler(parleyv1connect.UnimplementedAttachmentServiceHandler{}, handlerOpts...))
	mux.Handle(parleyv1connect.NewBillingServiceHandler(parleyv1connect.UnimplementedBillingServiceHandler{}, handlerOpts...))
	mux.Handle(parleyv1connect.NewAdminServiceHandler(parleyv1connect.UnimplementedAdminServiceHandler{}, handlerOpts...))

	// Health and reflection over gRPC, gRPC-Web and Connect.
	health := grpchealth.NewStaticChecker(services...)
	mux.Handle(grpchealth.NewHandler(health, handlerOpts...))
	reflector := grpcreflect.NewStaticReflector(append(services, grpchealth.HealthV1ServiceName)...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector, handlerOpts...))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector, handlerOpts...))

	// Plain HTTP endpoints.
	mux.Handle("GET /healthz", metrics.HTTP("healthz", gateway.Healthz()))
	mux.Handle("GET /readyz", metrics.HTTP("readyz", gateway.Readyz(stores.Checks())))
	mux.Handle("GET /metrics", metrics.HTTP("metrics", metrics.Handler()))

	handler := gateway.Chain(mux,
		gateway.RequestID,
		gateway.CORS(cfg.WebOrigins),
		gateway.BodyLimit(cfg.MaxBodyBytes),
	)

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &gateway.Server{
		Handler: handler,
		Grace:   cfg.ShutdownGrace,
		Logger:  logger,
		OnShutdown: func() {
			for _, name := range append(services, "") {
				health.SetStatus(name, grpchealth.StatusNotServing)
			}
		},
	}
	return srv.Serve(ctx, ln)
}
