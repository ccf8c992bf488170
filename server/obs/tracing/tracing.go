// Package tracing sets up the process's OpenTelemetry tracer provider and its
// OTLP exporter. Only the binary's main package imports it, so the packages
// that log and count through obs do not link the exporter and its gRPC and
// protobuf dependencies.
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Setup returns the tracer provider for the process: a no-op one when
// endpoint is empty (tracing is off unless configured), else one exporting
// batches of spans over OTLP/HTTP to endpoint. shutdown flushes and stops it.
func Setup(ctx context.Context, endpoint, service string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	if endpoint == "" {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service))),
	)
	return sdk, sdk.Shutdown, nil
}
