package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// logRecords are the JSON records of a process's logs (other lines skipped).
func logRecords(logs string) []map[string]any {
	var out []map[string]any
	for line := range strings.SplitSeq(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func recordsWithMsg(logs, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range logRecords(logs) {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func stopServer(t *testing.T, s *server) {
	t.Helper()
	s.Signal(syscall.SIGTERM)
	if code, err := s.Wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("serve exit %d, %v\n%s", code, err, s.Logs())
	}
}

// TestFirstStartSaysWhatItMade: the first `parley serve` on a fresh data
// directory says, once listening, the web app's URL, the data directory,
// database and secret it created, that the engine is simulated and how to
// give it a real one, and the command for the first admin — which works.
// The second start on the same directory says none of it. The test's
// stderr is a pipe, not a terminal, so this is the structured record (the
// human lines of a terminal are TestFirstStartHuman's, in cmd/parley).
func TestFirstStartSaysWhatItMade(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh")
	s := startServer(t, "--data-dir", dir)
	var first map[string]any
	waitFor(t, 5*time.Second, "the first start record", func() bool {
		recs := recordsWithMsg(s.Logs(), "first start")
		if len(recs) == 1 {
			first = recs[0]
		}
		return first != nil
	})
	abs, _ := filepath.Abs(dir)
	for k, want := range map[string]any{
		"url": s.BaseURL + "/", "data_dir": abs, "data_dir_created": true, "level": "INFO",
		"database_created": filepath.Join(abs, "parley.db"), "secret_created": filepath.Join(abs, "secret.key"),
		"engine": "simulated",
	} {
		if first[k] != want {
			t.Errorf("first start %s = %v, want %v\n%v", k, first[k], want, first)
		}
	}
	if re, _ := first["real_engine"].(string); !strings.Contains(re, "--engine openai --upstream") || !strings.Contains(re, "--workers") {
		t.Errorf("real_engine %q does not say how to point at a real engine", re)
	}
	// The URL answers with the web app.
	res, err := http.Get(first["url"].(string))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %v: %v %v", first["url"], res, err)
	}
	res.Body.Close()

	// The first admin's command, as said, with a password of our own.
	cmdLine, _ := first["first_admin"].(string)
	if !strings.HasPrefix(cmdLine, "parley admin create-user --admin ") {
		t.Fatalf("first_admin = %q", cmdLine)
	}
	cmdLine = strings.Replace(cmdLine, "parley ", shellQuoteTest(parleyBin)+" ", 1)
	cmdLine = strings.Replace(cmdLine, "you@example.com", "first@example.com", 1)
	if out, err := exec.Command("sh", "-c", cmdLine).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdLine, err, out)
	}
	stopServer(t, s)

	// The second start: the database and the secret are there.
	s2 := startServer(t, "--data-dir", dir)
	time.Sleep(300 * time.Millisecond) // the record follows "listening on" at once when it comes
	if recs := recordsWithMsg(s2.Logs(), "first start"); len(recs) != 0 {
		t.Fatalf("second start said a first start: %v", recs)
	}
	// And the admin made by the said command signs in as an admin.
	res2, body := s2.postRaw(t, "/parley.v1.AuthService/Login",
		`{"email":"first@example.com","password":"at least 10 characters"}`, nil)
	if res2.StatusCode != 200 || !strings.Contains(string(body), `"admin":true`) {
		t.Fatalf("login as the first admin: %d %s", res2.StatusCode, body)
	}
}

