package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// cachePost sends an OpenAI chat completion with the Parley-Cache header
// (none when cache is "") and returns the status, the cache status header
// and the answer's text (the streamed deltas joined, when stream).
func cachePost(t *testing.T, s *server, key, cache, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	if cache != "" {
		req.Header.Set("Parley-Cache", cache)
	}
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	text := string(b)
	if strings.Contains(body, `"stream":true`) {
		var sb strings.Builder
		for line := range strings.SplitSeq(string(b), "\n") {
			if i := strings.Index(line, `"content":"`); i >= 0 {
				rest := line[i+len(`"content":"`):]
				sb.WriteString(rest[:strings.Index(rest, `"`)])
			}
		}
		text = sb.String()
	} else if i := strings.Index(text, `"content":"`); i >= 0 {
		rest := text[i+len(`"content":"`):]
		text = rest[:strings.Index(rest, `"`)]
	}
	return res.StatusCode, res.Header.Get("Parley-Cache-Status"), text
}

// An opted-in deterministic request is a miss, then a hit with the same
// answer, over the OpenAI endpoint (JSON and SSE), Connect, gRPC and the SSE
// form of CompleteStream; hits never cross users; non-deterministic and
// tool-calling requests are never cached; the usage record marks hits, free
// by default.
func TestResponseCacheHitAndMiss(t *testing.T) {
	s := startServer(t, fastAuth...)
	a, b := s.newAccount(t, "cache-a@example.com"), s.newAccount(t, "cache-b@example.com")
	s.topup(t, a, "10")
	s.topup(t, b, "10")
	ctx := ctxTimeout(t, 60*time.Second)

	t.Run("openai", func(t *testing.T) {
		for _, stream := range []string{"false", "true"} {
			body := `{"model":"sim-small","messages":[{"role":"user","content":"Tell me about caches ` + stream + `"}],"max_tokens":30,"temperature":0,"stream":` + stream + `}`
			code, st1, miss := cachePost(t, s, a.Key, "on", body)
			if code != 200 || st1 != "miss" || miss == "" {
				t.Fatalf("stream=%s first: %d %q %q", stream, code, st1, miss)
			}
			code, st2, hit := cachePost(t, s, a.Key, "on", body)
			if code != 200 || st2 != "hit" || hit != miss {
				t.Fatalf("stream=%s second: %d %q %q, want hit %q", stream, code, st2, hit, miss)
			}
			// Another user asking the same is never served a's answer.
			if _, st, _ := cachePost(t, s, b.Key, "on", body); st != "miss" {
				t.Fatalf("stream=%s: user b got %q", stream, st)
			}
			// Not opted in: not considered.
			if _, st, _ := cachePost(t, s, a.Key, "", body); st != "" {
				t.Fatalf("stream=%s: without the header: %q", stream, st)
			}
			if _, st, _ := cachePost(t, s, a.Key, "off", body); st != "" {
				t.Fatalf("stream=%s: with off: %q", stream, st)
			}
		}
	})

	t.Run("never cached", func(t *testing.T) {
		for name, body := range map[string]string{
			"temperature 1":  `{"model":"sim-small","messages":[{"role":"user","content":"random"}],"max_tokens":10,"temperature":1}`,
			"no temperature": `{"model":"sim-small","messages":[{"role":"user","content":"random"}],"max_tokens":10}`,
			"tools": `{"model":"sim-small","messages":[{"role":"user","content":"random"}],"max_tokens":10,"temperature":0,
				"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}]}`,
		} {
			for range 2 {
				if code, st, _ := cachePost(t, s, a.Key, "on", body); code != 200 || st != "" {
					t.Fatalf("%s: %d, status %q", name, code, st)
				}
			}
		}
		code, _, text := cachePost(t, s, a.Key, "maybe", `{"model":"sim-small","messages":[{"role":"user","content":"x"}],"temperature":0}`)
		if code != 400 {
			t.Fatalf("Parley-Cache: maybe: %d %s", code, text)
		}
	})

	t.Run("connect and grpc", func(t *testing.T) {
		for _, p := range protocols {
			c := s.api(p, cred{bearer: a.Key})
			seed := int64(42)
			msg := &parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("cache over " + p.name), MaxOutputTokens: 20, Seed: &seed}
			var texts []string
			for i, want := range []string{"miss", "hit"} {
				req := connect.NewRequest(msg)
				req.Header().Set("Parley-Cache", "on")
				res, err := c.Chat.Complete(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Header().Get("Parley-Cache-Status"); got != want {
					t.Fatalf("%s Complete %d: status %q, want %q", p.name, i, got, want)
				}
				texts = append(texts, res.Msg.GetMessage().GetParts()[0].GetText())
			}
			if texts[0] != texts[1] || texts[0] == "" {
				t.Fatalf("%s: %q then %q", p.name, texts[0], texts[1])
			}
			// The stream of the same request is another key (other
			// parameters are the same, so it hits the Complete's answer).
			req := connect.NewRequest(&parleyv1.CompleteStreamRequest{Model: msg.Model, Messages: msg.Messages, MaxOutputTokens: 20, Seed: &seed})
			req.Header().Set("Parley-Cache", "on")
			stream, err := c.Chat.CompleteStream(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			var fin *parleyv1.GenerationFinished
			for stream.Receive() {
				ev := stream.Msg().GetEvent()
				sb.WriteString(ev.GetDelta().GetText())
				if f := ev.GetFinished(); f != nil {
					fin = f
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if st := stream.ResponseHeader().Get("Parley-Cache-Status"); st != "hit" || sb.String() != texts[0] || fin.GetCostNanos() != 0 {
				t.Fatalf("%s CompleteStream: %q %q cost %d", p.name, st, sb.String(), fin.GetCostNanos())
			}
		}
	})

	t.Run("sse", func(t *testing.T) {
		body := `{"model":"sim-small","messages":[{"role":"ROLE_USER","parts":[{"text":"cache over sse"}]}],"maxOutputTokens":20,"temperature":0}`
		var texts []string
		for _, want := range []string{"miss", "hit"} {
			req, _ := http.NewRequest("POST", s.BaseURL+"/sse/parley.v1.ChatService/CompleteStream", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+a.Key)
			req.Header.Set("Parley-Cache", "on")
			res, err := h1Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if i := strings.Index(sc.Text(), `"text":"`); i >= 0 && strings.Contains(sc.Text(), `"delta"`) {
					rest := sc.Text()[i+len(`"text":"`):]
					sb.WriteString(rest[:strings.Index(rest, `"`)])
				}
			}
			res.Body.Close()
			if res.StatusCode != 200 || res.Header.Get("Parley-Cache-Status") != want {
				t.Fatalf("sse: %d status %q, want %q", res.StatusCode, res.Header.Get("Parley-Cache-Status"), want)
			}
			texts = append(texts, sb.String())
		}
		if texts[0] == "" || texts[0] != texts[1] {
			t.Fatalf("sse: %q then %q", texts[0], texts[1])
		}
	})

	t.Run("usage records", func(t *testing.T) {
		c := s.api(protocols[0], cred{bearer: a.Key})
		var hits, misses int
		deadline := time.Now().Add(10 * time.Second)
		for {
			res, err := c.Billing.ListUsage(ctx, connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 100}))
			if err != nil {
				t.Fatal(err)
			}
			hits, misses = 0, 0
			for _, r := range res.Msg.GetUsageRecords() {
				if r.GetCacheHit() {
					hits++
					if r.GetCostNanos() != 0 || r.GetUsage().GetCompletionTokens() == 0 {
						t.Fatalf("a hit billed %d for %v (the default cache-hit price is free)", r.GetCostNanos(), r.GetUsage())
					}
				} else {
					misses++
				}
			}
			// Hits: 2 OpenAI, 2 × (Complete + CompleteStream), 1 SSE.
			if hits >= 7 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if hits != 7 {
			t.Fatalf("%d hits and %d misses recorded, want 7 hits", hits, misses)
		}
	})
}

// An API key's own response cache setting sits between the request's
// Parley-Cache header (which beats it) and the operator's --response-cache
// default (which it beats): a key made ON is cached without the header
// under opt-in, a key made OFF is not cached under on unless the header
// asks, and the header's off beats a key's on.
func TestResponseCacheKeySetting(t *testing.T) {
	newKey := func(t *testing.T, s *server, a *account, mode parleyv1.ResponseCacheMode) string {
		t.Helper()
		res, err := s.as(protocols[0], a, "session").Keys.CreateApiKey(ctxTimeout(t, 10*time.Second),
			connect.NewRequest(&parleyv1.CreateApiKeyRequest{Name: "cache " + mode.String(), ResponseCache: mode}))
		if err != nil {
			t.Fatalf("CreateApiKey(%v): %v", mode, err)
		}
		if got := res.Msg.GetApiKey().GetResponseCache(); got != mode {
			t.Fatalf("CreateApiKey(%v) returned a key with %v", mode, got)
		}
		return res.Msg.GetSecret()
	}
	// ask sends body twice with the header cache and checks the cache
	// statuses of both answers ("" when the cache was not considered).
	ask := func(t *testing.T, s *server, key, cache, body string, want ...string) {
		t.Helper()
		for i, w := range want {
			code, st, text := cachePost(t, s, key, cache, body)
			if code != 200 || st != w {
				t.Fatalf("request %d (Parley-Cache %q): %d status %q, want %q: %s", i, cache, code, st, w, text)
			}
		}
	}
	body := func(s string) string {
		return `{"model":"sim-small","messages":[{"role":"user","content":"key cache ` + s + `"}],"max_tokens":20,"temperature":0}`
	}
	on, off := parleyv1.ResponseCacheMode_RESPONSE_CACHE_MODE_ON, parleyv1.ResponseCacheMode_RESPONSE_CACHE_MODE_OFF

	t.Run("operator opt-in", func(t *testing.T) {
		s := startServer(t, append(fastAuth, "--response-cache", "opt-in")...)
		a := s.newAccount(t, "key-cache-optin@example.com")
		s.topup(t, a, "10")
		keyOn, keyOff := newKey(t, s, a, on), newKey(t, s, a, off)
		// The key's setting opts it in with no header.
		ask(t, s, keyOn, "", body("1"), "miss", "hit")
		// The header's off beats the key's on.
		ask(t, s, keyOn, "off", body("1"), "", "")
		// A key without a setting follows the operator: not considered.
		ask(t, s, a.Key, "", body("1"), "", "")
		// A key made off, and the header's on beats it.
		ask(t, s, keyOff, "", body("2"), "", "")
		ask(t, s, keyOff, "on", body("2"), "miss", "hit")
		// The setting is on the key: ListApiKeys shows it.
		res, err := s.as(protocols[0], a, "session").Keys.ListApiKeys(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListApiKeysRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		got := map[parleyv1.ResponseCacheMode]int{}
		for _, k := range res.Msg.GetApiKeys() {
			got[k.GetResponseCache()]++
		}
		if len(res.Msg.GetApiKeys()) != 3 || got[on] != 1 || got[off] != 1 || got[parleyv1.ResponseCacheMode_RESPONSE_CACHE_MODE_UNSPECIFIED] != 1 {
			t.Fatalf("ListApiKeys response_cache: %v", got)
		}
	})

	t.Run("operator on", func(t *testing.T) {
		s := startServer(t, append(fastAuth, "--response-cache", "on")...)
		a := s.newAccount(t, "key-cache-on@example.com")
		s.topup(t, a, "10")
		// This key is made by the operator's CLI.
		keyOff := strings.TrimSpace(s.admin(t, "create-key", "--email", a.Email, "--response-cache", "off"))
		keyOn := newKey(t, s, a, on)
		// The key's off beats the operator's on: never cached.
		ask(t, s, keyOff, "", body("3"), "", "", "")
		// A key without a setting follows the operator: cached.
		ask(t, s, a.Key, "", body("3"), "miss", "hit")
		// The header's on beats the key's off (the same user's answer).
		ask(t, s, keyOff, "on", body("3"), "hit")
		ask(t, s, keyOff, "on", body("4"), "miss", "hit")
		// The header's off beats the key's on.
		ask(t, s, keyOn, "off", body("4"), "", "")
		ask(t, s, keyOn, "", body("4"), "hit")
	})
}

// With the response cache's Redis down, the cache skips it: requests are
// served (as misses, then hits from the process level), and when it is back
// answers reach it again.
func TestResponseCacheRedisDownIsSkipped(t *testing.T) {
	url, stop, _ := privateRedis(t)
	s := startServer(t, append(fastAuth, "--response-cache", "on", "--response-cache-redis-url", url)...)
	a := s.newAccount(t, "cache-redis@example.com")
	s.topup(t, a, "10")
	body := func(n int) string {
		return fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":"redis down %d"}],"max_tokens":10,"temperature":0}`, n)
	}
	// Operator default on: no header needed.
	if code, st, _ := cachePost(t, s, a.Key, "", body(1)); code != 200 || st != "miss" {
		t.Fatalf("with Redis up: %d %q", code, st)
	}
	stop()
	for i := range 3 {
		start := time.Now()
		code, st, _ := cachePost(t, s, a.Key, "", body(2))
		want := "hit"
		if i == 0 {
			want = "miss"
		}
		if code != 200 || st != want {
			t.Fatalf("with Redis down, request %d: %d %q, want 200 %q", i, code, st, want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("with Redis down a request took %v", d)
		}
	}
	if code, st, _ := cachePost(t, s, a.Key, "", body(1)); code != 200 || st != "hit" {
		t.Fatalf("the process level lost an answer: %d %q", code, st)
	}
}

// PARLEY_MEASURE=1: the latency of a cache hit against a miss, with the sim
// at its real pace, over the OpenAI endpoint (non-streaming).
func TestMeasureResponseCache(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	url, _, _ := privateRedis(t)
	dir := t.TempDir()
	args := append(fastAuth, "--sim-time-scale", "1", "--data-dir", dir, "--response-cache-redis-url", url)
	s := startServer(t, args...)
	a := s.newAccount(t, "cache-measure@example.com")
	s.topup(t, a, "100")
	const n = 20
	var miss, hit []time.Duration
	for i := range n {
		body := fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":"measure %d"}],"max_tokens":50,"temperature":0}`, i)
		for j, want := range []string{"miss", "hit"} {
			start := time.Now()
			code, st, _ := cachePost(t, s, a.Key, "on", body)
			d := time.Since(start)
			if code != 200 || st != want {
				t.Fatalf("%d %q, want %q", code, st, want)
			}
			if j == 0 {
				miss = append(miss, d)
			} else {
				hit = append(hit, d)
			}
		}
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[int(p*float64(len(ds)-1))]
	}
	// A new process: its own level is empty, so the first ask of each is
	// answered by Redis (the shared level).
	s.Signal(syscall.SIGTERM)
	if _, err := s.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, args...)
	var shared []time.Duration
	for i := range n {
		body := fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":"measure %d"}],"max_tokens":50,"temperature":0}`, i)
		start := time.Now()
		code, st, _ := cachePost(t, s, a.Key, "on", body)
		shared = append(shared, time.Since(start))
		if code != 200 || st != "hit" {
			t.Fatalf("from Redis: %d %q", code, st)
		}
	}
	t.Logf("50-token answers, %d each: miss p50 %v p95 %v; local hit p50 %v p95 %v; Redis hit p50 %v p95 %v", n,
		pct(miss, 0.5), pct(miss, 0.95), pct(hit, 0.5), pct(hit, 0.95), pct(shared, 0.5), pct(shared, 0.95))
}

// A hit is billed at the catalog's cache-hit price; the shared level (Redis)
// answers a gateway that never saw the request; a changed catalog entry
// makes every answer cached under the old one unreachable.
func TestResponseCacheBillingSharedLevelAndCatalogChange(t *testing.T) {
	url, _, _ := privateRedis(t)
	dir := t.TempDir()
	catalog := func(outputPrice int) string {
		file := filepath.Join(t.TempDir(), "models.yaml")
		if err := os.WriteFile(file, []byte(fmt.Sprintf(`models:
- id: priced
  display_name: Priced (simulated)
  simulated: true
  context_window: 4096
  max_output_tokens: 64
  input_price_nanos_per_million: 1000000000
  output_price_nanos_per_million: %d
  cache_hit_price_nanos_per_million: 100000000
`, outputPrice)), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	start := func(models string) *server {
		return startServer(t, append(fastAuth, "--data-dir", dir, "--models-file", models, "--response-cache-redis-url", url)...)
	}
	s := start(catalog(2_000_000_000))
	a := s.newAccount(t, "cache-price@example.com")
	s.topup(t, a, "10")
	seed := int64(1)
	ask := func(s *server) (status string, cost int64, u *parleyv1.Usage) {
		req := connect.NewRequest(&parleyv1.CompleteRequest{Model: "priced", Messages: userText("price me"), MaxOutputTokens: 20, Seed: &seed})
		req.Header().Set("Parley-Cache", "on")
		res, err := s.api(protocols[0], cred{bearer: a.Key}).Chat.Complete(ctxTimeout(t, 10*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Header().Get("Parley-Cache-Status"), res.Msg.GetCostNanos(), res.Msg.GetUsage()
	}
	st, missCost, u := ask(s)
	if st != "miss" || missCost != u.GetPromptTokens()*1000+u.GetCompletionTokens()*2000 {
		t.Fatalf("miss: %q cost %d for %v", st, missCost, u)
	}
	st, hitCost, _ := ask(s)
	if want := (u.GetPromptTokens() + u.GetCompletionTokens()) * 100; st != "hit" || hitCost != want {
		t.Fatalf("hit: %q cost %d, want %d (the cache-hit price)", st, hitCost, want)
	}
	s.Signal(syscall.SIGTERM)
	if _, err := s.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	// A new process with the same catalog: its own level is empty, Redis answers.
	s = start(catalog(2_000_000_000))
	if st, _, _ := ask(s); st != "hit" {
		t.Fatalf("same catalog, new process: %q, want a hit from Redis", st)
	}
	s.Signal(syscall.SIGTERM)
	if _, err := s.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	// The model's entry changed (its output price): the old answers are gone.
	s = start(catalog(3_000_000_000))
	if st, _, _ := ask(s); st != "miss" {
		t.Fatalf("changed catalog entry: %q, want a miss", st)
	}
}
