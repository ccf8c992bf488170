package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// inference is a fake inference server on a fixed loopback port, as a
// gateway in direct mode sees vLLM or llama.cpp: it lists one model, streams
// max_tokens tokens a gap apart with usage (prompt 9 tokens), and keeps its
// own count of the streams it holds open. It can fail every chat request
// with a 500 before any token, and be stopped and started again on its port.
type inference struct {
	addr  string
	gap   time.Duration
	model string
	// slots, when set, bounds the streams it generates at once: the rest
	// queue for one, as a real server's do.
	slots  chan struct{}
	fail   atomic.Bool
	busy   atomic.Int64 // streams it is generating now: its slots in use
	served atomic.Int64 // chat requests answered with a stream
	asked  atomic.Int64 // chat requests received
	// lastTemperature is the last request's temperature as sent ("" when
	// it sent none).
	lastTemperature atomic.Value

	mu  sync.Mutex
	srv *http.Server
}

const inferenceModel = "direct-model"

func startInference(t *testing.T, gap time.Duration) *inference {
	return startInferenceSlots(t, gap, inferenceModel, 0)
}

// startInferenceSlots is startInference serving model with that many
// slots (0: no bound).
func startInferenceSlots(t *testing.T, gap time.Duration, model string, slots int) *inference {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &inference{addr: ln.Addr().String(), gap: gap, model: model}
	if slots > 0 {
		f.slots = make(chan struct{}, slots)
	}
	f.serve(t, ln)
	t.Cleanup(f.stop)
	return f
}

// URL is its address for --workers: openai+http://HOST:PORT/v1.
func (f *inference) URL() string { return "openai+http://" + f.addr + "/v1" }

func (f *inference) serve(t *testing.T, ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, f.model)
	})
	mux.HandleFunc("POST /v1/chat/completions", f.chat)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
}

// stop closes its listener and every connection: the server is gone.
func (f *inference) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		f.srv.Close()
		f.srv = nil
	}
}

// restart serves again on the same port.
func (f *inference) restart(t *testing.T) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 200 {
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	f.serve(t, ln)
}

func (f *inference) chat(w http.ResponseWriter, r *http.Request) {
	f.asked.Add(1)
	var req struct {
		MaxTokens   int             `json:"max_tokens"`
		Temperature json.RawMessage `json:"temperature"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MaxTokens <= 0 {
		http.Error(w, `{"error":{"message":"max_tokens required"}}`, http.StatusBadRequest)
		return
	}
	f.lastTemperature.Store(string(req.Temperature))
	if f.fail.Load() {
		http.Error(w, `{"error":{"message":"CUDA error: an illegal memory access was encountered"}}`, http.StatusInternalServerError)
		return
	}
	if f.slots != nil {
		select {
		case f.slots <- struct{}{}:
			defer func() { <-f.slots }()
		case <-r.Context().Done():
			return
		}
	}
	f.served.Add(1)
	f.busy.Add(1)
	defer f.busy.Add(-1)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := range req.MaxTokens {
		select {
		case <-r.Context().Done():
			return // the client closed the request: the slot is free
		case <-time.After(f.gap):
		}
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", f.model, i)
		fl.Flush()
	}
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n",
		f.model, req.MaxTokens, req.MaxTokens+9)
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// Prices of the direct model: 1,000 and 3,000 nano-USD a token.
const (
	directInputNanos  = 1000
	directOutputNanos = 3000
)

// directCatalog writes a models file that prices the fake server's model.
func directCatalog(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "models.yaml")
	catalog := fmt.Sprintf("models:\n- id: %s\n  display_name: Direct\n  context_window: 8192\n  max_output_tokens: 4096\n"+
		"  input_price_nanos_per_million: %d\n  output_price_nanos_per_million: %d\n", inferenceModel, directInputNanos*1_000_000, directOutputNanos*1_000_000)
	if err := os.WriteFile(file, []byte(catalog), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// webDirectCatalog is directCatalog with the web chat's free tier allowed
// the model.
func webDirectCatalog(t *testing.T) string {
	t.Helper()
	file := directCatalog(t)
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("  tier_limits:\n    free: {requests: 100, input_tokens: 100000, output_tokens: 100000, window: 3h}\n"); err != nil {
		t.Fatal(err)
	}
	return file
}

// directBody is a streamed request for n tokens; distinct prompts spread
// over the servers (no shared prefix to keep them on one).
func directBody(n int, prompt string) string {
	return fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":%q}]}`,
		inferenceModel, n, prompt)
}

