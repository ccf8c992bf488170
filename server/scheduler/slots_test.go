package scheduler

import (
	"testing"

	"github.com/parleyhq/parley/server/worker"
)

func TestSlots(t *testing.T) {
	busy, total := Slots([]WorkerStatus{
		{State: StateReady, Load: worker.LoadReport{Running: 2, Waiting: 5, MaxBatch: 4}},
		{State: StateReady, Load: worker.LoadReport{Running: 1, MaxBatch: 4}, InFlight: 3},
		{State: StateEjected, Load: worker.LoadReport{Running: 4, MaxBatch: 4}},
		{State: StateReady, Load: worker.LoadReport{Running: 4}}, // capacity unknown
	})
	if busy != 7 || total != 8 {
		t.Fatalf("busy %v of %v, want 7 of 8", busy, total)
	}
}
