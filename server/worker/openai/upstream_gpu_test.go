//go:build gpu

package openai_test

// Built only with -tags gpu, by scripts/gpu-check.sh on a machine with a GPU:
// the conformance suite against a real vLLM (or SGLang) server. The project
// does not depend on it.

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/server/worker/enginetest"
	"github.com/parleyhq/parley/server/worker/openai"
)

// TestConformanceGPUUpstream runs the suite against PARLEY_GPU_UPSTREAM_URL
// (base URL, without /v1) serving PARLEY_GPU_UPSTREAM_MODEL with
// PARLEY_GPU_UPSTREAM_SLOTS sequences at once (vLLM's --max-num-seqs).
func TestConformanceGPUUpstream(t *testing.T) {
	url := strings.TrimRight(os.Getenv("PARLEY_GPU_UPSTREAM_URL"), "/")
	if url == "" {
		t.Fatal("PARLEY_GPU_UPSTREAM_URL is not set (scripts/gpu-check.sh sets it)")
	}
	model := os.Getenv("PARLEY_GPU_UPSTREAM_MODEL")
	slots, _ := strconv.Atoi(os.Getenv("PARLEY_GPU_UPSTREAM_SLOTS"))
	if slots <= 0 {
		slots = 4
	}
	long, _ := strconv.Atoi(os.Getenv("PARLEY_GPU_LONG_TOKENS"))
	if long <= 0 {
		long = 1500
	}
	probe := func(ctx context.Context) (busy, waiting int, err error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			name := line
			if i := strings.IndexAny(line, "{ "); i >= 0 {
				name = line[:i]
			}
			f := strings.Fields(line[strings.LastIndexByte(line, ' ')+1:])
			if len(f) == 0 {
				continue
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				continue
			}
			switch name {
			case "vllm:num_requests_running", "sglang:num_running_reqs":
				busy += int(v)
			case "vllm:num_requests_waiting", "sglang:num_queue_reqs":
				waiting += int(v)
			}
		}
		return busy, waiting, nil
	}
	enginetest.Run(t, func(t *testing.T) enginetest.Target {
		e, err := openai.New(t.Context(), openai.Config{BaseURL: url + "/v1", MaxBatch: slots, MetricsInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		m := model
		if m == "" {
			m = e.Models()[0].ID
		}
		return enginetest.Target{
			Engine: e, Model: m, Slots: slots, LongTokens: long, Probe: probe, Upstream: url,
			AcceptsImages: os.Getenv("PARLEY_GPU_UPSTREAM_IMAGES") == "1",
			Connect: func(t *testing.T, baseURL string, firstByte time.Duration) worker.Engine {
				e, err := openai.New(t.Context(), openai.Config{BaseURL: baseURL + "/v1", Models: []string{m},
					MaxBatch: slots, MetricsURL: "-", FirstByteTimeout: firstByte})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(e.Close)
				return e
			},
		}
	})
}