func readyWorkers(t *testing.T, s *server) float64 {
	return scrape(t, s, `parley_scheduler_pool_workers_ready{pool="default"}`)
}

// A gateway in direct mode over two inference servers, no worker process:
// usage charged exactly as the servers report it; a server failing before
// the first token is retried on the other (no client sees it) and ejected,
// and taken back once it recovers; a server that goes away is routed
// around within a poll and taken back when it returns; a client that goes
// away frees the server's slot within 100 ms, read from the server's own
// count.
func TestDirectUpstreams(t *testing.T) {
	up := []*inference{startInference(t, 2*time.Millisecond), startInference(t, 2*time.Millisecond)}
	gw := startServer(t, append(fastAuth, "--workers", up[0].URL()+","+up[1].URL(), "--models-file", directCatalog(t))...)
	checkDirect(t, []*server{gw}, up)
}

// The same with two gateways in scale mode (PostgreSQL, Redis): each
// addresses both servers itself, and the balance they share is charged
// exactly.
func TestScaleDirectUpstreams(t *testing.T) {
	scaleMode(t)
	up := []*inference{startInference(t, 2*time.Millisecond), startInference(t, 2*time.Millisecond)}
	workers := up[0].URL() + "," + up[1].URL()
	catalog := directCatalog(t)
	gws := []*server{
		startServer(t, append(fastAuth, "--workers", workers, "--models-file", catalog)...),
		startServer(t, append(fastAuth, "--workers", workers, "--models-file", catalog)...),
	}
	checkDirect(t, gws, up)
}

