package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
)

// apiClients are the API channel's clients over one protocol.
type apiClients struct {
	Chat    parleyv1connect.ChatServiceClient
	Billing parleyv1connect.BillingServiceClient
	Conv    parleyv1connect.ConversationServiceClient
	Models  parleyv1connect.ModelServiceClient
	// Projects, Stores, Files and Memories: the knowledge services.
	Projects parleyv1connect.ProjectServiceClient
	Stores   parleyv1connect.VectorStoreServiceClient
	Files    parleyv1connect.FileServiceClient
	Memories parleyv1connect.MemoryServiceClient
}

var allProtocols = append(append([]protocol{}, protocols...), protocol{"grpc-web", h1Client, []connect.ClientOption{connect.WithGRPCWeb()}})

func (s *server) api(p protocol, c cred) apiClients {
	hc := p.client()
	hc.Transport = credTransport{base: hc.Transport, c: c}
	return apiClients{
		Chat:    parleyv1connect.NewChatServiceClient(hc, s.BaseURL, p.opts...),
		Billing: parleyv1connect.NewBillingServiceClient(hc, s.BaseURL, p.opts...),
		Conv:    parleyv1connect.NewConversationServiceClient(hc, s.BaseURL, p.opts...),
		Models:  parleyv1connect.NewModelServiceClient(hc, s.BaseURL, p.opts...),

		Projects: parleyv1connect.NewProjectServiceClient(hc, s.BaseURL, p.opts...),
		Stores:   parleyv1connect.NewVectorStoreServiceClient(hc, s.BaseURL, p.opts...),
		Files:    parleyv1connect.NewFileServiceClient(hc, s.BaseURL, p.opts...),
		Memories: parleyv1connect.NewMemoryServiceClient(hc, s.BaseURL, p.opts...),
	}
}

// topup gives the account usd dollars through `parley admin topup`.
func (s *server) topup(t *testing.T, a *account, usd string) {
	t.Helper()
	s.admin(t, "topup", "--email", a.Email, "--usd", usd)
}

func userText(text string) []*parleyv1.Message {
	return []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: text}}}}}
}

func TestCompleteOverEveryProtocol(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "api@example.com")
	s.topup(t, a, "10")
	for _, p := range allProtocols {
		t.Run(p.name, func(t *testing.T) {
			c := s.api(p, cred{bearer: a.Key})
			ctx := ctxTimeout(t, 20*time.Second)
			res, err := c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("Hello, who are you?"), MaxOutputTokens: 30}))
			if err != nil {
				t.Fatal(err)
			}
			text := res.Msg.GetMessage().GetParts()[0].GetText()
			if text == "" || res.Msg.GetUsage().GetCompletionTokens() == 0 || res.Msg.GetCostNanos() <= 0 {
				t.Fatalf("response %v", res.Msg)
			}
			stream, err := c.Chat.CompleteStream(ctx, connect.NewRequest(&parleyv1.CompleteStreamRequest{Model: "sim-small", Messages: userText("Hello, who are you?"), MaxOutputTokens: 30}))
			if err != nil {
				t.Fatal(err)
			}
			var streamed strings.Builder
			var seqs []uint64
			var fin *parleyv1.GenerationFinished
			for stream.Receive() {
				ev := stream.Msg().GetEvent()
				seqs = append(seqs, ev.GetSeq())
				streamed.WriteString(ev.GetDelta().GetText())
				if f := ev.GetFinished(); f != nil {
					fin = f
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			// The sim is deterministic: the stream says what the unary call said.
			if streamed.String() != text || fin == nil || fin.GetUsage().GetCompletionTokens() != res.Msg.GetUsage().GetCompletionTokens() {
				t.Fatalf("stream %q (finished %v), unary %q", streamed.String(), fin, text)
			}
			for i, seq := range seqs {
				if seq != uint64(i+1) {
					t.Fatalf("seqs %v", seqs)
				}
			}
		})
	}
}