func shellQuoteTest(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestRequestLogLines: each request makes one info line when it ends, with
// method, route, status, duration, the caller's user and API key ids (never
// the key), and the request id the response carried; a stream's line comes
// at its end with its whole duration; health and metrics only at debug.
func TestRequestLogLines(t *testing.T) {
	s := startServer(t, append([]string{"--sim-time-scale", "1"}, fastAuth...)...)
	a := s.newAccount(t, "logs@example.com")
	s.topup(t, a, "10")

	start := time.Now()
	req, _ := http.NewRequest("POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(
		`{"model":"sim-small","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"Say hello"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.Key)
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	streamTook := time.Since(start)
	if res.StatusCode != 200 {
		t.Fatalf("stream: %d", res.StatusCode)
	}
	streamID := res.Header.Get("X-Request-Id")

	res2, body := s.postRaw(t, "/parley.v1.ModelService/ListModels", `{}`, map[string]string{"Authorization": "Bearer " + a.Key})
	if res2.StatusCode != 200 {
		t.Fatalf("ListModels: %d %s", res2.StatusCode, body)
	}
	rpcID := res2.Header.Get("X-Request-Id")
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		r, err := http.Get(s.BaseURL + p)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}

	byID := map[string]map[string]any{}
	waitFor(t, 5*time.Second, "the request lines", func() bool {
		for _, r := range recordsWithMsg(s.Logs(), "request") {
			if id, _ := r["request_id"].(string); id != "" {
				byID[id] = r
			}
		}
		return byID[streamID] != nil && byID[rpcID] != nil
	})
	stream := byID[streamID]
	for k, want := range map[string]any{
		"level": "INFO", "method": "POST", "status": float64(200),
		"user_id": a.User.GetUserId(), "api_key_id": a.KeyID,
	} {
		if stream[k] != want {
			t.Errorf("stream line %s = %v, want %v\n%v", k, stream[k], want, stream)
		}
	}
	if r, _ := stream["route"].(string); !strings.Contains(r, "chat") {
		t.Errorf("stream line route %q", r)
	}
	if d, _ := stream["duration_ms"].(float64); streamTook < 50*time.Millisecond || d < float64(streamTook.Milliseconds())/2 {
		t.Errorf("stream took %v client-side, its line says %v ms: not the whole stream", streamTook, d)
	}
	rpc := byID[rpcID]
	for k, want := range map[string]any{
		"level": "INFO", "route": "/parley.v1.ModelService/ListModels", "code": "ok", "status": float64(200),
		"user_id": a.User.GetUserId(), "api_key_id": a.KeyID,
	} {
		if rpc[k] != want {
			t.Errorf("RPC line %s = %v, want %v\n%v", k, rpc[k], want, rpc)
		}
	}
	signedUp := false
	for _, r := range recordsWithMsg(s.Logs(), "request") {
		if r["route"] == "/parley.v1.AuthService/SignUp" && r["user_id"] == a.User.GetUserId() && r["api_key_id"] == nil {
			signedUp = true
		}
		if route := r["route"]; (route == "healthz" || route == "readyz" || route == "metrics") && r["level"] != "DEBUG" {
			t.Errorf("%v logged at %v, want DEBUG", route, r["level"])
		}
	}
	if !signedUp {
		t.Error("no SignUp line naming the new user")
	}
	if strings.Contains(s.Logs(), a.Key) || strings.Contains(s.Logs(), a.Cookie) {
		t.Error("a credential is in the logs")
	}
}

// TestRequestLogFloodIsBounded: a burst of requests far over
// --request-log-rate makes at most the bucket's lines (its size, plus what
// it refills during the burst) and "N request lines suppressed" lines that
// count the rest: every request is accounted for, the log is not flooded.
func TestRequestLogFloodIsBounded(t *testing.T) {
	const rate, n = 20, 600
	s := startServer(t, "--request-log-rate", "20", "--log-level", "info")
	client := h1Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 8
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= n {
				req, _ := http.NewRequest("POST", s.BaseURL+"/parley.v1.ModelService/ListModels", strings.NewReader(`{}`))
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
	wg.Wait()
	burst := time.Since(start)
	var lines, suppressed int
	waitFor(t, 5*time.Second, "every request logged or counted suppressed", func() bool {
		lines, suppressed = 0, 0
		for _, r := range logRecords(s.Logs()) {
			switch {
			case r["msg"] == "request":
				lines++
			case r["suppressed"] != nil:
				suppressed += int(r["suppressed"].(float64))
			}
		}
		return lines+suppressed == n
	})
	if budget := rate + int(float64(rate)*burst.Seconds()) + 1; lines > budget {
		t.Fatalf("%d request lines for %d requests in %v: over the budget of %d", lines, n, burst, budget)
	}
	if suppressed == 0 || !strings.Contains(s.Logs(), " request lines suppressed") {
		t.Fatalf("no suppressed line: %d lines, %d suppressed", lines, suppressed)
	}
	t.Logf("%d requests in %v: %d lines, %d suppressed", n, burst, lines, suppressed)
}

// TestFirstStartAtATerminal: with stderr a terminal (a pseudo-terminal made
// by script(1)) the first start is a few plain lines — the URL it listens
// on, what it created, the simulated engine, the first admin's command —
// instead of the record; the second start has none of them.
func TestFirstStartAtATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed (util-linux): no pseudo-terminal to run serve in")
	}
	dir := filepath.Join(t.TempDir(), "tty")
	run := func() string {
		cmd := exec.Command(scriptBin, "-qfec", shellQuoteTest(parleyBin)+" serve --listen 127.0.0.1:0 --sim-time-scale 0 --data-dir "+shellQuoteTest(dir), "/dev/null")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out safeBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // script and the serve it started
			_ = cmd.Wait()
		}
		defer stop()
		waitFor(t, 15*time.Second, "serve listening at a terminal", func() bool {
			return listeningRE.MatchString(out.String())
		})
		time.Sleep(300 * time.Millisecond) // the first start's lines follow "listening on" at once
		return strings.ReplaceAll(out.String(), "\r", "")
	}
	out := run()
	url := listeningRE.FindStringSubmatch(out)[1] + "/"
	abs, _ := filepath.Abs(dir)
	for _, want := range []string{
		"\nParley is running: open " + url + "\n",
		"created the data directory " + abs + "\n",
		"created the secret " + filepath.Join(abs, "secret.key"),
		"the engine is SIMULATED",
		"\n      parley worker --engine openai --upstream ",
		"\n      parley admin create-user --admin --email you@example.com --password 'at least 10 characters' --data-dir " + dir + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first start at a terminal lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"msg":"first start"`) {
		t.Errorf("the record too, at a terminal:\n%s", out)
	}
	if again := run(); strings.Contains(again, "First start") || strings.Contains(again, "first start") {
		t.Errorf("second start at a terminal said a first start:\n%s", again)
	}
}

// safeBuffer is a bytes.Buffer for one writer and a polling reader.
type safeBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeEnvRunsServeOnTheServices: the documented path to scale mode —
// scripts/services.sh up, eval "$(scripts/services.sh serve-env)", parley
// serve — puts the gateway on the local PostgreSQL, Redis and ClickHouse
// (and S3, CQL when up): /readyz names each, and an account made through
// it is in PostgreSQL's database "parley". It skips without the services.
func TestServeEnvRunsServeOnTheServices(t *testing.T) {
	if os.Getenv("PARLEY_TEST_POSTGRES_URL") == "" {
		t.Skip("PARLEY_TEST_POSTGRES_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	out, err := exec.Command("bash", "-c", `eval "$(../../scripts/services.sh serve-env)" && env`).Output()
	if err != nil {
		t.Fatalf("serve-env: %v", err)
	}
	set := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "PARLEY_") && !strings.HasPrefix(k, "PARLEY_TEST_") {
			set[k] = v
			t.Setenv(k, v)
		}
	}
	for _, k := range []string{"PARLEY_POSTGRES_URL", "PARLEY_REDIS_URL", "PARLEY_CLICKHOUSE_URL"} {
		if set[k] == "" {
			t.Fatalf("serve-env set no %s: %v", k, set)
		}
	}
	if !strings.Contains(set["PARLEY_POSTGRES_URL"], "/parley?") {
		t.Errorf("PARLEY_POSTGRES_URL %q: not the database of its own", set["PARLEY_POSTGRES_URL"])
	}
	s := startServer(t, fastAuth...)
	res, err := http.Get(s.BaseURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready map[string]string
	_ = json.NewDecoder(res.Body).Decode(&ready)
	res.Body.Close()
	want := []string{"postgres", "redis", "clickhouse"}
	if set["PARLEY_S3_ENDPOINT"] != "" {
		want = append(want, "s3")
	}
	if set["PARLEY_CASSANDRA_HOSTS"] != "" {
		want = append(want, "cql")
	}
	for _, k := range want {
		if ready[k] != "ok" {
			t.Errorf("/readyz %s = %q, want ok: %v", k, ready[k], ready)
		}
	}
	if _, ok := ready["sqlite"]; ok || res.StatusCode != 200 {
		t.Errorf("/readyz %d %v: want 200 on the services, no SQLite", res.StatusCode, ready)
	}
	email := fmt.Sprintf("serve-env-%d@example.com", time.Now().UnixNano())
	s.newAccount(t, email)
	// `parley admin` reads the same variables: it finds the account there.
	if out, err := exec.Command(parleyBin, "admin", "topup", "--data-dir", s.DataDir, "--email", email, "--usd", "1").CombinedOutput(); err != nil {
		t.Fatalf("admin topup on the services: %v\n%s", err, out)
	}
}