func checkDirect(t *testing.T, gws []*server, up []*inference) {
	a := gws[0].newAccount(t, "direct@example.com")
	gws[0].topup(t, a, "10")
	for _, gw := range gws {
		waitFor(t, 10*time.Second, "both servers ready", func() bool { return readyWorkers(t, gw) == 2 })
	}
	ctx := ctxTimeout(t, 120*time.Second)
	n := 0
	stream := func(gw *server, tokens int) outcome {
		n++
		return streamChatBody(ctx, gw, a.Key, directBody(tokens, fmt.Sprintf("request %d: tell me about the rabbit", n)))
	}

	t.Run("UsageExact", func(t *testing.T) {
		before := balanceNanos(t, gws[0].api(protocols[0], cred{bearer: a.Key}))
		served := [2]int64{up[0].served.Load(), up[1].served.Load()}
		const requests, tokens = 20, 7
		var wg sync.WaitGroup
		outs := make([]outcome, requests)
		for i := range requests {
			gw := gws[i%len(gws)]
			body := directBody(tokens, fmt.Sprintf("usage %d: tell me about the rabbit", i))
			wg.Go(func() { outs[i] = streamChatBody(ctx, gw, a.Key, body) })
		}
		wg.Wait()
		for i, o := range outs {
			if !o.done || o.err != "" {
				t.Fatalf("request %d: %+v", i, o)
			}
		}
		want := int64(requests) * (9*directInputNanos + tokens*directOutputNanos)
		waitFor(t, 5*time.Second, "the balance settled", func() bool {
			return before-balanceNanos(t, gws[0].api(protocols[0], cred{bearer: a.Key})) == want
		})
		d0, d1 := up[0].served.Load()-served[0], up[1].served.Load()-served[1]
		t.Logf("%d requests: %d on server 0, %d on server 1; charged %d nano-USD", requests, d0, d1, want)
		if d0+d1 != requests || d0 == 0 || d1 == 0 {
			t.Errorf("served %d and %d, want all %d spread over both", d0, d1, requests)
		}
	})

	t.Run("FailoverAndEjection", func(t *testing.T) {
		up[0].fail.Store(true)
		asked := up[0].asked.Load()
		for i := range 8 {
			if o := stream(gws[i%len(gws)], 3); !o.done || o.err != "" {
				t.Fatalf("request %d while server 0 fails: %+v", i, o)
			}
		}
		if up[0].asked.Load() == asked {
			t.Fatal("server 0 was never tried: the failover was not exercised")
		}
		// Each gateway ejects on its own count of failures; one whose picks
		// happened to go to server 1 has not seen enough yet: more
		// requests (every one served) until it has.
		for _, gw := range gws {
			ejected := func() bool {
				return readyWorkers(t, gw) == 1 && scrape(t, gw, fmt.Sprintf(`parley_scheduler_ejections_total{worker=%q}`, up[0].URL())) >= 1
			}
			for i := 0; !ejected(); i++ {
				if i == 40 {
					t.Fatalf("failing server not ejected after 40 more requests: %s", metricsBody(t, gw.BaseURL))
				}
				if o := stream(gw, 3); !o.done || o.err != "" {
					t.Fatalf("a request while server 0 fails: %+v", o)
				}
			}
		}
		up[0].fail.Store(false)
		for _, gw := range gws {
			waitFor(t, 10*time.Second, "the recovered server back in rotation", func() bool { return readyWorkers(t, gw) == 2 })
		}
		served := up[0].served.Load()
		waitFor(t, 10*time.Second, "the recovered server serving again", func() bool {
			if o := stream(gws[0], 3); !o.done {
				t.Fatalf("request: %+v", o)
			}
			return up[0].served.Load() > served
		})
	})

	t.Run("DownAndBack", func(t *testing.T) {
		up[1].stop()
		start := time.Now()
		for _, gw := range gws {
			waitFor(t, 5*time.Second, "the stopped server out of rotation", func() bool { return readyWorkers(t, gw) == 1 })
		}
		t.Logf("a stopped server out of rotation after %v", time.Since(start))
		for i := range 4 {
			if o := stream(gws[i%len(gws)], 3); !o.done || o.err != "" {
				t.Fatalf("request %d with server 1 down: %+v", i, o)
			}
		}
		up[1].restart(t)
		for _, gw := range gws {
			waitFor(t, 10*time.Second, "the restarted server back", func() bool { return readyWorkers(t, gw) == 2 })
		}
		served := up[1].served.Load()
		waitFor(t, 10*time.Second, "the restarted server serving", func() bool {
			if o := stream(gws[len(gws)-1], 3); !o.done {
				t.Fatalf("request: %+v", o)
			}
			return up[1].served.Load() > served
		})
	})

	t.Run("CancelFreesTheSlot", func(t *testing.T) {
		for i, gw := range gws {
			cctx, cancel := context.WithCancel(ctx)
			req, _ := http.NewRequestWithContext(cctx, "POST", gw.BaseURL+"/v1/chat/completions", strings.NewReader(directBody(4000, fmt.Sprintf("cancel %d", i))))
			req.Header.Set("Authorization", "Bearer "+a.Key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 512)
			if _, err := res.Body.Read(buf); err != nil || up[0].busy.Load()+up[1].busy.Load() != 1 {
				t.Fatalf("stream did not start: %v, busy %d+%d", err, up[0].busy.Load(), up[1].busy.Load())
			}
			cancel()
			res.Body.Close()
			start := time.Now()
			waitFor(t, 5*time.Second, "the server's slot freed", func() bool { return up[0].busy.Load()+up[1].busy.Load() == 0 })
			took := time.Since(start)
			t.Logf("gateway %d: the server's slot freed %v after the client went away", i, took)
			if took > 100*time.Millisecond {
				t.Errorf("gateway %d: the slot was freed %v after the client went away, want within 100 ms", i, took)
			}
		}
	})
}

// The web chat's per-chat settings reach the inference server: the
// temperature as sent (none when unset) and the answer's length cap; a
// temperature out of range is refused naming the field.
func TestWebChatSettingsReachTheEngine(t *testing.T) {
	up := startInference(t, time.Millisecond)
	gw := startServer(t, append(fastAuth, "--workers", up.URL(), "--models-file", webDirectCatalog(t))...)
	a := gw.newAccount(t, "settings@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	c := gw.api(protocols[0], cred{cookie: a.Cookie})
	temp := 0.3
	started, answer, _ := send(t, ctx, c, &parleyv1.SendMessageRequest{Model: inferenceModel, Parts: textPart("hi"), MaxOutputTokens: 5, Temperature: &temp})
	if got := up.lastTemperature.Load(); got != "0.3" {
		t.Errorf("temperature at the engine: %q, want 0.3", got)
	}
	if n := strings.Count(answer, "tok"); n != 5 {
		t.Errorf("the answer's length cap of 5 gave %d tokens: %q", n, answer)
	}
	id := started.GetConversationId()
	_, _, _ = send(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: id, Parts: textPart("again"), MaxOutputTokens: 3})
	if got := up.lastTemperature.Load(); got != "" {
		t.Errorf("no temperature set, the engine got %q", got)
	}
	bad := 2.5
	stream, err := c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{ConversationId: id, Parts: textPart("hot"), Temperature: &bad}))
	if err == nil {
		for stream.Receive() {
		}
		err = stream.Err()
	}
	if fv := new(parleyv1.FieldViolation); connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, fv) || fv.GetField() != "temperature" {
		t.Errorf("temperature 2.5: %v", err)
	}
}

