package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/sse"
)

func textPart(s string) []*parleyv1.Part {
	return []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: s}}}
}

// send runs SendMessage to the end and returns the started event, the text
// and the finished event.
func send(t *testing.T, ctx context.Context, c apiClients, req *parleyv1.SendMessageRequest) (*parleyv1.GenerationStarted, string, *parleyv1.GenerationFinished) {
	t.Helper()
	stream, err := c.Conv.SendMessage(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	var st *parleyv1.GenerationStarted
	var fin *parleyv1.GenerationFinished
	var text strings.Builder
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if s := ev.GetStarted(); s != nil {
			st = s
		}
		text.WriteString(ev.GetDelta().GetText())
		if f := ev.GetFinished(); f != nil {
			fin = f
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if st == nil || fin == nil {
		t.Fatalf("stream without started or finished")
	}
	return st, text.String(), fin
}

func TestMultiTurnConversationSendsTheWholeHistory(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "chat@example.com")
	for _, p := range allProtocols {
		t.Run(p.name, func(t *testing.T) {
			c := s.api(p, cred{cookie: a.Cookie})
			ctx := ctxTimeout(t, 30*time.Second)
			st, answer1, fin1 := send(t, ctx, c, &parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("Who is late?"), MaxOutputTokens: 40})
			if st.GetConversationId() == "" || answer1 == "" || fin1.GetUsage().GetCompletionTokens() == 0 {
				t.Fatalf("first turn: %v %q %v", st, answer1, fin1)
			}
			_, answer2, fin2 := send(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: st.GetConversationId(), Parts: textPart("Why is he late?"), MaxOutputTokens: 40})
			// The worker was sent the stored history: its prompt count is
			// exactly that of [user, assistant, user].
			want := llm.PromptTokens(tokenize.Default(), []llm.ChatMessage{
				{Role: "user", Parts: []llm.Part{{Text: "Who is late?"}}},
				{Role: "assistant", Parts: []llm.Part{{Text: answer1}}},
				{Role: "user", Parts: []llm.Part{{Text: "Why is he late?"}}},
			})
			if got := fin2.GetUsage().GetPromptTokens(); got != int64(want) {
				t.Fatalf("second turn's prompt is %d tokens, want %d (the whole history)", got, want)
			}
			msgs, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: st.GetConversationId()}))
			if err != nil {
				t.Fatal(err)
			}
			var roles []string
			for _, m := range msgs.Msg.GetMessages() {
				roles = append(roles, m.GetRole().String())
			}
			if len(roles) != 4 || msgs.Msg.GetMessages()[3].GetParts()[0].GetText() != answer2 || msgs.Msg.GetMessages()[1].GetTokens() != fin1.GetUsage().GetCompletionTokens() {
				t.Fatalf("stored %v", msgs.Msg.GetMessages())
			}
			conv, err := c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: st.GetConversationId()}))
			if err != nil || conv.Msg.GetConversation().GetTitle() != "Who is late?" {
				t.Fatalf("conversation %v %v", conv, err)
			}
		})
	}
}

func TestLongConversationIsTruncatedToTheWindow(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "long@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 60*time.Second)
	long := strings.Repeat("The rabbit ran down the long hall past the tiny golden door. ", 400) // ~5,000 tokens
	convID := ""
	var last *parleyv1.GenerationFinished
	for i := range 5 {
		st, _, fin := send(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: convID, Model: "sim-small", Parts: textPart(fmt.Sprintf("%d %s", i, long)), MaxOutputTokens: 20})
		convID, last = st.GetConversationId(), fin
	}
	// sim-small: 16,384-token window, 20 reserved for the answer.
	if p := last.GetUsage().GetPromptTokens(); p > 16384-20 || p < 10000 {
		t.Fatalf("last prompt %d tokens: not cut to the window (or cut too much)", p)
	}
}

func TestListingAndPaging(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "lists@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 60*time.Second)
	var ids []string
	for i := range 250 {
		res, err := c.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Title: fmt.Sprintf("c%03d", i)}))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Msg.GetConversation().GetConversationId())
	}
	var got []string
	token := ""
	for {
		res, err := c.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{PageSize: 100, PageToken: token}))
		if err != nil {
			t.Fatal(err)
		}
		for _, cv := range res.Msg.GetConversations() {
			got = append(got, cv.GetConversationId())
		}
		if token = res.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(got) != 250 {
		t.Fatalf("listed %d", len(got))
	}
	for i := range got { // newest first
		if got[i] != ids[249-i] {
			t.Fatalf("position %d: %s, want %s", i, got[i], ids[249-i])
		}
	}
	for _, bad := range []*parleyv1.ListConversationsRequest{{PageSize: 201}, {PageSize: -1}, {PageToken: "garbage"}} {
		_, err := c.Conv.ListConversations(ctx, connect.NewRequest(bad))
		wantCode(t, fmt.Sprint(bad), err, connect.CodeInvalidArgument)
	}
	// Another user's page token is refused.
	b := s.newAccount(t, "lists-b@example.com")
	res, _ := c.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{PageSize: 10}))
	_, err := s.api(protocols[0], cred{cookie: b.Cookie}).Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{PageToken: res.Msg.GetNextPageToken()}))
	wantCode(t, "foreign page token", err, connect.CodeInvalidArgument)
}

