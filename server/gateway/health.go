package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Version is the build's version, sent by Healthz as the Parley-Version
// header when set (the parley command sets it at start).
var Version string

// Healthz answers 200 while the process is up: a liveness probe.
func Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if Version != "" {
			w.Header().Set("Parley-Version", Version)
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}

// Check reports whether one dependency (a store, the worker pool) can serve.
type Check func(ctx context.Context) error

// Readyz answers 200 when every check passes within two seconds and 503
// otherwise, with each check's state as JSON: a readiness probe.
func Readyz(checks map[string]Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		status := http.StatusOK
		report := make(map[string]string, len(checks))
		for name, check := range checks {
			if err := check(ctx); err != nil {
				report[name] = err.Error()
				var w interface{ Warning() bool }
				if errors.As(err, &w) && w.Warning() {
					continue // said, but the gateway stays ready
				}
				status = http.StatusServiceUnavailable
				continue
			}
			report[name] = "ok"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(report)
	})
}
