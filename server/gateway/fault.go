package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	"connectrpc.com/connect"
)

// Fault is a TEST-ONLY switch (serve --test-fault-file): it slows answers
// down and fails a share of them with a 5xx, so that the region health
// checker can be tested against real gateways. It reads a JSON file,
//
//	{"latency": "700ms", "error_ratio": 0.5}
//
// again whenever the file changes; no file, or an empty one, means no
// fault. Never set it in production.
type Fault struct {
	path   string
	logger *slog.Logger

	mu        sync.Mutex
	modTime   time.Time
	size      int64
	latency   time.Duration
	errorRate float64
}

// faultSpec is the file's shape.
type faultSpec struct {
	Latency    string  `json:"latency"`
	ErrorRatio float64 `json:"error_ratio"`
}

// WatchFault reads path now and every 100 ms until ctx is done.
func WatchFault(ctx context.Context, path string, logger *slog.Logger) *Fault {
	f := &Fault{path: path, logger: logger}
	f.reload()
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.reload()
			}
		}
	}()
	return f
}

func (f *Fault) reload() {
	info, err := os.Stat(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		if f.latency != 0 || f.errorRate != 0 {
			f.logger.Warn("TEST FAULT off", "file", f.path)
		}
		f.latency, f.errorRate, f.modTime, f.size = 0, 0, time.Time{}, 0
		return
	}
	if info.ModTime().Equal(f.modTime) && info.Size() == f.size {
		return
	}
	f.modTime, f.size = info.ModTime(), info.Size()
	data, err := os.ReadFile(f.path)
	var spec faultSpec
	if err == nil && len(data) > 0 {
		err = json.Unmarshal(data, &spec)
	}
	var latency time.Duration
	if err == nil && spec.Latency != "" {
		latency, err = time.ParseDuration(spec.Latency)
	}
	if err != nil {
		f.logger.Error("TEST FAULT file unreadable: fault off", "file", f.path, "err", err)
		f.latency, f.errorRate = 0, 0
		return
	}
	f.latency, f.errorRate = latency, spec.ErrorRatio
	f.logger.Warn("TEST FAULT set", "file", f.path, "latency", latency.String(), "error_ratio", spec.ErrorRatio)
}

// inject waits the latency and says whether this call is to fail.
func (f *Fault) inject(ctx context.Context) bool {
	f.mu.Lock()
	latency, rate := f.latency, f.errorRate
	f.mu.Unlock()
	if latency > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(latency):
		}
	}
	return rate > 0 && rand.Float64() < rate
}

var errFault = errors.New("test fault injected (--test-fault-file)")

func (f *Fault) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if f.inject(ctx) {
			return nil, connect.NewError(connect.CodeInternal, errFault)
		}
		return next(ctx, req)
	}
}

func (f *Fault) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (f *Fault) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if f.inject(ctx) {
			return connect.NewError(connect.CodeInternal, errFault)
		}
		return next(ctx, conn)
	}
}

// Middleware applies the fault to plain HTTP routes (the OpenAI surface).
func (f *Fault) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.inject(r.Context()) {
			http.Error(w, errFault.Error(), http.StatusInternalServerError)
			return
		}
		next.ServeHTTP(w, r)
	})
}