// Continue: an answer that stopped at its length limit goes on in the same
// message — its text kept, the new text added, its tokens summed, recorded
// as usage — and only such an answer, only by its owner.
func TestContinueAnAnswer(t *testing.T) {
	up := startInference(t, time.Millisecond)
	gw := startServer(t, append(fastAuth, "--workers", up.URL(), "--models-file", webDirectCatalog(t))...)
	a, b := gw.newAccount(t, "continue@example.com"), gw.newAccount(t, "nosy@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	c, bc := gw.api(protocols[0], cred{cookie: a.Cookie}), gw.api(protocols[0], cred{cookie: b.Cookie})
	started, first, fin := send(t, ctx, c, &parleyv1.SendMessageRequest{Model: inferenceModel, Parts: textPart("Count."), MaxOutputTokens: 3})
	if fin.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_LENGTH {
		t.Fatalf("the first answer ended %v", fin.GetFinishReason())
	}
	conv, answer := started.GetConversationId(), started.GetMessageId()
	cont := func(cl apiClients, id string, max int64) (string, *parleyv1.GenerationFinished, string, error) {
		stream, err := cl.Conv.ContinueMessage(ctx, connect.NewRequest(&parleyv1.ContinueMessageRequest{ConversationId: conv, MessageId: id, MaxOutputTokens: max}))
		if err != nil {
			return "", nil, "", err
		}
		var text strings.Builder
		var done *parleyv1.GenerationFinished
		var msgID string
		for stream.Receive() {
			switch k := stream.Msg().GetEvent().GetKind().(type) {
			case *parleyv1.GenerationEvent_Started:
				msgID = k.Started.GetMessageId()
			case *parleyv1.GenerationEvent_Delta:
				text.WriteString(k.Delta.GetText())
			case *parleyv1.GenerationEvent_Finished:
				done = k.Finished
			}
		}
		return text.String(), done, msgID, stream.Err()
	}
	_, _, _, err := cont(bc, answer, 4)
	wantCode(t, "another person's answer", err, connect.CodeNotFound)
	added, done, msgID, err := cont(c, answer, 4)
	if err != nil || msgID != answer || strings.Count(added, "tok") != 4 || done.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_LENGTH {
		t.Fatalf("continued: %q %v %s %v", added, done, msgID, err)
	}
	msgs, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: conv}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(msgs.Msg.GetMessages()); n != 2 {
		t.Fatalf("%d messages after Continue, want the question and its one answer", n)
	}
	stored := msgs.Msg.GetMessages()[1]
	if text := stored.GetParts()[0].GetText(); text != first+added || stored.GetTokens() != 7 {
		t.Fatalf("the stored answer: %q (%d tokens), want %q (7)", text, stored.GetTokens(), first+added)
	}
	// An answer that ended on its own, or a question, cannot be continued.
	_, _, _, err = cont(c, started.GetUserMessageId(), 0)
	if fv := new(parleyv1.FieldViolation); connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, fv) || fv.GetField() != "message_id" {
		t.Fatalf("continuing a question: %v", err)
	}
	// Each part was recorded as usage.
	var recs []*parleyv1.UsageRecord
	waitFor(t, 10*time.Second, "two usage records", func() bool {
		res, err := c.Billing.ListUsage(ctx, connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 10}))
		if err != nil {
			t.Fatal(err)
		}
		recs = res.Msg.GetUsageRecords()
		return len(recs) == 2
	})
	if recs[0].GetUsage().GetCompletionTokens()+recs[1].GetUsage().GetCompletionTokens() != 7 {
		t.Fatalf("usage: %v", recs)
	}
}
