package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/models"
)

// Without --web-origins no response carries CORS headers (same-origin
// only): never "Access-Control-Allow-Origin: *" with credentials. With
// origins, exactly those are allowed, with credentials.
func TestCORSSameOriginUnlessConfigured(t *testing.T) {
	check := func(t *testing.T, s *server, origin string, wantAllowed bool) {
		t.Helper()
		for _, req := range []*http.Request{
			mustRequest(t, "GET", s.BaseURL+"/healthz", ""),
			mustRequest(t, "OPTIONS", s.BaseURL+"/parley.v1.ChatService/Complete", ""),
			mustRequest(t, "POST", s.BaseURL+"/parley.v1.AuthService/GetMe", "{}"),
		} {
			req.Header.Set("Origin", origin)
			if req.Method == "OPTIONS" {
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Access-Control-Request-Headers", "content-type")
			} else {
				req.Header.Set("Content-Type", "application/json")
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			allow, creds := res.Header.Get("Access-Control-Allow-Origin"), res.Header.Get("Access-Control-Allow-Credentials")
			if allow == "*" && creds == "true" {
				t.Errorf("%s %s from %s: wildcard origin with credentials", req.Method, req.URL.Path, origin)
			}
			if wantAllowed && (allow != origin || creds != "true") {
				t.Errorf("%s %s from %s: Allow-Origin %q, Allow-Credentials %q; want the origin, with credentials", req.Method, req.URL.Path, origin, allow, creds)
			}
			if !wantAllowed && (allow != "" || creds != "") {
				t.Errorf("%s %s from %s: Allow-Origin %q, Allow-Credentials %q; want no CORS headers", req.Method, req.URL.Path, origin, allow, creds)
			}
		}
	}
	t.Run("no origins", func(t *testing.T) {
		s := startServer(t)
		check(t, s, "https://evil.example", false)
	})
	t.Run("configured", func(t *testing.T) {
		s := startServer(t, "--web-origins", "https://app.example.com")
		check(t, s, "https://app.example.com", true)
		check(t, s, "https://evil.example", false)
	})
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Slow headers and slow bodies are cut at their timeouts; a response stream
// far longer than the body timeout is not.
func TestReadTimeoutsSpareStreams(t *testing.T) {
	s := startServer(t, append(fastAuth, "--read-header-timeout", "1s", "--body-read-timeout", "1s", "--sim-time-scale", "1")...)
	a := s.newAccount(t, "slow@example.com")
	s.topup(t, a, "1")
	addr := strings.TrimPrefix(s.BaseURL, "http://")

	// closedWithin sends head, then nothing, and measures how long the
	// gateway keeps the connection (reading whatever it answers).
	closedWithin := func(what, head string) time.Duration {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		reply, _ := io.ReadAll(conn)
		took := time.Since(start)
		if took > 5*time.Second {
			t.Errorf("%s: connection held %v, want it cut at about 1 s", what, took)
		}
		first, _, _ := strings.Cut(string(reply), "\r\n")
		t.Logf("%s: closed after %v, answer %q", what, took.Round(time.Millisecond), first)
		return took
	}
	closedWithin("headers never finished", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
	took := closedWithin("body never finished", fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":", a.Key))
	if took < 500*time.Millisecond {
		t.Errorf("a stalled body was cut after %v, before its timeout", took)
	}

	// The same over HTTP/2 (h2c): a body that stops half-way ends in an
	// error response at about the timeout.
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = io.WriteString(pw, `{"model":`) }()
	req, _ := http.NewRequest("POST", s.BaseURL+"/parley.v1.ChatService/Complete", pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.Key)
	start := time.Now()
	res, err := h2cClient().Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	took = time.Since(start)
	if took > 5*time.Second || took < 500*time.Millisecond || (err == nil && res.StatusCode == http.StatusOK) {
		t.Errorf("h2c stalled body: %v %v after %v; want an error at about 1 s", res, err, took)
	}
	if err == nil {
		t.Logf("h2c stalled body: HTTP %d after %v", res.StatusCode, took.Round(time.Millisecond))
	}

	// A stream of over 2 s (~140 tokens at the sim's real pace) outlives the 1 s
	// body timeout, over HTTP/1.1 (OpenAI SSE) and HTTP/2 (gRPC).
	body := `{"model":"sim-small","stream":true,"max_tokens":150,"messages":[{"role":"user","content":"Tell me a long story about a rabbit."}]}`
	req = mustRequest(t, "POST", s.BaseURL+"/v1/chat/completions", body)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("Content-Type", "application/json")
	start = time.Now()
	res, err = h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	finish := ""
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(line), &chunk) == nil && len(chunk.Choices) > 0 && chunk.Choices[0].FinishReason != nil {
			finish = *chunk.Choices[0].FinishReason
		}
	}
	res.Body.Close()
	if took := time.Since(start); (finish != "stop" && finish != "length") || took < 1500*time.Millisecond {
		t.Errorf("HTTP/1.1 stream: finish %q after %v (%v); want a normal end after well over the 1 s body timeout", finish, took, sc.Err())
	}

	start = time.Now()
	stream, err := s.api(protocols[1], cred{bearer: a.Key}).Chat.CompleteStream(ctxTimeout(t, 30*time.Second), connect.NewRequest(&parleyv1.CompleteStreamRequest{
		Model: "sim-small", Messages: userText("Tell me a long story about a rabbit."), MaxOutputTokens: 150}))
	if err != nil {
		t.Fatal(err)
	}
	var fin *parleyv1.GenerationFinished
	for stream.Receive() {
		if f := stream.Msg().GetEvent().GetFinished(); f != nil {
			fin = f
		}
	}
	if r := fin.GetFinishReason(); stream.Err() != nil || (r != parleyv1.FinishReason_FINISH_REASON_STOP && r != parleyv1.FinishReason_FINISH_REASON_LENGTH) || time.Since(start) < 1500*time.Millisecond {
		t.Errorf("gRPC stream: %v, finished %v after %v; want a normal end after well over the 1 s body timeout", stream.Err(), fin, time.Since(start))
	}
}

