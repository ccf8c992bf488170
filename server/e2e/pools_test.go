package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// delayProxy forwards TCP connections from a loopback port to target,
// holding every chunk for delay in each direction: a network between the
// gateway and a remote pool.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	wg     sync.WaitGroup
}

func startDelayProxy(t *testing.T, target string, delay time.Duration) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln, target: target, delay: delay}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *delayProxy) Addr() string { return p.ln.Addr().String() }

func (p *delayProxy) serve(c net.Conn) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { p.pipe(u, c); done <- struct{}{} }()
	go func() { p.pipe(c, u); done <- struct{}{} }()
	<-done
}

// pipe copies src to dst, each chunk delayed; chunks stay in order and the
// delay is latency, not a bandwidth cap (a chunk read while one waits waits
// only its own delay).
func (p *delayProxy) pipe(dst, src net.Conn) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// outcome is one OpenAI streaming request's fate.
type outcome struct {
	start, first, end time.Time
	status            int
	content, done     bool
	err               string
}

// streamChat sends one streamed chat completion and reads it to the end.
func streamChat(ctx context.Context, s *server, key string, maxTokens int) outcome {
	return streamChatModel(ctx, s, key, "sim-small", maxTokens)
}

// streamChatBody sends body as a streamed chat completion and reads it to the end.
func streamChatBody(ctx context.Context, s *server, key, body string) outcome {
	o := outcome{start: time.Now()}
	req, _ := http.NewRequestWithContext(ctx, "POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		o.err, o.end = err.Error(), time.Now()
		return o
	}
	defer res.Body.Close()
	o.status = res.StatusCode
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		o.err, o.end = string(b), time.Now()
		return o
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `"content":"`) && !o.content {
			o.content, o.first = true, time.Now()
		}
		if strings.Contains(line, `"error"`) {
			o.err = line
		}
		if line == "data: [DONE]" {
			o.done = true
		}
	}
	o.end = time.Now()
	return o
}

