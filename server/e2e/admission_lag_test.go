package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The admission limit of upstreams that report no load reads the right
// signal. One gateway addresses two inference servers directly, neither
// telling its slots: "steady" never queues, "queued" has two slots and
// queues the rest. While both are driven, the gateway is starved of CPU —
// stopped 50 ms of every 75 (SIGSTOP/SIGCONT), as a box whose cores other
// work holds would run it — so every time to first token it measures rises.
// Only the queued server's limit is lowered; the steady one keeps no cap,
// its slow samples set aside as the gateway's own lag; nothing is refused.
func TestAdmissionLimitTellsUpstreamQueueingFromGatewayLag(t *testing.T) {
	steady := startInferenceSlots(t, 5*time.Millisecond, "steady-model", 0)
	queued := startInferenceSlots(t, 10*time.Millisecond, "queued-model", 2)
	s := startServer(t, append(fastAuth, "--workers", steady.URL()+","+queued.URL(), "--rate-limits", "off",
		"--unpriced-models", "default", "--unpriced-input-price", "1000", "--unpriced-output-price", "1000")...)
	a := s.newAccount(t, "lag@example.com")
	s.topup(t, a, "100")
	waitFor(t, 10*time.Second, "both servers ready", func() bool { return readyWorkers(t, s) == 2 })
	ctx := ctxTimeout(t, 60*time.Second)
	body := func(model string, i int) string {
		return fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":10,"messages":[{"role":"user","content":"lag %d"}]}`, model, i)
	}
	// A quiet round first: the baselines.
	for i := range 5 {
		for _, m := range []string{"steady-model", "queued-model"} {
			if o := streamChatBody(ctx, s, a.Key, body(m, i)); !o.done {
				t.Fatalf("warm-up: %+v", o)
			}
		}
	}

	const run = 4 * time.Second
	deadline := time.Now().Add(run)
	var starve sync.WaitGroup
	stops := 0
	starve.Go(func() {
		for time.Now().Before(deadline) {
			stops++
			s.Signal(syscall.SIGSTOP)
			time.Sleep(50 * time.Millisecond)
			s.Signal(syscall.SIGCONT)
			time.Sleep(25 * time.Millisecond)
		}
	})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ok       = map[string]int{}
		failures []string
	)
	for i := range 40 {
		model := []string{"steady-model", "queued-model"}[i%2]
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				o := streamChatBody(ctx, s, a.Key, body(model, i*1000+n))
				mu.Lock()
				if o.done && o.err == "" {
					ok[model]++
				} else {
					failures = append(failures, fmt.Sprintf("%s: HTTP %d %s", model, o.status, o.err))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	starve.Wait()
	s.Signal(syscall.SIGCONT)
	t.Logf("stopped the gateway %d times", stops)
	t.Logf("served %d steady, %d queued while the gateway was starved", ok["steady-model"], ok["queued-model"])
	if len(failures) > 0 {
		t.Fatalf("%d requests failed, first: %s", len(failures), failures[0])
	}
	logs := s.Logs()
	cuts := map[string]int{}
	for _, m := range regexp.MustCompile(`admission limit lowered","worker":"([^"]+)"`).FindAllStringSubmatch(logs, -1) {
		cuts[m[1]]++
	}
	lagged := scrape(t, s, "parley_scheduler_ttft_samples_lagged_total")
	t.Logf("limit cuts: %v; TTFT samples set aside as the gateway's lag: %v; lag now %vs", cuts, lagged,
		scrape(t, s, "parley_gateway_lag_seconds"))
	if cuts[queued.URL()] == 0 {
		t.Errorf("the queueing server's limit was never lowered")
	}
	if n := cuts[steady.URL()]; n > 0 {
		t.Errorf("the steady server's limit was lowered %d times: the gateway's own lag was taken for its queueing", n)
	}
	if lagged == 0 {
		t.Error("no sample was set aside: the gateway was not starved, and the test shows nothing")
	}
	if strings.Contains(logs, "all workers are busy") {
		t.Error("requests were refused as busy")
	}
}