// Admin errors are typed and say nothing of the store: an unknown user id
// is not_found, not "FOREIGN KEY constraint failed" with code unknown.
func TestAdminErrorsAreTyped(t *testing.T) {
	s := startServer(t, fastAuth...)
	s.admin(t, "create-user", "--email", "ops@example.com", "--password", "ops password", "--admin")
	ctx := ctxTimeout(t, 20*time.Second)
	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "ops@example.com", Password: "ops password"}))
	if err != nil {
		t.Fatal(err)
	}
	ops := s.clients(protocols[0], cred{cookie: sessionCookie(t, in.Header())})
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"AdjustBalance, unknown user id", func() error {
			_, err := ops.Admin.AdjustBalance(ctx, connect.NewRequest(&parleyv1.AdjustBalanceRequest{UserId: "no-such-user", DeltaNanos: 1000}))
			return err
		}()},
		{"AdjustBalance, unknown email", func() error {
			_, err := ops.Admin.AdjustBalance(ctx, connect.NewRequest(&parleyv1.AdjustBalanceRequest{Email: "nobody@example.com", DeltaNanos: 1000}))
			return err
		}()},
		{"SetUserTier, unknown user id", func() error {
			_, err := ops.Admin.SetUserTier(ctx, connect.NewRequest(&parleyv1.SetUserTierRequest{UserId: "no-such-user", Tier: parleyv1.Tier_TIER_PRO}))
			return err
		}()},
	} {
		wantCode(t, tc.what, tc.err, connect.CodeNotFound)
		if msg := strings.ToLower(connect.CodeOf(tc.err).String() + " " + errString(tc.err)); strings.Contains(msg, "foreign") || strings.Contains(msg, "constraint") || strings.Contains(msg, "sql") {
			t.Errorf("%s: store text leaked: %v", tc.what, tc.err)
		}
	}
	_, err = ops.Admin.ListUsage(ctx, connect.NewRequest(&parleyv1.AdminServiceListUsageRequest{UserId: "no-such-user", PageToken: "garbage"}))
	if code := connect.CodeOf(err); code != connect.CodeInvalidArgument {
		t.Errorf("ListUsage with a bad page token: %v, want invalid_argument", err)
	}
}

// An empty text part is refused naming it, on every surface; an OpenAI
// assistant message with empty content and tool calls is fine. Stop
// sequences count toward the prompt's size bound.
func TestSmallValidationGaps(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "gaps@example.com")
	s.topup(t, a, "1")
	ctx := ctxTimeout(t, 30*time.Second)
	c := s.api(protocols[0], cred{bearer: a.Key})

	_, err := c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: []*parleyv1.Message{
		{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: "Hello"}}, {Kind: &parleyv1.Part_Text{Text: ""}}}},
	}}))
	wantCode(t, "empty text part", err, connect.CodeInvalidArgument)
	if fv := new(parleyv1.FieldViolation); !apierr.Detail(err, fv) || fv.GetField() != "messages[0].parts[1].text" {
		t.Errorf("empty text part: field %q, want messages[0].parts[1].text", fv.GetField())
	}

	post := func(body string) (int, string) {
		req := mustRequest(t, "POST", s.BaseURL+"/v1/chat/completions", body)
		req.Header.Set("Authorization", "Bearer "+a.Key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := post(`{"model":"sim-small","messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`); code != 400 || !strings.Contains(body, `"param":"messages[0].content[0].text"`) {
		t.Errorf("OpenAI empty text part: %d %s", code, body)
	}
	if code, body := post(`{"model":"sim-small","max_tokens":20,"messages":[{"role":"user","content":"What is the weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"sunny"}]}`); code != 200 {
		t.Errorf("OpenAI assistant message with empty content and tool calls: %d %s", code, body)
	}

	catalog, err := models.Load("")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := catalog.Lookup("sim-small")
	limit := min(int(16*m.ContextWindow), 8<<20)
	prompt := strings.Repeat("a", limit-100)
	stop := []string{strings.Repeat("x", 64), strings.Repeat("y", 64)}
	_, err = c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText(prompt), Stop: stop}))
	wantCode(t, "prompt and stop sequences over the size bound", err, connect.CodeInvalidArgument)
	if fv := new(parleyv1.FieldViolation); !apierr.Detail(err, fv) || fv.GetField() != "stop" {
		t.Errorf("stop over the bound: field %q (%v), want stop", fv.GetField(), err)
	}
}
