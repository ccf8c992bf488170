package openai_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/server/worker/openai"
)

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitLoad waits (bounded) for the engine's load to satisfy ok.
func waitLoad(t *testing.T, e *openai.Engine, ok func(worker.LoadReport) bool) worker.LoadReport {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		ch := e.LoadChanged()
		if r := e.Load(); ok(r) {
			return r
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			r := e.Load()
			t.Fatalf("load never got there: %+v", r)
			return r
		}
	}
}

// syncLog is a slog handler's writer that tests read.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The recorded metric pages of vLLM, SGLang and llama.cpp (testdata/) give
// running, waiting, KV use and, where the server tells it, its KV size and
// slots; --max-batch wins over what was learned.
func TestLoadFromRecordedMetricPages(t *testing.T) {
	for _, tc := range []struct {
		name, page, slots string
		maxBatch          int
		want              worker.LoadReport
		log               string
	}{
		{name: "vLLM", page: "vllm-metrics.txt",
			// 16 × 65536 KV tokens from cache_config_info, 12.5 % used; no slots told.
			want: worker.LoadReport{Running: 7, Waiting: 3, KVCapacityTokens: 1 << 20, KVUsedTokens: 1 << 17},
			log:  "tell no slot count"},
		{name: "vLLM with --max-batch", page: "vllm-metrics.txt", maxBatch: 256,
			want: worker.LoadReport{Running: 7, Waiting: 3, MaxBatch: 256, KVCapacityTokens: 1 << 20, KVUsedTokens: 1 << 17}},
		{name: "SGLang", page: "sglang-metrics.txt",
			want: worker.LoadReport{Running: 12, Waiting: 5, KVCapacityTokens: 100000, KVUsedTokens: 25000},
			log:  "KV cache size learned"},
		{name: "llama.cpp metrics only", page: "llamacpp-metrics.txt",
			want: worker.LoadReport{Running: 3, Waiting: 2}},
		// /slots: 4 slots of 1024, two processing with 30+10 and 20+5 tokens.
		// Recorded from scripts/llama.sh's server with six requests for its four slots.
		{name: "llama.cpp recorded", page: "llamacpp-metrics-recorded.txt", slots: "llamacpp-slots-recorded.json",
			want: worker.LoadReport{Running: 4, Waiting: 2, MaxBatch: 4, KVCapacityTokens: 4096, KVUsedTokens: 156 + 135 + 3*(154+133)}},
		{name: "llama.cpp metrics and slots", page: "llamacpp-metrics.txt", slots: "llamacpp-slots.json",
			want: worker.LoadReport{Running: 2, Waiting: 2, MaxBatch: 4, KVCapacityTokens: 4096, KVUsedTokens: 65},
			log:  "upstream slots learned from its metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
			u.metrics = testdata(t, tc.page)
			if tc.slots != "" {
				body := testdata(t, tc.slots)
				u.mux.HandleFunc("GET /slots", func(w http.ResponseWriter, r *http.Request) {
					fmt.Fprint(w, body)
				})
			}
			var log syncLog
			e := newEngine(t, u, openai.Config{Models: []string{"m"}, MaxBatch: tc.maxBatch,
				Logger: slog.New(slog.NewJSONHandler(&log, nil))})
			got := waitLoad(t, e, func(r worker.LoadReport) bool { return r.Running == tc.want.Running && r.Waiting == tc.want.Waiting })
			got.Models, got.InFlight = nil, 0
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("load = %+v, want %+v", got, tc.want)
			}
			if tc.log != "" {
				deadline := time.Now().Add(2 * time.Second)
				for !strings.Contains(log.String(), tc.log) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if !strings.Contains(log.String(), tc.log) {
					t.Errorf("log %q does not say %q", log.String(), tc.log)
				}
			}
		})
	}
}

// A server whose /slots is off (llama.cpp without --slots answers 501)
// and that has no /metrics is asked no more, and the engine reports its own in-flight
// requests.
func TestLoadEndpointsOff(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]int{}
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	u.mux.HandleFunc("GET /slots", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[r.URL.Path]++
		mu.Unlock()
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprint(w, `{"error":{"code":501,"message":"This server does not support slots endpoint.","type":"not_supported_error"}}`)
	})
	var log syncLog
	e := newEngine(t, u, openai.Config{Models: []string{"m"}, Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	time.Sleep(100 * time.Millisecond) // ten intervals
	mu.Lock()
	defer mu.Unlock()
	if asked["/slots"] != 1 {
		t.Errorf("asked %v, want /slots once", asked)
	}
	if got := e.Load(); got.Running != 0 || got.MaxBatch != 0 {
		t.Errorf("load = %+v", got)
	}
	if !strings.Contains(log.String(), "reporting in-flight requests") {
		t.Errorf("log %q does not say what is reported", log.String())
	}
}
