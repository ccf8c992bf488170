package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// rateLimit is the caller's request-rate row of GetLimits.
func rateLimit(t *testing.T, c apiClients) *parleyv1.LimitStatus {
	t.Helper()
	res, err := c.Billing.GetLimits(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "sim-small"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Msg.GetLimits() {
		if l.GetKind() == parleyv1.LimitKind_LIMIT_KIND_REQUEST_RATE {
			return l
		}
	}
	t.Fatalf("no request rate in %v", res.Msg.GetLimits())
	return nil
}

// burstAdmitted fires n chat completions at once with key and counts those
// not refused with 429 (admitted ones may wait for a worker: they are given
// up on after a second); it checks every 429's Retry-After.
func burstAdmitted(t *testing.T, s *server, key string, n int) (admitted int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			body := fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":"burst %d"}],"max_tokens":1}`, i)
			req, _ := http.NewRequestWithContext(ctx, "POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := h1Client().Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				admitted++ // waited past the deadline: admitted, queued
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			switch {
			case res.StatusCode == 429:
				if ra := res.Header.Get("Retry-After"); ra != "1" || !strings.Contains(string(b), "request rate limit") {
					t.Errorf("429 with Retry-After %q: %s", ra, b)
				}
			case res.StatusCode == 200:
				admitted++
			default:
				t.Errorf("%d %s", res.StatusCode, b)
			}
		})
	}
	wg.Wait()
	return admitted
}

// With the sim workers saturated, a free-tier client's request rate halves
// (600/min, burst 20 → 300/min, burst 10: GetLimits, the metric and a real
// burst all say so) and recovers once the load drops.
func TestRateLimitTightensUnderLoadAndRecovers(t *testing.T) {
	w := startWorker(t, "--max-batch", "2", "--time-scale", "2")
	s := startServer(t, append(fastAuth, "--workers", w.Addr(), "--rate-limits", "", "--load-window", "1s")...)
	free, busy := s.newAccount(t, "rate-free@example.com"), s.newAccount(t, "rate-busy@example.com")
	s.topup(t, free, "10")
	s.topup(t, busy, "10")
	c := s.api(protocols[0], cred{bearer: free.Key})
	factor := func() string {
		return grepLines([]byte(metricsBody(t, s.BaseURL)), `parley_rate_limit_factor{tier="free"}`)
	}
	if l := rateLimit(t, c); l.GetLimit() != 20 || l.GetWindow().AsDuration() != 2*time.Second {
		t.Fatalf("idle: %v, want 20 per 2 s (600/min)", l)
	}

	// Saturate both slots (and queue two more) with long generations.
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	bc := s.api(protocols[0], cred{bearer: busy.Key})
	var loaders sync.WaitGroup
	for i := range 4 {
		loaders.Go(func() {
			stream, err := bc.Chat.CompleteStream(ctx, connect.NewRequest(&parleyv1.CompleteStreamRequest{
				Model: "sim-small", Messages: userText(fmt.Sprintf("write a long essay %d", i)), MaxOutputTokens: 1000}))
			if err == nil {
				for stream.Receive() {
				}
				stream.Close()
			}
		})
	}
	start := time.Now()
	for rateLimit(t, c).GetLimit() != 10 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("not tightened 10 s into saturation: %v; %s", rateLimit(t, c), factor())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("tightened %v after saturating: %v", time.Since(start).Round(time.Millisecond), rateLimit(t, c))
	if f := factor(); !strings.HasSuffix(f, " 0.5") {
		t.Fatalf("metric: %q", f)
	}
	// The burst's requests arrive over some milliseconds on a busy machine:
	// a unit refills every 200 ms at 300 a minute, so a few may.
	loaded := burstAdmitted(t, s, free.Key, 30)
	if loaded < 10 || loaded > 13 {
		t.Fatalf("saturated: %d of a burst of 30 admitted, want 10 (a few more may refill)", loaded)
	}

	stopLoad()
	loaders.Wait()
	start = time.Now()
	for rateLimit(t, c).GetLimit() != 20 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("not recovered 10 s after the load dropped: %v", rateLimit(t, c))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("recovered %v after the load dropped", time.Since(start).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // the bucket refills
	if n := burstAdmitted(t, s, free.Key, 30); n < 20 || n > 23 {
		t.Fatalf("recovered: %d of a burst of 30 admitted, want 20 (a few more may refill)", n)
	} else {
		t.Logf("a burst of 30: %d admitted saturated, %d recovered", loaded, n)
	}
	if f := factor(); !strings.HasSuffix(f, " 1") {
		t.Fatalf("metric: %q", f)
	}
}

// Two gateways on one Redis share a user's request rate: what one admitted
// the other counts; and they share the load figure.
func TestScaleTwoGatewaysShareTheRequestRate(t *testing.T) {
	scaleMode(t)
	t.Setenv("PARLEY_LOAD_KEY", "parley:test:load:"+t.Name()+":"+fmt.Sprint(time.Now().UnixNano()))
	if os.Getenv("PARLEY_TEST_REDIS_URL") == "" {
		t.Skip("PARLEY_TEST_REDIS_URL not set")
	}
	w := startWorker(t)
	args := append(fastAuth, "--workers", w.Addr(), "--rate-limits", "free=60/5")
	gw := []*server{startServer(t, args...), startServer(t, args...)}
	a := gw[0].newAccount(t, "shared-rate@example.com")
	gw[0].topup(t, a, "10")
	for i := range 5 {
		if code, _, text := cachePost(t, gw[i%2], a.Key, "", `{"model":"sim-small","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`); code != 200 {
			t.Fatalf("request %d: %d %s", i, code, text)
		}
	}
	for i, g := range gw {
		req, _ := http.NewRequest("POST", g.BaseURL+"/v1/chat/completions", strings.NewReader(`{"model":"sim-small","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`))
		req.Header.Set("Authorization", "Bearer "+a.Key)
		req.Header.Set("Content-Type", "application/json")
		res, err := h1Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
			t.Fatalf("gateway %d after the shared burst of 5: %d %s", i, res.StatusCode, b)
		}
	}
	// Both gateways report the same request-rate state.
	for i, g := range gw {
		if l := rateLimit(t, g.api(protocols[0], cred{bearer: a.Key})); l.GetLimit() != 5 || l.GetRemaining() != 0 {
			t.Fatalf("gateway %d: %v", i, l)
		}
	}
}

