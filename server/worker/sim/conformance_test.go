package sim_test

import (
	"context"
	"testing"

	"github.com/parleyhq/parley/server/worker/enginetest"
	"github.com/parleyhq/parley/server/worker/sim"
)

// The sim passes the engine conformance suite: its own scheduler is the
// server (two slots, real-time steps).
func TestConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Target {
		e := sim.New(sim.Config{Models: []string{"sim-small"}, MaxBatch: 2, TimeScale: 1})
		return enginetest.Target{
			Engine: e, Model: "sim-small", Slots: 2, AcceptsImages: true, LongTokens: 60,
			Probe: func(context.Context) (int, int, error) {
				l := e.Load()
				return l.Running, l.Waiting, nil
			},
		}
	})
}
