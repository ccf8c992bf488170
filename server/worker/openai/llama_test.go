package openai_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/server/worker/enginetest"
	"github.com/parleyhq/parley/server/worker/openai"
)

// The openai engine against a real llama.cpp server (scripts/llama.sh: a
// tiny random-weight model over Qwen2's real vocabulary and chat template,
// four slots) passes the conformance suite: llama.cpp's own usage, stop
// strings and max_tokens, its /slots freed on cancellation, its slot count
// learned from /props and its load read from /slots and /metrics, and
// images refused (the model has no vision projector).
func TestConformanceLlamaCpp(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Target {
		s := enginetest.Llama(t)
		e, err := openai.New(t.Context(), openai.Config{BaseURL: s.URL + "/v1", MetricsInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return enginetest.Target{
			Engine: e, Model: s.Model, Slots: s.Slots, LongTokens: 600,
			Probe:    s.Probe,
			Upstream: s.URL,
			Connect: func(t *testing.T, baseURL string, firstByte time.Duration) worker.Engine {
				e, err := openai.New(t.Context(), openai.Config{BaseURL: baseURL + "/v1", Models: []string{s.Model},
					MaxBatch: s.Slots, MetricsURL: "-", FirstByteTimeout: firstByte})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(e.Close)
				return e
			},
		}
	})
}
