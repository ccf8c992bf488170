package e2e

import (
	"encoding/json"
	"testing"
	"time"
)

// Two gateways on the scale backends run one batch: the gateway that
// created it is killed with SIGKILL mid-batch, and the other finishes it —
// every custom_id answered once, one usage record per line, the balance
// down by exactly their sum.
func TestScaleBatchSurvivesAGatewayKilled(t *testing.T) {
	scaleMode(t)
	args := append(fastAuth, "--sim-time-scale", "1", "--batch-concurrency", "4", "--batch-lease", "2s")
	killMidBatch(t, startServer(t, args...), startServer(t, args...), nil)
}

// A background response started on one gateway is polled and cancelled
// through the other, and a stream of one cut short resumes on the other.
func TestScaleBackgroundResponseAcrossGateways(t *testing.T) {
	scaleMode(t)
	args := append(fastAuth, "--sim-time-scale", "1")
	g0, g1 := startServer(t, args...), startServer(t, args...)
	a := g0.newAccount(t, "scale-bg@example.com")
	g0.topup(t, a, "5")
	status, raw := batchCall(t, g0, a.Key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "input": "Tell me everything.",
		"background": true, "max_output_tokens": 1000})
	var r bgResponse
	_ = json.Unmarshal(raw, &r)
	if status != 200 || r.Status != "queued" {
		t.Fatalf("create on gateway 0: %d %s", status, raw)
	}
	waitFor(t, 10*time.Second, "in_progress seen from gateway 1", func() bool { return getResponse(t, g1, a.Key, r.ID).Status == "in_progress" })
	status, raw = batchCall(t, g1, a.Key, "POST", "/v1/responses/"+r.ID+"/cancel", nil)
	var c bgResponse
	_ = json.Unmarshal(raw, &c)
	if status != 200 || c.Status != "cancelled" {
		t.Fatalf("cancel on gateway 1: %d %s", status, raw)
	}
	if got := getResponse(t, g0, a.Key, r.ID); got.Status != "cancelled" || got.Usage == nil {
		t.Fatalf("seen from gateway 0 after the cancel: %+v", got)
	}
	// A stream begun on gateway 0 and cut short resumes on gateway 1.
	resumeAcross(t, g0, g1, a.Key)
}
