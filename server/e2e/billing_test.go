package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// usageOf waits until the account has n usage records and returns them.
func usageOf(t *testing.T, c apiClients, n int) []*parleyv1.UsageRecord {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // a loaded CI box settles late; found at once otherwise
	for {
		res, err := c.Billing.ListUsage(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.ListUsageRequest{PageSize: 200}))
		if err != nil {
			t.Fatal(err)
		}
		if recs := res.Msg.GetUsageRecords(); len(recs) >= n || time.Now().After(deadline) {
			if len(recs) != n {
				t.Fatalf("%d usage records, want %d", len(recs), n)
			}
			return recs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func price(t *testing.T, c apiClients, model string) (in, out int64) {
	t.Helper()
	res, err := c.Models.ListModels(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.ListModelsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Msg.GetModels() {
		if m.GetId() == model {
			return m.GetInputPriceNanosPerMillion(), m.GetOutputPriceNanosPerMillion()
		}
	}
	t.Fatalf("no model %s", model)
	return 0, 0
}

func costOf(tokens, perMillion int64) int64 { return (tokens*perMillion + 999_999) / 1_000_000 }

// An API client that goes away mid-stream cancels the worker at once and is
// charged the prompt plus the tokens actually generated.
func TestDisconnectCancelsAndChargesWhatWasGenerated(t *testing.T) {
	// 0.2 × ~20 ms per step: about 4 ms a token, so 100 ms is ~25 tokens.
	s := startServer(t, append(fastAuth, "--sim-time-scale", "0.2")...)
	a := s.newAccount(t, "leaver@example.com")
	s.topup(t, a, "1")
	c := s.api(protocols[1], cred{bearer: a.Key})
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := c.Chat.CompleteStream(ctx, connect.NewRequest(&parleyv1.CompleteStreamRequest{Model: "sim-small", Messages: userText("Talk for a long time."), MaxOutputTokens: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for stream.Receive() {
		if stream.Msg().GetEvent().GetDelta() != nil {
			if deltas++; deltas == 5 {
				break
			}
		}
	}
	cancel()
	stream.Close()
	rec := usageOf(t, c, 1)[0]
	if rec.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_CANCELLED {
		t.Fatalf("finish %v", rec.GetFinishReason())
	}
	if got := rec.GetUsage().GetCompletionTokens(); got < 5 || got > 5+25 {
		t.Fatalf("%d tokens generated after 5 were read: the worker was not cancelled within ~100 ms", got)
	}
	in, out := price(t, c, "sim-small")
	want := costOf(rec.GetUsage().GetPromptTokens(), in) + costOf(rec.GetUsage().GetCompletionTokens(), out)
	bal, _ := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if rec.GetCostNanos() != want || bal.Msg.GetBalanceNanos() != 1e9-want || bal.Msg.GetReservedNanos() != 0 {
		t.Fatalf("cost %d (want %d), balance %v", rec.GetCostNanos(), want, bal.Msg)
	}
}

// A gateway killed mid-stream leaves its hold behind; after a restart the
// sweeper releases it, so no money is held for ever.
func TestSweeperReleasesHoldsOfAKilledGateway(t *testing.T) {
	flags := append(fastAuth, "--sim-time-scale", "1", "--hold-ttl", "2s", "--sweep-interval", "200ms")
	s := startServer(t, flags...)
	a := s.newAccount(t, "crash@example.com")
	s.topup(t, a, "1")
	c := s.api(protocols[0], cred{bearer: a.Key})
	stream, err := c.Chat.CompleteStream(ctxTimeout(t, 30*time.Second), connect.NewRequest(&parleyv1.CompleteStreamRequest{Model: "sim-small", Messages: userText("Go on."), MaxOutputTokens: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	for stream.Receive() {
		if stream.Msg().GetEvent().GetDelta() != nil {
			break
		}
	}
	held, _ := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if held.Msg.GetReservedNanos() == 0 {
		t.Fatal("nothing held during the stream")
	}
	s.Signal(syscall.SIGKILL)
	_, _ = s.Wait(5 * time.Second)

	s2 := startServer(t, append(flags, "--data-dir", s.DataDir)...)
	c2 := s2.api(protocols[0], cred{bearer: a.Key})
	deadline := time.Now().Add(10 * time.Second)
	for {
		bal, err := c2.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if bal.Msg.GetReservedNanos() == 0 {
			if bal.Msg.GetBalanceNanos() != 1e9 {
				t.Fatalf("balance %d after the release, want all of it back", bal.Msg.GetBalanceNanos())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still held after 10 s: %v", bal.Msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Bad requests on the Connect surface name the field.
func TestCompleteBadRequests(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "bad@example.com")
	s.topup(t, a, "1")
	c := s.api(protocols[0], cred{bearer: a.Key})
	big := make([]byte, 5<<20)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	for _, tc := range []struct {
		name  string
		req   *parleyv1.CompleteRequest
		field string
	}{
		{"empty messages", &parleyv1.CompleteRequest{Model: "sim-small"}, "messages"},
		{"max output", &parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("x"), MaxOutputTokens: 1 << 30}, "max_output_tokens"},
		{"past the window", &parleyv1.CompleteRequest{Model: "sim-small", Messages: userText(strings.Repeat("word ", 40_000))}, "messages"},
		{"5 MB of text", &parleyv1.CompleteRequest{Model: "sim-large", Messages: userText(string(big))}, "messages"},
		{"no role", &parleyv1.CompleteRequest{Model: "sim-small", Messages: []*parleyv1.Message{{Parts: textPart("x")}}}, "messages[0].role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Chat.Complete(ctxTimeout(t, 20*time.Second), connect.NewRequest(tc.req))
			var fv parleyv1.FieldViolation
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, &fv) || fv.GetField() != tc.field {
				t.Fatalf("%v (field %q), want invalid_argument naming %q", err, fv.GetField(), tc.field)
			}
		})
	}
	// Invalid UTF-8 in a string field (sent raw: the Go client refuses to
	// marshal it) is refused by the decoder, which names its position.
	req, _ := http.NewRequest("POST", s.BaseURL+"/parley.v1.ChatService/Complete",
		strings.NewReader("{\"model\":\"sim-small\",\"messages\":[{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"bad \xff\"}]}]}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.Key)
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(body), `"code":"invalid_argument"`) || !strings.Contains(string(body), "invalid UTF-8") {
		t.Fatalf("invalid UTF-8: %d %s", res.StatusCode, body)
	}
	bal, _ := c.Billing.GetBalance(ctxTimeout(t, 5*time.Second), connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if bal.Msg.GetBalanceNanos() != 1e9 || bal.Msg.GetReservedNanos() != 0 {
		t.Fatalf("refused requests moved money: %v", bal.Msg)
	}
}