func TestOpenAIEndpoint(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "openai@example.com")
	s.topup(t, a, "10")
	post := func(body string, key string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := h1Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}

	t.Run("non-stream", func(t *testing.T) {
		res, body := post(`{"model":"sim-small","messages":[{"role":"user","content":"Hello"}],"max_tokens":20,"seed":7}`, a.Key)
		var out struct {
			Object  string `json:"object"`
			Choices []struct {
				Message      struct{ Role, Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				TotalTokens      int `json:"total_tokens"`
			}
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.Object != "chat.completion" ||
			out.Choices[0].Message.Content == "" || out.Usage.TotalTokens != out.Usage.PromptTokens+out.Usage.CompletionTokens {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	})

	t.Run("stream golden bytes", func(t *testing.T) {
		res, body := post(`{"model":"sim-small","messages":[{"role":"user","content":"Hello"}],"max_tokens":3,"seed":7,"stream":true,"stream_options":{"include_usage":true}}`, a.Key)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("X-Accel-Buffering") != "no" {
			t.Fatalf("%d %v", res.StatusCode, res.Header)
		}
		// Ids and timestamps vary; everything else is exact.
		norm := regexp.MustCompile(`"id":"chatcmpl-[0-9a-f-]+","object":"chat.completion.chunk","created":[0-9]+`).
			ReplaceAllString(string(body), `"id":"ID","object":"chat.completion.chunk","created":0`)
		chunks := strings.Split(strings.TrimSuffix(norm, "\n\n"), "\n\n")
		if len(chunks) != 7 {
			t.Fatalf("want role, 3 deltas, finish, usage, [DONE]; got %d events:\n%s", len(chunks), norm)
		}
		head := `data: {"id":"ID","object":"chat.completion.chunk","created":0,"model":"sim-small","choices":[`
		if chunks[0] != head+`{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` {
			t.Errorf("role chunk %q", chunks[0])
		}
		for _, c := range chunks[1:4] {
			if !strings.HasPrefix(c, head+`{"index":0,"delta":{"content":"`) || !strings.HasSuffix(c, `"},"finish_reason":null}]}`) {
				t.Errorf("delta chunk %q", c)
			}
		}
		if chunks[4] != head+`{"index":0,"delta":{},"finish_reason":"length"}]}` {
			t.Errorf("finish chunk %q", chunks[4])
		}
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(head) + `\],"usage":\{"prompt_tokens":\d+,"completion_tokens":3,"total_tokens":\d+,"prompt_tokens_details":\{"cached_tokens":\d+\}\}\}$`).MatchString(chunks[5]) {
			t.Errorf("usage chunk %q", chunks[5])
		}
		if chunks[6] != "data: [DONE]" {
			t.Errorf("last %q", chunks[6])
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			body, key string
			status    int
			typ       string
			param     string
		}{
			{`{"model":"sim-small","messages":[{"role":"user","content":"x"}]}`, "pk_wrong", 401, "authentication_error", ""},
			{`{"model":"no-such-model","messages":[{"role":"user","content":"x"}]}`, a.Key, 404, "invalid_request_error", "model"},
			{`{"model":"sim-small","messages":[]}`, a.Key, 400, "invalid_request_error", "messages"},
			{`{"model":"sim-small","messages":[{"role":"user","content":"x"}],"n":9}`, a.Key, 400, "invalid_request_error", "n"},
			{`{"model":"sim-small","messages":[{"role":"user","content":"x"}],"tools":[{"type":"code_interpreter"}]}`, a.Key, 400, "invalid_request_error", "tools[0].type"},
			{`{"model":"sim-small","messages":[{"role":"user","content":"x"}],"max_tokens":999999}`, a.Key, 400, "invalid_request_error", "max_tokens"},
			{`{"model":"sim-small","messages":[{"role":"user","content":"x"}],"max_completion_tokens":999999}`, a.Key, 400, "invalid_request_error", "max_completion_tokens"},
			{"{\"model\":\"sim-small\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", a.Key, 400, "invalid_request_error", "body"},
			{`not json`, a.Key, 400, "invalid_request_error", "body"},
		} {
			res, body := post(tc.body, tc.key)
			var e struct {
				Error struct {
					Type  string  `json:"type"`
					Param *string `json:"param"`
				} `json:"error"`
			}
			_ = json.Unmarshal(body, &e)
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if res.StatusCode != tc.status || e.Error.Type != tc.typ || param != tc.param {
				t.Errorf("%s: %d %s", tc.body, res.StatusCode, body)
			}
		}
	})

	t.Run("models", func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.BaseURL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+a.Key)
		res, err := h1Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Contains(body, []byte(`"id":"sim-small"`)) {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	})
}

// 200 concurrent requests against a balance that covers 50: exactly 50 are
// served, and the ledger balances to the nano-USD against ListUsage.
func TestBalanceHoldsUnderConcurrency(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "rich-enough@example.com")
	c := s.api(protocols[0], cred{bearer: a.Key})
	ctx := ctxTimeout(t, 60*time.Second)
	msgs := userText("Tell me about the rabbit, at length, please.")
	// One request's hold: learn it from a priced run on a funded account.
	probe := s.newAccount(t, "probe@example.com")
	s.topup(t, probe, "1")
	pres, err := s.api(protocols[0], cred{bearer: probe.Key}).Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: msgs, MaxOutputTokens: 6}))
	if err != nil || pres.Msg.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_LENGTH {
		t.Fatalf("probe: %v %v", err, pres)
	}
	cost := pres.Msg.GetCostNanos() // max_output reached, so cost == hold
	s.admin(t, "topup", "--email", a.Email, "--usd", nanosToUSD(50*cost+cost-1))

	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, short := 0, 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: msgs, MaxOutputTokens: 6}))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if apierr.Detail(err, &parleyv1.InsufficientBalance{}) {
				short++
			} else {
				t.Errorf("unexpected: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 50 || short != 150 {
		t.Fatalf("%d served, %d refused for balance; want 50 and 150", ok, short)
	}
	// Usage records are written in batches: wait for all 50.
	var charged int64
	deadline := time.Now().Add(5 * time.Second)
	for {
		charged = 0
		n := 0
		token := ""
		for {
			res, err := c.Billing.ListUsage(ctx, connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 20, PageToken: token}))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Msg.GetUsageRecords() {
				charged += r.GetCostNanos()
				n++
			}
			if token = res.Msg.GetNextPageToken(); token == "" {
				break
			}
		}
		if n == 50 || time.Now().After(deadline) {
			if n != 50 {
				t.Fatalf("%d usage records", n)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	bal, err := c.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if bal.Msg.GetReservedNanos() != 0 || bal.Msg.GetBalanceNanos() != 50*cost+cost-1-charged || charged != 50*cost {
		t.Fatalf("balance %v, charged %d, cost %d", bal.Msg, charged, cost)
	}
}

// nanosToUSD renders nano-USD as the decimal dollars `parley admin topup --usd` takes.
func nanosToUSD(n int64) string {
	return fmt.Sprintf("%d.%09d", n/1e9, n%1e9)
}

func detailOf(err error, msg *parleyv1.FieldViolation) bool { return apierr.Detail(err, msg) }
