package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func TestRequestLogLineFields(t *testing.T) {
	var buf bytes.Buffer
	rl := NewRequestLog(NewLogger(&buf, "info"), 100, "/healthz")
	h := rl.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		NoteRPC(r.Context(), "/parley.v1.ChatService/Chat", "ok")
		NoteCaller(r.Context(), "user-1", "key-1")
		w.WriteHeader(http.StatusTeapot)
	}))
	req := httptest.NewRequest("POST", "/parley.v1.ChatService/Chat", nil)
	req = req.WithContext(WithRequestID(req.Context(), "rid-1"))
	h.ServeHTTP(httptest.NewRecorder(), req)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil)) // debug: not at info
	recs := records(t, &buf)
	if len(recs) != 1 {
		t.Fatalf("want 1 line, got %d: %s", len(recs), buf.String())
	}
	r := recs[0]
	for k, want := range map[string]any{
		"msg": "request", "level": "INFO", "method": "POST", "route": "/parley.v1.ChatService/Chat",
		"procedure": "/parley.v1.ChatService/Chat", "code": "ok", "status": float64(418),
		"user_id": "user-1", "api_key_id": "key-1", "request_id": "rid-1",
	} {
		if r[k] != want {
			t.Errorf("%s = %v, want %v", k, r[k], want)
		}
	}
	if _, ok := r["duration_ms"].(float64); !ok {
		t.Errorf("no duration_ms: %v", r)
	}
}

// A gRPC call refused before any handler noted it (trailers-only) logs its
// code from the grpc-status header.
func TestRequestLogGRPCRefusal(t *testing.T) {
	var buf bytes.Buffer
	rl := NewRequestLog(NewLogger(&buf, "info"), 0)
	rl.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Grpc-Status", "16")
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/parley.v1.ChatService/Chat", nil))
	recs := records(t, &buf)
	if len(recs) != 1 || recs[0]["code"] != "unauthenticated" || recs[0]["route"] != "/parley.v1.ChatService/Chat" {
		t.Fatalf("want one line with code unauthenticated: %s", buf.String())
	}
}

func TestRequestLogFloodIsBounded(t *testing.T) {
	var buf bytes.Buffer
	rl := NewRequestLog(NewLogger(&buf, "info"), 10)
	now := time.Unix(1000, 0)
	rl.now = func() time.Time { return now }
	h := rl.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 500 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	rl.summarize()
	now = now.Add(500 * time.Millisecond) // half the bucket back
	for range 100 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rl.Run(ctx) // the last count, at stop
	var lines, suppressed int
	var summaries []float64
	for _, r := range records(t, &buf) {
		switch {
		case r["msg"] == "request":
			lines++
		case r["suppressed"] != nil:
			summaries = append(summaries, r["suppressed"].(float64))
			suppressed += int(r["suppressed"].(float64))
		}
	}
	if lines != 15 || len(summaries) != 2 || summaries[0] != 490 || summaries[1] != 95 {
		t.Fatalf("want 10+5 request lines and suppressed 490 then 95, got %d lines, summaries %v\n%s", lines, summaries, buf.String())
	}
	if !strings.Contains(buf.String(), `"msg":"490 request lines suppressed"`) {
		t.Errorf("summary line does not say its count:\n%s", buf.String())
	}
}

func TestRequestLogConfigValidate(t *testing.T) {
	for _, c := range []RequestLogConfig{{Mode: "yes"}, {Mode: "on", Rate: -1}} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := (RequestLogConfig{Mode: "off"}).Validate(); err != nil {
		t.Error(err)
	}
}
