package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	workerv1 "github.com/parleyhq/parley/gen/parley/worker/v1"
	"github.com/parleyhq/parley/gen/parley/worker/v1/workerv1connect"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker"
)

// serveWithToken serves engine with a worker token over h2c.
func serveWithToken(t *testing.T, engine worker.Engine, token string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle((&worker.Service{Engine: engine, EngineName: "fake", ID: "w1", Heartbeat: 50 * time.Millisecond, Token: token}).Handler())
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// A worker with a token refuses every WorkerService call without it, or
// with a wrong one, as unauthenticated, over every protocol; with it, it
// serves.
func TestWorkerTokenRequired(t *testing.T) {
	engine := newFakeEngine()
	engine.generate = func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		_ = emit(llm.Delta{Text: "hi", Tokens: 1})
		return llm.Result{FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1}}, nil
	}
	const token = "s3cret-worker-token-0123456789"
	srv := serveWithToken(t, engine, token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, proto := range []struct {
		name string
		opt  []connect.ClientOption
	}{{"connect", nil}, {"grpc", []connect.ClientOption{connect.WithGRPC()}}, {"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}}} {
		for _, tc := range []struct {
			name, authorization string
			ok                  bool
		}{
			{"no token", "", false},
			{"wrong token", "Bearer wrong-token", false},
			{"token prefix", "Bearer " + token[:len(token)-1], false},
			{"token and more", "Bearer " + token + "x", false},
			{"basic scheme", "Basic " + token, false},
			{"right token", "Bearer " + token, true},
		} {
			c := workerv1connect.NewWorkerServiceClient(worker.H2CClient(), srv.URL, proto.opt...)
			info := connect.NewRequest(&workerv1.InfoRequest{})
			gen := connect.NewRequest(&workerv1.GenerateRequest{Model: "m1", MaxTokens: 5,
				Messages: []*workerv1.ChatMessage{{Role: "user", Parts: []*workerv1.ContentPart{{Kind: &workerv1.ContentPart_Text{Text: "hi"}}}}}})
			if tc.authorization != "" {
				info.Header().Set("Authorization", tc.authorization)
				gen.Header().Set("Authorization", tc.authorization)
			}
			_, err := c.Info(ctx, info)
			stream, serr := c.Generate(ctx, gen)
			deltas := 0
			if serr == nil {
				for stream.Receive() {
					deltas++
				}
				serr = stream.Err()
				stream.Close()
			}
			if tc.ok {
				if err != nil || serr != nil || deltas == 0 {
					t.Errorf("%s, %s: info %v, generate %v (%d messages); want served", proto.name, tc.name, err, serr, deltas)
				}
				continue
			}
			if connect.CodeOf(err) != connect.CodeUnauthenticated || connect.CodeOf(serr) != connect.CodeUnauthenticated || deltas != 0 {
				t.Errorf("%s, %s: info %v, generate %v (%d messages); want unauthenticated", proto.name, tc.name, err, serr, deltas)
			}
		}
	}

	// A refused call's body is never read: a huge one is refused as fast.
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+workerv1connect.WorkerServiceInfoProcedure, strings.NewReader(strings.Repeat("x", 1<<20)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("plain Connect call without a token: HTTP %d, want 401", res.StatusCode)
	}
}

// The gateway's Remote sends the token on every call: with the right one it
// connects and generates; with a wrong one it never becomes live.
func TestRemoteSendsWorkerToken(t *testing.T) {
	engine := newFakeEngine()
	engine.generate = func(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error) {
		_ = emit(llm.Delta{Text: "hi", Tokens: 1})
		return llm.Result{FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1}}, nil
	}
	srv := serveWithToken(t, engine, "right")

	good := worker.Dial(worker.H2CClient(), srv.URL, worker.WithToken("right"), worker.WithBackoff(10*time.Millisecond, 50*time.Millisecond))
	defer good.Close()
	bad := worker.Dial(worker.H2CClient(), srv.URL, worker.WithToken("wrong"), worker.WithBackoff(10*time.Millisecond, 50*time.Millisecond))
	defer bad.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !good.Live() || bad.LastError() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("never live with the right token (%v), or no attempt with the wrong one", good.LastError())
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := good.Generate(context.Background(), &llm.Request{Model: "m1", MaxTokens: 5,
		Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: "hi"}}}}}, func(llm.Delta) error { return nil })
	if err != nil || res.FinishReason != llm.FinishStop {
		t.Fatalf("generate with the token: %+v, %v", res, err)
	}
	if bad.Live() || connect.CodeOf(bad.LastError()) != connect.CodeUnauthenticated {
		t.Errorf("wrong token: live %v, last error %v; want not live, unauthenticated", bad.Live(), bad.LastError())
	}
	if _, err := bad.Generate(context.Background(), new(llm.Request{Model: "m1", MaxTokens: 5}), func(llm.Delta) error { return nil }); err == nil {
		t.Error("generate with a wrong token succeeded")
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7070": true, "127.3.4.5:1": true, "[::1]:7070": true, "localhost:7070": true,
		"0.0.0.0:9000": false, ":9000": false, "[::]:9000": false, "10.0.0.5:9000": false, "worker.example:9000": false,
	} {
		if got := worker.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