func TestDeleteRemovesMessages(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "del@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 30*time.Second)
	st, _, _ := send(t, ctx, c, &parleyv1.SendMessageRequest{Parts: textPart("hello"), MaxOutputTokens: 10})
	if _, err := c.Conv.DeleteConversation(ctx, connect.NewRequest(&parleyv1.DeleteConversationRequest{ConversationId: st.GetConversationId()})); err != nil {
		t.Fatal(err)
	}
	_, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: st.GetConversationId()}))
	wantCode(t, "messages of a deleted conversation", err, connect.CodeNotFound)
	_, err = c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{ConversationId: st.GetConversationId(), Parts: textPart("again")}))
	if err == nil {
		stream, _ := c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{ConversationId: st.GetConversationId(), Parts: textPart("again")}))
		stream.Receive()
		err = stream.Err()
	}
	wantCode(t, "send to a deleted conversation", err, connect.CodeInvalidArgument)
}

// A generation outlives its connection: the client goes away mid-answer,
// the answer is stored whole, and StreamGeneration from a new connection
// replays what was missed and follows to the end.
func TestGenerationSurvivesDisconnectAndResumes(t *testing.T) {
	s := startServer(t, append(fastAuth, "--sim-time-scale", "0.3")...)
	a := s.newAccount(t, "resume@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx, cancel := context.WithCancel(ctxTimeout(t, 60*time.Second))
	stream, err := c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("Tell me everything."), MaxOutputTokens: 120}))
	if err != nil {
		t.Fatal(err)
	}
	var convID string
	var seen []*parleyv1.GenerationEvent
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		seen = append(seen, ev)
		if st := ev.GetStarted(); st != nil {
			convID = st.GetConversationId()
		}
		if len(seen) == 6 {
			break
		}
	}
	cancel() // the tab closes
	stream.Close()
	ctx2 := ctxTimeout(t, 60*time.Second)
	follow, err := c.Conv.StreamGeneration(ctx2, connect.NewRequest(&parleyv1.StreamGenerationRequest{ConversationId: convID, AfterSeq: 3}))
	if err != nil {
		t.Fatal(err)
	}
	var rest []*parleyv1.GenerationEvent
	for follow.Receive() {
		rest = append(rest, follow.Msg().GetEvent())
	}
	if err := follow.Err(); err != nil {
		t.Fatal(err)
	}
	if rest[0].GetSeq() != 4 || rest[len(rest)-1].GetFinished() == nil {
		t.Fatalf("replay starts at %d, ends with %v", rest[0].GetSeq(), rest[len(rest)-1])
	}
	var full strings.Builder
	for _, ev := range append(seen[:3], rest...) {
		full.WriteString(ev.GetDelta().GetText())
	}
	fin := rest[len(rest)-1].GetFinished()
	if fin.GetFinishReason() == parleyv1.FinishReason_FINISH_REASON_CANCELLED {
		t.Fatal("closing the connection cancelled the generation")
	}
	msgs, err := c.Conv.ListMessages(ctx2, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: convID}))
	if err != nil {
		t.Fatal(err)
	}
	stored := msgs.Msg.GetMessages()[1]
	if stored.GetParts()[0].GetText() != full.String() || stored.GetFinishReason() != fin.GetFinishReason() {
		t.Fatalf("stored %q (%v), streamed %q (%v)", stored.GetParts()[0].GetText(), stored.GetFinishReason(), full.String(), fin.GetFinishReason())
	}
}

func TestCancelFromASecondConnection(t *testing.T) {
	s := startServer(t, append(fastAuth, "--sim-time-scale", "1")...)
	a := s.newAccount(t, "cancel@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 60*time.Second)
	stream, err := c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("Go on and on."), MaxOutputTokens: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	var convID string
	var fin *parleyv1.GenerationFinished
	var text strings.Builder
	n := 0
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if st := ev.GetStarted(); st != nil {
			convID = st.GetConversationId()
		}
		text.WriteString(ev.GetDelta().GetText())
		if n++; n == 4 {
			// A second tab presses Stop; meanwhile a second send is refused.
			other := s.api(protocols[1], cred{cookie: a.Cookie})
			again, _ := other.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{ConversationId: convID, Parts: textPart("more")}))
			for again.Receive() {
			}
			wantCode(t, "second send while generating", again.Err(), connect.CodeFailedPrecondition)
			res, err := other.Conv.CancelGeneration(ctx, connect.NewRequest(&parleyv1.CancelGenerationRequest{ConversationId: convID}))
			if err != nil || !res.Msg.GetCancelled() {
				t.Fatalf("cancel: %v %v", res, err)
			}
		}
		if f := ev.GetFinished(); f != nil {
			fin = f
		}
	}
	if fin.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_CANCELLED || fin.GetUsage().GetCompletionTokens() >= 100 {
		t.Fatalf("finished %v", fin)
	}
	msgs, _ := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: convID}))
	stored := msgs.Msg.GetMessages()[1]
	if stored.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_CANCELLED || stored.GetParts()[0].GetText() != text.String() {
		t.Fatalf("stored %v", stored)
	}
}

