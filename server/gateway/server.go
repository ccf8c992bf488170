package gateway

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/parleyhq/parley/server/detach"
)

// idleTimeout is how long a connection waits for its client's next request.
const idleTimeout = 2 * time.Minute

// Server serves one handler over HTTP/1.1 and cleartext HTTP/2 (h2c, as gRPC
// clients speak it) on one listener.
type Server struct {
	// Handler serves every request.
	Handler http.Handler
	// Grace is how long open requests and streams may run on after shutdown
	// begins before their contexts are cancelled.
	Grace time.Duration
	// OnShutdown runs when shutdown begins, before draining (e.g. to report
	// NOT_SERVING on the health service).
	OnShutdown func()
	// OnListen runs once the server is listening, after the "listening on"
	// line, with the listener's address (e.g. to say where the web app is).
	OnListen func(addr net.Addr)
	// Logger receives the lifecycle lines.
	Logger *slog.Logger
	// ReadHeaderTimeout is how long a client may take to send a request's
	// headers (default 10 s). Bodies are timed by BodyReadTimeout, a
	// middleware, so that long response streams are not cut.
	ReadHeaderTimeout time.Duration
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it stops
// accepting, lets open requests and streams finish for up to Grace, then
// cancels their contexts so they end with a status rather than a reset, and
// returns once all have ended.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	baseCtx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	// Token streams leave net/http's goroutine and buffers once they
	// start (detach.Go); their connections come back through the listener.
	detached := detach.New(baseCtx, idleTimeout, s.Logger)
	srv := &http.Server{
		Handler:           detached.Handler(s.Handler),
		Protocols:         &protocols,
		ReadHeaderTimeout: cmp.Or(s.ReadHeaderTimeout, 10*time.Second),
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(detached.Listener(ln)) }()
	s.Logger.Info("listening on http://" + ln.Addr().String())
	if s.OnListen != nil {
		s.OnListen(ln.Addr())
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.Logger.Info("shutting down", "grace", s.Grace.String())
	if s.OnShutdown != nil {
		s.OnShutdown()
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), s.Grace)
	defer cancel()
	err := srv.Shutdown(drainCtx)
	if err == nil {
		err = detached.Wait(drainCtx)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s.Logger.Warn("grace period over: cancelling open streams")
		cancelAll()
		finalCtx, cancelFinal := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancelFinal()
		if err = srv.Shutdown(finalCtx); err != nil {
			err = srv.Close()
		}
		if detached.Wait(finalCtx) != nil {
			detached.CloseAll()
		}
	}
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		s.Logger.Info("stopped")
		return nil
	}
	return err
}

// Chain wraps h in middleware, the first listed being the outermost.
func Chain(h http.Handler, middleware ...func(http.Handler) http.Handler) http.Handler {
	for i := len(middleware) - 1; i >= 0; i-- {
		h = middleware[i](h)
	}
	return h
}