// Inference pools end to end: real sim workers in a primary pool and, behind
// a 20 ms network delay, a reserve. The primary saturated → requests spill
// to the reserve; the primary killed under load → all traffic goes to the
// reserve within a second and no request that had not started is lost; the
// primary back → traffic returns to it; every pool down → new generations
// get 503 with Retry-After (unavailable over Connect) while login and
// history keep working. The timings are logged.
func TestPoolFailover(t *testing.T) {
	east := startWorker(t, "--time-scale", "1", "--max-batch", "2", "--models", "sim-small")
	westWorker := startWorker(t, "--time-scale", "1", "--models", "sim-small")
	west := startDelayProxy(t, westWorker.Addr(), 20*time.Millisecond)
	s := startServer(t, append(fastAuth, "--worker-pool", "east="+east.Addr(), "--worker-pool", "west="+west.Addr(),
		"--pool-spill-wait", "100ms", "--pool-spill-hold", "1s")...)
	a := s.newAccount(t, "pools@example.com")
	s.topup(t, a, "100")
	ctx := ctxTimeout(t, 120*time.Second)
	picks := func(pool string) float64 {
		return scrape(t, s, fmt.Sprintf(`parley_scheduler_pool_picks_total{pool=%q}`, pool))
	}
	deadline := time.Now().Add(10 * time.Second)
	for scrape(t, s, `parley_scheduler_pool_up{pool="east"}`) != 1 || scrape(t, s, `parley_scheduler_pool_up{pool="west"}`) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("pools not up")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Idle: the primary takes everything.
	for range 3 {
		if o := streamChat(ctx, s, a.Key, 5); !o.done {
			t.Fatalf("request: %+v", o)
		}
	}
	if e, w := picks("east"), picks("west"); e != 3 || w != 0 {
		t.Fatalf("idle: east %v, west %v picks; want 3, 0", e, w)
	}

	// Saturated: 10 at once against 2 slots.
	var wg sync.WaitGroup
	outs := make([]outcome, 10)
	for i := range outs {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i] = streamChat(ctx, s, a.Key, 30) }()
	}
	wg.Wait()
	for i, o := range outs {
		if !o.done || o.err != "" {
			t.Fatalf("saturated request %d: %+v", i, o)
		}
	}
	spilled := scrape(t, s, `parley_scheduler_pool_spills_total{from="east",reason="saturated",to="west"}`)
	t.Logf("saturated: east %v picks, west %v, spills %v", picks("east")-3, picks("west"), spilled)
	if spilled == 0 || picks("west") == 0 {
		t.Fatalf("no spill to the reserve under saturation")
	}

	// Steady load, then the primary is killed.
	stop := make(chan struct{})
	var mu sync.Mutex
	var load []outcome
	var running sync.WaitGroup
	for range 4 {
		running.Add(1)
		go func() {
			defer running.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				o := streamChat(ctx, s, a.Key, 8)
				mu.Lock()
				load = append(load, o)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	eastBefore := picks("east")
	if eastBefore <= 5 {
		t.Fatalf("the primary took %v picks under steady load", eastBefore)
	}
	killed := time.Now()
	east.Signal(syscall.SIGKILL)
	if _, err := east.Wait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	var downSeen time.Duration
	for downSeen == 0 && time.Since(killed) < 5*time.Second {
		if scrape(t, s, `parley_scheduler_pool_up{pool="east"}`) == 0 {
			downSeen = time.Since(killed)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	eastAfterKill := picks("east")

	// The primary comes back on its address.
	restarted := time.Now()
	east = startWorker(t, "--listen", strings.TrimPrefix(east.BaseURL, "http://"), "--time-scale", "1", "--max-batch", "2", "--models", "sim-small")
	var backAfter time.Duration
	for time.Since(restarted) < 20*time.Second {
		if picks("east") > eastAfterKill {
			backAfter = time.Since(restarted)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	running.Wait()

	var lost, cut, afterKill int
	var worstTTFT time.Duration
	for _, o := range load {
		failed := !o.done || o.err != ""
		if failed && !o.content {
			lost++
			t.Errorf("request from %v lost before its first token: status %d %s", o.start.Sub(killed), o.status, o.err)
		}
		if failed && o.content {
			cut++ // streaming on the primary when it died: ends with an error, as it must
		}
		if o.start.After(killed) && o.start.Before(killed.Add(time.Second)) && o.content {
			afterKill++
			worstTTFT = max(worstTTFT, o.first.Sub(o.start))
		}
	}
	t.Logf("failover: %d requests under load; primary down seen by the gateway %v after SIGKILL; "+
		"%d requests started in the second after the kill, worst TTFT %v; %d cut mid-stream, %d lost; primary picked again %v after restart",
		len(load), downSeen, afterKill, worstTTFT, cut, lost, backAfter)
	if downSeen == 0 || downSeen > time.Second {
		t.Errorf("the gateway saw the primary down after %v, want within a second", downSeen)
	}
	if eastAfterKill != eastBefore && eastAfterKill-eastBefore > 4 {
		t.Errorf("the dead primary took %v picks after the kill", eastAfterKill-eastBefore)
	}
	if afterKill == 0 || worstTTFT > time.Second {
		t.Errorf("after the kill: %d requests, worst TTFT %v; want all served by the reserve within a second", afterKill, worstTTFT)
	}
	if backAfter == 0 {
		t.Error("traffic did not return to the restarted primary")
	}

	// Every pool down: 503 with Retry-After, unavailable over Connect; login
	// and history still work.
	east.Signal(syscall.SIGKILL)
	westWorker.Signal(syscall.SIGKILL)
	east.Wait(5 * time.Second)
	westWorker.Wait(5 * time.Second)
	deadline = time.Now().Add(5 * time.Second)
	for scrape(t, s, `parley_scheduler_pool_up{pool="east"}`)+scrape(t, s, `parley_scheduler_pool_up{pool="west"}`) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("pools still up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	o := streamChat(ctx, s, a.Key, 5)
	if o.status != http.StatusServiceUnavailable || time.Since(start) > time.Second {
		t.Errorf("every pool down: HTTP %d after %v (%s); want 503 at once", o.status, time.Since(start), o.err)
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(
		`{"model":"sim-small","max_tokens":5,"messages":[{"role":"user","content":"Hello"}]}`))
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("every pool down: HTTP %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	c := s.api(protocols[0], cred{bearer: a.Key})
	_, err = c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("Hello"), MaxOutputTokens: 5}))
	wantCode(t, "Complete with every pool down", err, connect.CodeUnavailable)
	if _, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: a.Email, Password: a.Password})); err != nil {
		t.Errorf("login with every pool down: %v", err)
	}
	if _, err := c.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{})); err != nil {
		t.Errorf("history with every pool down: %v", err)
	}
	if _, err := c.Models.ListModels(ctx, connect.NewRequest(&parleyv1.ListModelsRequest{})); err != nil {
		t.Errorf("model list with every pool down: %v", err)
	}
	res, err = http.Get(s.BaseURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "east: 0 of 1 workers up") {
		t.Errorf("readyz with every pool down: %d %s", res.StatusCode, b)
	}
}