// PARLEY_MEASURE=1: a free client sending 20 requests a second for 3 s
// (tier default: 600/min, burst 20; halved above 70 % load), idle, with the
// sim workers saturated, and after the load dropped: how many were admitted.
func TestMeasureRateUnderLoad(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	w := startWorker(t, "--max-batch", "2", "--time-scale", "2")
	s := startServer(t, append(fastAuth, "--workers", w.Addr(), "--rate-limits", "", "--load-window", "1s")...)
	free, busy := s.newAccount(t, "m-free@example.com"), s.newAccount(t, "m-busy@example.com")
	s.topup(t, free, "10")
	s.topup(t, busy, "10")
	phase := func(name string) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted, refused := 0, 0
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := range 60 {
			<-tick.C
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "POST", s.BaseURL+"/v1/chat/completions",
					strings.NewReader(fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":"m %d"}],"max_tokens":1}`, i)))
				req.Header.Set("Authorization", "Bearer "+free.Key)
				req.Header.Set("Content-Type", "application/json")
				res, err := h1Client().Do(req)
				mu.Lock()
				defer mu.Unlock()
				if err == nil && res.StatusCode == 429 {
					refused++
				} else {
					admitted++
				}
				if err == nil {
					res.Body.Close()
				}
			})
		}
		wg.Wait()
		t.Logf("%s: %d of 60 admitted, %d refused with 429 (load %.2f)", name, admitted, refused, scrape(t, s, "parley_rate_limit_load"))
	}
	phase("idle")
	time.Sleep(2 * time.Second)
	ctx, stopLoad := context.WithCancel(context.Background())
	bc := s.api(protocols[0], cred{bearer: busy.Key})
	var loaders sync.WaitGroup
	for i := range 4 {
		loaders.Go(func() {
			stream, err := bc.Chat.CompleteStream(ctx, connect.NewRequest(&parleyv1.CompleteStreamRequest{
				Model: "sim-small", Messages: userText(fmt.Sprintf("essay %d", i)), MaxOutputTokens: 1000}))
			if err == nil {
				for stream.Receive() {
				}
				stream.Close()
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	phase("saturated")
	stopLoad()
	loaders.Wait()
	time.Sleep(3 * time.Second)
	phase("recovered")
}

// The load the rates follow is shared through Redis: gateway 1, whose own
// worker is idle, tightens its users' rate when gateway 0's worker is
// saturated (2 busy slots of the 4 both gateways have: 50 %, over this
// test's 40 % step).
func TestScaleLoadIsSharedAcrossGateways(t *testing.T) {
	scaleMode(t)
	t.Setenv("PARLEY_LOAD_KEY", "parley:test:load:"+t.Name()+":"+fmt.Sprint(time.Now().UnixNano()))
	w0 := startWorker(t, "--max-batch", "2", "--time-scale", "2")
	w1 := startWorker(t, "--max-batch", "2")
	rates := []string{"--rate-limits", "free=600/20@0.4:0.5", "--load-window", "1s"}
	gw0 := startServer(t, append(append(fastAuth, "--workers", w0.Addr()), rates...)...)
	gw1 := startServer(t, append(append(fastAuth, "--workers", w1.Addr()), rates...)...)
	free, busy := gw0.newAccount(t, "load-free@example.com"), gw0.newAccount(t, "load-busy@example.com")
	gw0.topup(t, busy, "10")
	on1 := gw1.api(protocols[0], cred{bearer: free.Key})
	if l := rateLimit(t, on1); l.GetLimit() != 20 {
		t.Fatalf("idle: %v", l)
	}
	ctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	bc := gw0.api(protocols[0], cred{bearer: busy.Key})
	var loaders sync.WaitGroup
	defer loaders.Wait()
	defer stopLoad()
	for i := range 2 {
		loaders.Go(func() {
			stream, err := bc.Chat.CompleteStream(ctx, connect.NewRequest(&parleyv1.CompleteStreamRequest{
				Model: "sim-small", Messages: userText(fmt.Sprintf("long %d", i)), MaxOutputTokens: 1000}))
			if err == nil {
				for stream.Receive() {
				}
				stream.Close()
			}
		})
	}
	start := time.Now()
	for rateLimit(t, on1).GetLimit() != 10 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("gateway 1 did not follow gateway 0's load: %v (gateway 1's load %.2f, gateway 0's %.2f)",
				rateLimit(t, on1), scrape(t, gw1, "parley_rate_limit_load"), scrape(t, gw0, "parley_rate_limit_load"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("gateway 1 tightened %v after gateway 0's worker filled; shared load %.2f",
		time.Since(start).Round(time.Millisecond), scrape(t, gw1, "parley_rate_limit_load"))
}
