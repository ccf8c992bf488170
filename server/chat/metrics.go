package chat

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/llm"
)

// Metrics are the generation figures the on-call reads (deploy/grafana):
// time to first token, time between tokens, tokens made.
type Metrics struct {
	ttft   *prometheus.HistogramVec
	gap    *prometheus.HistogramVec
	tokens *prometheus.CounterVec
}

// NewMetrics registers the generation families on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_generation_ttft_seconds",
			Help:    "Time from scheduling a generation to its first streamed output (queue wait and prefill included), by model.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, []string{"model"}),
		gap: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_generation_inter_token_seconds",
			Help:    "Time between consecutive streamed outputs of a generation (a delta is usually one token), by model.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 12),
		}, []string{"model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_generation_tokens_total",
			Help: "Tokens of finished generations, by model and kind (prompt, completion).",
		}, []string{"model", "kind"}),
	}
	reg.MustRegister(m.ttft, m.gap, m.tokens)
	return m
}

// timed wraps emit to time the outputs of one generation of model.
func (m *Metrics) timed(model string, emit llm.Emit) llm.Emit {
	if m == nil {
		return emit
	}
	start, last := time.Now(), time.Time{}
	ttft, gap := m.ttft.WithLabelValues(model), m.gap.WithLabelValues(model)
	return func(d llm.Delta) error {
		if d.Text != "" || len(d.ToolCalls) > 0 {
			now := time.Now()
			if last.IsZero() {
				ttft.Observe(now.Sub(start).Seconds())
			} else {
				gap.Observe(now.Sub(last).Seconds())
			}
			last = now
		}
		return emit(d)
	}
}

// count adds a finished generation's tokens.
func (m *Metrics) count(model string, u llm.Usage) {
	if m == nil {
		return
	}
	m.tokens.WithLabelValues(model, "prompt").Add(float64(u.PromptTokens))
	m.tokens.WithLabelValues(model, "completion").Add(float64(u.CompletionTokens))
}
