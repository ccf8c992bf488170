package e2e

import (
	"encoding/json"
	"fmt"
	"syscall"
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
	g0, g1 := startServer(t, args...), startServer(t, args...)
	a := g0.newAccount(t, "scale-batch@example.com")
	g0.topup(t, a, "10")
	c := g1.api(protocols[0], cred{bearer: a.Key})
	before := balanceNanos(t, c)
	var lines []string
	for i := range 40 {
		b, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint("s", i), "method": "POST", "url": "/v1/chat/completions",
			"body": map[string]any{"model": "sim-small", "max_tokens": 24, "messages": []map[string]string{{"role": "user", "content": fmt.Sprint("line ", i)}}}})
		lines = append(lines, string(b))
	}
	b := createBatch(t, g0, a.Key, "/v1/chat/completions", lines)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := batchCall(t, g1, a.Key, "GET", "/v1/batches/"+b.ID, nil)
		var cur batchJSON
		_ = json.Unmarshal(body, &cur)
		if cur.RequestCounts.Completed >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line answered in 30s: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g0.Signal(syscall.SIGKILL)
	if _, err := g0.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	got := waitBatch(t, g1, a.Key, b.ID, 90*time.Second)
	if got.Status != "completed" || got.RequestCounts.Completed != 40 {
		t.Fatalf("finished by the other gateway: %+v", got)
	}
	seen := map[string]int{}
	for _, o := range fileLines(t, g1, a.Key, got.OutputFileID) {
		seen[o.CustomID]++
	}
	for i := range 40 {
		if n := seen[fmt.Sprint("s", i)]; n != 1 {
			t.Fatalf("s%d is in the output %d times", i, n)
		}
	}
	var sum int64
	for _, r := range usageOf(t, c, 40) {
		sum += r.GetCostNanos()
	}
	if after := balanceNanos(t, c); before-after != sum {
		t.Fatalf("the balance fell %d; the 40 usage records sum to %d", before-after, sum)
	}
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
