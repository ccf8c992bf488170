package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"
)

func TestFaultFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fault.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := WatchFault(ctx, path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	h := f.Middleware(ok)
	unary := f.WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) { return nil, nil })
	serve := func() (int, time.Duration) {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", nil))
		return rec.Code, time.Since(start)
	}
	set := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		// Distinct modification times even on coarse clocks.
		later := time.Now().Add(time.Duration(len(content)) * time.Second)
		_ = os.Chtimes(path, later, later)
		time.Sleep(300 * time.Millisecond) // the watcher polls every 100 ms
	}

	if code, d := serve(); code != 204 || d > 50*time.Millisecond {
		t.Fatalf("no file: %d after %v", code, d)
	}
	set(`{"latency": "150ms"}`)
	if code, d := serve(); code != 204 || d < 150*time.Millisecond {
		t.Fatalf("latency: %d after %v", code, d)
	}
	set(`{"error_ratio": 1}`)
	if code, _ := serve(); code != 500 {
		t.Fatalf("error_ratio 1: %d", code)
	}
	if _, err := unary(ctx, nil); connect.CodeOf(err) != connect.CodeInternal {
		t.Fatalf("RPC under error_ratio 1: %v", err)
	}
	set(`not json`)
	if code, _ := serve(); code != 204 {
		t.Fatalf("unreadable file must turn the fault off: %d", code)
	}
	set(`{"error_ratio": 1}`)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if code, _ := serve(); code != 204 {
		t.Fatalf("file removed: %d", code)
	}
}
