package obs

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/parleyhq/parley/server/detach"
)

// RequestLogConfig is the request log's settings (serve's observability
// flags): one line per request at info, bounded to Rate lines a second.
type RequestLogConfig struct {
	// Mode is on or off.
	Mode string
	// Rate is the most request lines written a second (a token bucket of
	// Rate lines, refilled at Rate a second); the lines over it are counted
	// and said in one "request lines suppressed" line a second. 0: no bound.
	Rate int
}

// RegisterFlags registers --request-log and --request-log-rate, filling c.
func (c *RequestLogConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Mode, "request-log", "on", "one info line per request (method, route, status, duration, user and API key id, request id): on or off; /healthz, /readyz, /metrics and gRPC health only at debug")
	fs.IntVar(&c.Rate, "request-log-rate", 100, "most request lines a second (a token bucket); the rest are counted in one \"request lines suppressed\" line a second (0: no bound)")
}

// Validate checks the settings.
func (c RequestLogConfig) Validate() error {
	switch c.Mode {
	case "on", "off":
	default:
		return fmt.Errorf("--request-log: want on or off, got %q", c.Mode)
	}
	if c.Rate < 0 {
		return fmt.Errorf("--request-log-rate: want 0 or more, got %d", c.Rate)
	}
	return nil
}

// RequestLog writes one line per request, when it has ended (a stream when
// its last byte is written, with its whole duration): method, route (the
// metrics route or the procedure: the raw path of a page, which may hold a
// share link's id, is not logged), HTTP status, Connect code for RPCs,
// duration, user and API key id once authenticated (never a credential),
// and request id. Quiet paths (health, metrics) log at debug. The lines go
// through a token bucket so that a flood of requests is not a flood of log
// lines.
type RequestLog struct {
	logger *slog.Logger
	quiet  []string
	// SummaryEvery is how often the suppressed lines are counted out (1 s).
	SummaryEvery time.Duration

	mu         sync.Mutex
	rate       float64
	tokens     float64
	last       time.Time
	suppressed int64
	now        func() time.Time
}

// NewRequestLog logs requests to logger, at most rate lines a second (0: no
// bound). Requests whose path starts with one of quiet log at debug.
func NewRequestLog(logger *slog.Logger, rate int, quiet ...string) *RequestLog {
	return &RequestLog{logger: logger, quiet: quiet, rate: float64(rate), tokens: float64(rate),
		SummaryEvery: time.Second, now: time.Now}
}

// Run writes the "request lines suppressed" line every SummaryEvery while
// lines were dropped, until ctx is done, then once more for the last ones.
func (l *RequestLog) Run(ctx context.Context) {
	t := time.NewTicker(l.SummaryEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.summarize()
			return
		case <-t.C:
			l.summarize()
		}
	}
}

func (l *RequestLog) summarize() {
	l.mu.Lock()
	n := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	if n > 0 {
		l.logger.Warn(fmt.Sprintf("%d request lines suppressed", n), "suppressed", n,
			"request_log_rate", int(l.rate))
	}
}

// allow takes a token from the bucket, or counts the line suppressed.
func (l *RequestLog) allow() bool {
	if l.rate <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() {
		l.tokens = min(l.rate, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return true
	}
	l.suppressed++
	return false
}

// Middleware logs every request that passes through it. Put it outside
// everything that can answer a request (after the request id).
func (l *RequestLog) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		ctx := context.WithValue(r.Context(), requestInfoKey{}, info)
		defer func() {
			// A handler that panics is answered by net/http; its line says so.
			if p := recover(); p != nil {
				info.mu.Lock()
				info.code = "panic"
				if p == http.ErrAbortHandler {
					info.code = "aborted" // a handler cutting its response on purpose
				}
				info.mu.Unlock()
				l.write(ctx, r, sw.status, info, start)
				panic(p)
			}
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
		// A detached stream's line is written when it ends.
		detach.Done(r, func() {
			// A gRPC call refused before its handler (the auth gate)
			// answers trailers-only: its code is in the headers.
			if g := w.Header().Get("Grpc-Status"); g != "" {
				if n, err := strconv.Atoi(g); err == nil {
					info.mu.Lock()
					if info.code == "" {
						info.code = connectCode(n)
					}
					info.mu.Unlock()
				}
			}
			// net/http has cancelled ctx by the time a detached stream
			// ends; its values are what the line needs.
			l.write(context.WithoutCancel(ctx), r, sw.status, info, start)
		})
	})
}

// connectCode is the name of a gRPC status code, as the metrics say it.
func connectCode(n int) string {
	if n == 0 {
		return "ok"
	}
	return connect.Code(n).String()
}

func (l *RequestLog) write(ctx context.Context, r *http.Request, status int, info *requestInfo, start time.Time) {
	level := slog.LevelInfo
	for _, q := range l.quiet {
		if strings.HasPrefix(r.URL.Path, q) {
			level = slog.LevelDebug
			break
		}
	}
	if !l.logger.Enabled(ctx, level) || !l.allow() {
		return
	}
	info.mu.Lock()
	route, procedure, code, user, key := info.route, info.procedure, info.code, info.userID, info.keyID
	info.mu.Unlock()
	if route == "" {
		// Every catch-all route is named (the web app's "/"), so an unnamed
		// request is a procedure the auth gate refused before its handler:
		// its path is the procedure's fixed name.
		route = cmp.Or(procedure, r.URL.Path)
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.Int("status", status),
	)
	if procedure != "" {
		attrs = append(attrs, slog.String("procedure", procedure))
	}
	if code != "" {
		attrs = append(attrs, slog.String("code", code))
	}
	attrs = append(attrs, slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
	if user != "" {
		attrs = append(attrs, slog.String("user_id", user))
	}
	if key != "" {
		attrs = append(attrs, slog.String("api_key_id", key))
	}
	l.logger.LogAttrs(ctx, level, "request", attrs...)
}

// requestInfo is what the layers inside the request log learn about a
// request: its route, its RPC code, its caller.
type requestInfo struct {
	mu                                    sync.Mutex
	route, procedure, code, userID, keyID string
}

type requestInfoKey struct{}

func infoOf(ctx context.Context) *requestInfo {
	i, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return i
}

// NoteRoute names the route of the request of ctx in its request line (a
// fixed name, as the metrics use). The first name given wins, so that the
// outermost handler's name stands.
func NoteRoute(ctx context.Context, route string) {
	if i := infoOf(ctx); i != nil {
		i.mu.Lock()
		if i.route == "" {
			i.route = route
		}
		i.mu.Unlock()
	}
}

// Route names the route of every request next serves (NoteRoute).
func Route(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		NoteRoute(r.Context(), name)
		next.ServeHTTP(w, r)
	})
}

// NoteRPC records the procedure and Connect code of the RPC of ctx.
func NoteRPC(ctx context.Context, procedure, code string) {
	if i := infoOf(ctx); i != nil {
		i.mu.Lock()
		i.procedure, i.code = procedure, code
		i.mu.Unlock()
	}
}

// NoteCaller records the authenticated caller of the request of ctx: the
// user's id and, for an API key, the key's id (never its secret).
func NoteCaller(ctx context.Context, userID, keyID string) {
	if i := infoOf(ctx); i != nil {
		i.mu.Lock()
		i.userID, i.keyID = userID, keyID
		i.mu.Unlock()
	}
}