// The scaling signal end to end (docs/scaling.md's rule, with short
// bounds): two one-slot sim workers in one pool; 8 streams at once make
// requests wait past the scale-up bound, so the gateway recommends a third
// worker; once the window has passed with both idle it recommends one.
// The timings are logged.
func TestScaleSignal(t *testing.T) {
	a1 := startWorker(t, "--time-scale", "1", "--max-batch", "1", "--models", "sim-small")
	a2 := startWorker(t, "--time-scale", "1", "--max-batch", "1", "--models", "sim-small")
	s := startServer(t, append(fastAuth, "--worker-pool", "gpu="+a1.Addr()+","+a2.Addr(),
		"--scale-window", "3s", "--scale-up-wait", "300ms", "--scale-down-wait", "100ms")...)
	acct := s.newAccount(t, "scale@example.com")
	s.topup(t, acct, "100")
	ctx := ctxTimeout(t, 60*time.Second)
	const rec = `parley_scheduler_pool_workers_recommended{pool="gpu"}`
	deadline := time.Now().Add(10 * time.Second)
	for scrape(t, s, `parley_scheduler_pool_workers_ready{pool="gpu"}`) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("workers not ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := scrape(t, s, rec); v != 2 {
		t.Errorf("at rest: %v recommended, want the 2 there are", v)
	}
	start := time.Now()
	var wg sync.WaitGroup
	outs := make([]outcome, 8)
	for i := range outs {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i] = streamChat(ctx, s, acct.Key, 20) }()
	}
	var upAfter time.Duration
	var maxWait float64
	for done := false; !done; {
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
			done = true
		case <-time.After(20 * time.Millisecond):
		}
		if upAfter == 0 && scrape(t, s, rec) == 3 {
			upAfter = time.Since(start)
		}
		maxWait = max(maxWait, scrape(t, s, `parley_scheduler_queue_wait_recent_seconds{model="sim-small",pool="gpu"}`))
	}
	for i, o := range outs {
		if !o.done || o.err != "" {
			t.Fatalf("request %d: %+v", i, o)
		}
	}
	loadFor := time.Since(start)
	if upAfter == 0 {
		t.Fatalf("8 streams on 2 slots for %v: never 3 recommended (recent wait up to %vs)", loadFor, maxWait)
	}
	if v := scrape(t, s, rec); v != 3 {
		t.Errorf("just after the load, the long waits still in the window: %v recommended, want 3", v)
	}
	quiet := time.Now()
	var downAfter time.Duration
	for time.Since(quiet) < 10*time.Second {
		if scrape(t, s, rec) == 1 {
			downAfter = time.Since(quiet)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("scale signal: 8 streams on 2 one-slot workers for %v; 3 recommended %v after the load began (recent wait up to %.2fs); 1 recommended %v after it ended (window 3s)",
		loadFor, upAfter, maxWait, downAfter)
	if downAfter == 0 {
		t.Errorf("both workers idle past the window: still %v recommended", scrape(t, s, rec))
	} else if downAfter < 2*time.Second {
		t.Errorf("1 recommended %v after the load, before its waits left the 3 s window", downAfter)
	}
	if v := scrape(t, s, `parley_scheduler_pool_workers_idle{pool="gpu"}`); v != 2 {
		t.Errorf("idle workers %v, want 2", v)
	}
}
