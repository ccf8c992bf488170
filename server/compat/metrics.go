package compat

import "github.com/prometheus/client_golang/prometheus"

// NewDroppedParams makes Config.DroppedParams, the count of OpenAI request
// fields dropped by --openai-unsupported=drop, by field, registered on reg.
func NewDroppedParams(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_openai_dropped_params_total",
		Help: "OpenAI request fields dropped by --openai-unsupported=drop, by field.",
	}, []string{"field"})
	reg.MustRegister(c)
	return c
}
