package obs

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"github.com/parleyhq/parley/server/detach"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics owns the process's Prometheus registry and the request families
// every surface reports into. Subsystems register their own families on
// Registry.
type Metrics struct {
	// Registry is where every Parley metric family is registered.
	Registry *prometheus.Registry

	rpcRequests  *prometheus.CounterVec
	rpcDuration  *prometheus.HistogramVec
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
}

// NewMetrics makes a registry with the Go and process collectors and the
// request families.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: reg,
		rpcRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_rpc_requests_total",
			Help: "RPCs handled, by procedure and Connect code (ok for success).",
		}, []string{"procedure", "code"}),
		rpcDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_rpc_duration_seconds",
			Help:    "Time to handle an RPC (a unary call, or a whole stream), by procedure.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"procedure"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_http_requests_total",
			Help: "HTTP requests, by route and status code.",
		}, []string{"route", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"route"}),
	}
	reg.MustRegister(m.rpcRequests, m.rpcDuration, m.httpRequests, m.httpDuration)
	return m
}

// Handler serves the registry in the Prometheus text format, for /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Interceptor counts and times every RPC by procedure and code.
func (m *Metrics) Interceptor() connect.Interceptor { return rpcMetrics{m} }

type rpcMetrics struct{ m *Metrics }

func (r rpcMetrics) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		res, err := next(ctx, req)
		r.m.observe(ctx, req.Spec().Procedure, err, start)
		return res, err
	}
}

func (r rpcMetrics) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (r rpcMetrics) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		err := next(ctx, conn)
		r.m.observe(ctx, conn.Spec().Procedure, err, start)
		return err
	}
}

func (m *Metrics) observe(ctx context.Context, procedure string, err error, start time.Time) {
	code := "ok"
	if err != nil {
		code = connect.CodeOf(err).String()
		var ce *connect.Error
		if !errors.As(err, &ce) && errors.Is(err, context.Canceled) {
			code = connect.CodeCanceled.String()
		}
	}
	NoteRPC(ctx, procedure, code)
	m.rpcRequests.WithLabelValues(procedure, code).Inc()
	m.rpcDuration.WithLabelValues(procedure).Observe(time.Since(start).Seconds())
}

// HTTP wraps a non-Connect endpoint, counting and timing it under route (a
// fixed name, never the raw path, so label cardinality stays bounded).
func (m *Metrics) HTTP(route string, next http.Handler) http.Handler {
	requests := m.httpRequests.MustCurryWith(prometheus.Labels{"route": route})
	duration := m.httpDuration.WithLabelValues(route)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		NoteRoute(r.Context(), route)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		detach.Done(r, func() { // a detached stream's when it ends
			requests.WithLabelValues(strconv.Itoa(sw.status)).Inc()
			duration.Observe(time.Since(start).Seconds())
		})
	})
}

// statusWriter remembers the status code written through it.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through, for streaming responses.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
