package e2e

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	workerv1 "github.com/parleyhq/parley/gen/parley/worker/v1"
	"github.com/parleyhq/parley/gen/parley/worker/v1/workerv1connect"
)

// A worker started with a token refuses WorkerService calls without it or
// with a wrong one (unauthenticated), serves them with it, and a gateway
// given the same token generates through it.
func TestWorkerTokenRefusesStrangers(t *testing.T) {
	const token = "e2e-worker-token-4f9b0c1d2e3a"
	w := startWorker(t, "--worker-token", token)
	ctx := ctxTimeout(t, 30*time.Second)

	for _, p := range protocols {
		c := workerv1connect.NewWorkerServiceClient(p.client(), w.BaseURL, p.opts...)
		for _, tc := range []struct {
			name, authorization string
			want                connect.Code
		}{
			{"no token", "", connect.CodeUnauthenticated},
			{"wrong token", "Bearer not-the-token", connect.CodeUnauthenticated},
			{"right token", "Bearer " + token, 0},
		} {
			req := connect.NewRequest(&workerv1.GenerateRequest{Model: "sim-small", MaxTokens: 5,
				Messages: []*workerv1.ChatMessage{{Role: "user", Parts: []*workerv1.ContentPart{{Kind: &workerv1.ContentPart_Text{Text: "Hello"}}}}}})
			if tc.authorization != "" {
				req.Header().Set("Authorization", tc.authorization)
			}
			stream, err := c.Generate(ctx, req)
			deltas := 0
			if err == nil {
				for stream.Receive() {
					if stream.Msg().GetDelta() != nil {
						deltas++
					}
				}
				err = stream.Err()
				stream.Close()
			}
			if got := connect.CodeOf(err); err != nil && got != tc.want || err == nil && tc.want != 0 {
				t.Errorf("%s, %s: %v, want code %v", p.name, tc.name, err, tc.want)
			}
			if tc.want == 0 && deltas == 0 {
				t.Errorf("%s, %s: no deltas", p.name, tc.name)
			}
			if tc.want != 0 && deltas != 0 {
				t.Errorf("%s, %s: %d deltas generated for a stranger", p.name, tc.name, deltas)
			}
		}
	}
	// Health stays open to probes.
	res, err := http.Get(w.BaseURL + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", res, err)
	}
	res.Body.Close()

	// The gateway with the token (from a file, as a Kubernetes secret mounts it).
	file := filepath.Join(t.TempDir(), "worker-token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, append(fastAuth, "--workers", w.Addr(), "--worker-token-file", file)...)
	a := s.newAccount(t, "token@example.com")
	s.topup(t, a, "1")
	out, err := s.api(protocols[0], cred{bearer: a.Key}).Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{
		Model: "sim-small", Messages: userText("Hello"), MaxOutputTokens: 10}))
	if err != nil || out.Msg.GetUsage().GetCompletionTokens() == 0 {
		t.Fatalf("completion through a token worker: %v %v", out, err)
	}

	// A gateway with the wrong token is refused, and says so.
	wrong := startServer(t, append(fastAuth, "--workers", w.Addr(), "--worker-token", "not-the-token")...)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(wrong.Logs(), "worker refuses this gateway") {
		if time.Now().After(deadline) {
			t.Fatalf("no log of the refused token:\n%s", wrong.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A worker on an address other hosts can reach refuses to start without a
// token, unless told it is insecure on purpose (and then says so loudly).
func TestWorkerWithoutTokenOnOpenAddress(t *testing.T) {
	cmd := exec.Command(parleyBin, "worker", "--listen", "0.0.0.0:0", "--time-scale", "0")
	cmd.Env = withoutEnv(os.Environ(), "PARLEY_WORKER_TOKEN")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "--worker-token") {
		t.Fatalf("worker on 0.0.0.0 without a token: %v\n%s", err, out)
	}
	w := startWorker(t, "--listen", "0.0.0.0:0", "--insecure-no-worker-token")
	if !strings.Contains(w.Logs(), "INSECURE") {
		t.Errorf("no warning in the logs:\n%s", w.Logs())
	}
	w2 := startWorker(t, "--listen", "0.0.0.0:0", "--worker-token", "x-token")
	if strings.Contains(w2.Logs(), "INSECURE") {
		t.Errorf("warning with a token:\n%s", w2.Logs())
	}
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

// With its only worker killed, the gateway answers at once — 503 with
// Retry-After on the OpenAI surface, unavailable over Connect — rather than
// holding the request and its balance for the whole queue wait; the hold is
// released.
func TestRequestFailsFastWhenTheOnlyWorkerDies(t *testing.T) {
	w := startWorker(t, "--engine", "sim")
	s := startServer(t, append(fastAuth, "--workers", w.Addr())...)
	a := s.newAccount(t, "failfast@example.com")
	s.topup(t, a, "1")
	c := s.api(protocols[0], cred{bearer: a.Key})
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{
		Model: "sim-small", Messages: userText("Hello"), MaxOutputTokens: 10})); err != nil {
		t.Fatal(err)
	}
	before, err := c.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatal(err)
	}

	w.Signal(syscall.SIGKILL)
	if _, err := w.Wait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Right after the kill (the gateway may not have noticed yet) and again
	// once it has: every try is refused within about a second.
	for i := range 3 {
		start := time.Now()
		_, err := c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{
			Model: "sim-small", Messages: userText("Hello"), MaxOutputTokens: 10}))
		took := time.Since(start)
		wantCode(t, "Complete with the worker dead", err, connect.CodeUnavailable)
		if ce := (*connect.Error)(nil); errors.As(err, &ce) && ce.Meta().Get("Retry-After") == "" {
			t.Errorf("try %d: no Retry-After", i)
		}
		if took > 1500*time.Millisecond {
			t.Errorf("try %d: refused after %v, want within about a second", i, took)
		}

		start = time.Now()
		req, _ := http.NewRequestWithContext(ctx, "POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(
			`{"model":"sim-small","max_tokens":10,"messages":[{"role":"user","content":"Hello"}]}`))
		req.Header.Set("Authorization", "Bearer "+a.Key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if took := time.Since(start); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || took > 1500*time.Millisecond {
			t.Errorf("try %d, OpenAI surface: HTTP %d, Retry-After %q after %v; want 503 with Retry-After at once",
				i, res.StatusCode, res.Header.Get("Retry-After"), took)
		}
		time.Sleep(200 * time.Millisecond)
	}
	after, err := c.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if after.Msg.GetReservedNanos() != 0 || after.Msg.GetBalanceNanos() != before.Msg.GetBalanceNanos() {
		t.Errorf("after refused requests: balance %d (was %d), reserved %d; want unchanged and nothing held",
			after.Msg.GetBalanceNanos(), before.Msg.GetBalanceNanos(), after.Msg.GetReservedNanos())
	}
}
