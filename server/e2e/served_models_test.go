package e2e

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// servedModels lists the gateway's models through AdminService as an admin,
// waiting until the worker has reported.
func servedModels(t *testing.T, s *server, want func(map[string]*parleyv1.ServedModel) bool) (map[string]*parleyv1.ServedModel, clients) {
	t.Helper()
	ctx := ctxTimeout(t, 20*time.Second)
	s.admin(t, "create-user", "--email", "ops@example.com", "--password", "ops password", "--admin")
	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "ops@example.com", Password: "ops password"}))
	if err != nil {
		t.Fatal(err)
	}
	ops := s.clients(protocols[0], cred{cookie: sessionCookie(t, in.Header())})
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := ops.Admin.ListServedModels(ctx, connect.NewRequest(&parleyv1.ListServedModelsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*parleyv1.ServedModel{}
		for _, m := range res.Msg.GetModels() {
			got[m.GetId()] = m
		}
		if want(got) {
			return got, ops
		}
		if time.Now().After(deadline) {
			t.Fatalf("served models: %v", res.Msg.GetModels())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func openaiChat(t *testing.T, s *server, key, model string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(
		`{"model":"`+model+`","max_tokens":5,"messages":[{"role":"user","content":"Hello"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A worker serving a model the catalog does not price: by default the
// gateway refuses it — a log line, a /readyz message (still ready), a clear
// error to the client, REFUSED in ListServedModels — and a catalog model no
// worker serves is listed unavailable.
func TestUnpricedModelRefused(t *testing.T) {
	w := startWorker(t, "--models", "sim-small,house-model")
	s := startServer(t, append(fastAuth, "--worker-pool", "us-east="+w.Addr())...)
	got, ops := servedModels(t, s, func(m map[string]*parleyv1.ServedModel) bool {
		return m["house-model"] != nil && m["sim-small"].GetState() == parleyv1.ServedModelState_SERVED_MODEL_STATE_AVAILABLE
	})
	ws, err := ops.Admin.ListWorkers(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListWorkersRequest{}))
	if err != nil || len(ws.Msg.GetWorkers()) != 1 || ws.Msg.GetWorkers()[0].GetPool() != "us-east" {
		t.Errorf("ListWorkers: %v %v; want the one worker in pool us-east", ws, err)
	}
	hm := got["house-model"]
	if hm.GetState() != parleyv1.ServedModelState_SERVED_MODEL_STATE_REFUSED || len(hm.GetWorkers()) != 1 ||
		hm.GetWorkers()[0].GetAddress() != w.Addr() || hm.GetWorkers()[0].GetPool() != "us-east" {
		t.Errorf("house-model: %v", hm)
	}
	if got["sim-large"].GetState() != parleyv1.ServedModelState_SERVED_MODEL_STATE_UNAVAILABLE || len(got["sim-large"].GetWorkers()) != 0 {
		t.Errorf("sim-large, served by no worker: %v", got["sim-large"])
	}
	if !strings.Contains(s.Logs(), "does not price: refused") || !strings.Contains(s.Logs(), "house-model") {
		t.Errorf("no startup log of the refused model")
	}
	res, err := http.Get(s.BaseURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `house-model`) || !strings.Contains(string(b), "--unpriced-models=default") {
		t.Errorf("readyz: %d %s", res.StatusCode, b)
	}
	// The CLI shows the same, with an admin's API key.
	key := strings.TrimSpace(s.admin(t, "create-key", "--email", "ops@example.com"))
	out, err := exec.Command(parleyBin, "models", "--gateway", s.BaseURL, "--api-key", key).CombinedOutput()
	if err != nil {
		t.Fatalf("parley models: %v\n%s", err, out)
	}
	for _, want := range []string{"house-model  refused      none     " + w.Addr() + " (us-east, ready)", "sim-large    unavailable  catalog  -"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("parley models lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(parleyBin, "workers", "--gateway", s.BaseURL, "--api-key", key).CombinedOutput()
	if err != nil || !strings.Contains(string(out), w.Addr()+"  us-east  ready") {
		t.Errorf("parley workers: %v\n%s", err, out)
	}
	a := s.newAccount(t, "unpriced@example.com")
	s.topup(t, a, "1")
	status, body := openaiChat(t, s, a.Key, "house-model")
	if status != http.StatusNotFound || !strings.Contains(body, "no price") || !strings.Contains(body, w.Addr()) {
		t.Errorf("house-model: HTTP %d %s", status, body)
	}
	if status, body := openaiChat(t, s, a.Key, "sim-small"); status != http.StatusOK {
		t.Errorf("sim-small: HTTP %d %s", status, body)
	}
}

// With --unpriced-models=default the same model is served and billed at the
// operator's default price.
func TestUnpricedModelAtDefaultPrice(t *testing.T) {
	w := startWorker(t, "--models", "sim-small,house-model")
	s := startServer(t, append(fastAuth, "--workers", w.Addr(), "--unpriced-models", "default",
		"--unpriced-input-price", "1000000000", "--unpriced-output-price", "3000000000")...)
	got, _ := servedModels(t, s, func(m map[string]*parleyv1.ServedModel) bool {
		return m["house-model"].GetState() == parleyv1.ServedModelState_SERVED_MODEL_STATE_AVAILABLE
	})
	if !got["house-model"].GetDefaultPrice() || got["house-model"].GetWorkers()[0].GetPool() != "default" {
		t.Errorf("house-model: %v", got["house-model"])
	}
	a := s.newAccount(t, "defaultprice@example.com")
	s.topup(t, a, "1")
	c := s.api(protocols[0], cred{bearer: a.Key})
	ctx := ctxTimeout(t, 20*time.Second)
	out, err := c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "house-model", Messages: userText("Hello"), MaxOutputTokens: 5}))
	if err != nil {
		t.Fatal(err)
	}
	u := out.Msg.GetUsage()
	want := (u.GetPromptTokens()*1_000_000_000+999_999)/1_000_000 + (u.GetCompletionTokens()*3_000_000_000+999_999)/1_000_000
	if u.GetCompletionTokens() == 0 || out.Msg.GetCostNanos() != want {
		t.Errorf("usage %v cost %d, want %d at the default prices", u, out.Msg.GetCostNanos(), want)
	}
}