func TestTierLimitsExactAndRefunded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(file, []byte(`models:
- id: tiny
  display_name: Tiny (simulated)
  simulated: true
  context_window: 4096
  max_output_tokens: 10
  tier_limits:
    free: {requests: 3, input_tokens: 100000, output_tokens: 30, window: 1h}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, append(fastAuth, "--models-file", file)...)
	a := s.newAccount(t, "limits@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 30*time.Second)
	// Each request holds 10 output tokens and gives back what it did not use.
	used := int64(0)
	for i := range 3 {
		_, _, fin := send(t, ctx, c, &parleyv1.SendMessageRequest{Model: "tiny", Parts: textPart(fmt.Sprintf("hi %d", i))})
		used += fin.GetUsage().GetCompletionTokens()
	}
	lim, err := c.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "tiny"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lim.Msg.GetLimits() {
		switch l.GetKind() {
		case parleyv1.LimitKind_LIMIT_KIND_REQUESTS:
			if l.GetUsed() != 3 || l.GetRemaining() != 0 {
				t.Errorf("requests %v", l)
			}
		case parleyv1.LimitKind_LIMIT_KIND_OUTPUT_TOKENS:
			if l.GetUsed() != used { // unused output was refunded exactly
				t.Errorf("output used %d, want %d", l.GetUsed(), used)
			}
		}
	}
	// The fourth request is over the limit: refused, naming it, with a retry time, and nothing stored.
	stream, err := c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "tiny", Parts: textPart("one more")}))
	if err == nil {
		for stream.Receive() {
		}
		err = stream.Err()
	}
	var le parleyv1.LimitExceeded
	d, hasRetry := apierr.RetryAfter(err)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !apierr.Detail(err, &le) || le.GetLimit().GetKind() != parleyv1.LimitKind_LIMIT_KIND_REQUESTS || !hasRetry || d <= 0 {
		t.Fatalf("fourth request: %v (limit %v, retry %v)", err, le.GetLimit(), d)
	}
	list, _ := c.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{}))
	if n := len(list.Msg.GetConversations()); n != 3 {
		t.Fatalf("%d conversations stored; the refused message made one", n)
	}
}

// SendMessage read as Server-Sent Events by a plain HTTP client.
func TestSendMessageAsSSE(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "sse@example.com")
	req, _ := http.NewRequest("POST", s.BaseURL+"/sse/parley.v1.ConversationService/SendMessage", strings.NewReader(`{"model":"sim-small","parts":[{"text":"hello"}],"maxOutputTokens":"5"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", "Session_id="+a.Cookie)
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("%d %v %s", res.StatusCode, res.Header, b)
	}
	dec := sse.NewDecoder(res.Body)
	var ids []string
	var first, last string
	for {
		ev, err := dec.Next()
		if err != nil {
			break
		}
		if ev.Event == "error" {
			t.Fatalf("error event %s", ev.Data)
		}
		if first == "" {
			first = ev.Data
		}
		ids = append(ids, ev.ID)
		last = ev.Data
	}
	if len(ids) < 3 || ids[0] != "1" || !strings.Contains(last, `"finished"`) {
		t.Fatalf("ids %v, last %s", ids, last)
	}
	// Last-Event-ID resumes through StreamGeneration: the replay starts after it.
	var convID struct {
		Event struct {
			Started struct {
				ConversationID string `json:"conversationId"`
			} `json:"started"`
		} `json:"event"`
	}
	_ = json.Unmarshal([]byte(first), &convID)
	req, _ = http.NewRequest("POST", s.BaseURL+"/sse/parley.v1.ConversationService/StreamGeneration",
		strings.NewReader(`{"conversationId":"`+convID.Event.Started.ConversationID+`"}`))
	req.Header.Set("Cookie", "Session_id="+a.Cookie)
	req.Header.Set("Last-Event-ID", "2")
	resumed, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rdec := sse.NewDecoder(resumed.Body)
	var rids []string
	for {
		ev, err := rdec.Next()
		if err != nil {
			break
		}
		rids = append(rids, ev.ID)
	}
	resumed.Body.Close()
	if len(rids) != len(ids)-2 || rids[0] != "3" {
		t.Fatalf("resumed ids %v after 2, first stream had %v", rids, ids)
	}

	// CSRF holds on the SSE surface too.
	req, _ = http.NewRequest("POST", s.BaseURL+"/sse/parley.v1.ConversationService/SendMessage", strings.NewReader(`{"parts":[{"text":"hello"}]}`))
	req.Header.Set("Cookie", "Session_id="+a.Cookie)
	req.Header.Set("Origin", "https://evil.example")
	res2, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res2.Body)
	res2.Body.Close()
	if !strings.Contains(string(body), "event: error\ndata: {\"code\":\"permission_denied\"") {
		t.Fatalf("foreign origin over SSE: %s", body)
	}
}
