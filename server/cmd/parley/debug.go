package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
)

// serveDebug serves Go's /debug/pprof profiles on addr (keep it private)
// until the process ends.
func serveDebug(addr string, logger *slog.Logger) {
	dbg := http.NewServeMux()
	dbg.HandleFunc("/debug/pprof/", pprof.Index)
	dbg.HandleFunc("/debug/pprof/profile", pprof.Profile)
	dbg.HandleFunc("/debug/pprof/trace", pprof.Trace)
	logger.Warn("profiling endpoint on", "addr", addr, "err", http.ListenAndServe(addr, dbg))
}
