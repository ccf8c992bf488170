package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/sse"
)

// generation is what a SendMessage or RegenerateMessage stream delivered.
type generation struct {
	started  *parleyv1.GenerationStarted
	text     string
	finished *parleyv1.GenerationFinished
}

// drain reads a generation's events to the end.
func drain[T any, P interface {
	*T
	GetEvent() *parleyv1.GenerationEvent
}](t *testing.T, stream *connect.ServerStreamForClient[T], err error) (generation, error) {
	t.Helper()
	var g generation
	if err != nil {
		return g, err
	}
	var text strings.Builder
	for stream.Receive() {
		ev := P(stream.Msg()).GetEvent()
		if s := ev.GetStarted(); s != nil {
			g.started = s
		}
		text.WriteString(ev.GetDelta().GetText())
		if f := ev.GetFinished(); f != nil {
			g.finished = f
		}
	}
	g.text = text.String()
	if err := stream.Err(); err != nil {
		return g, err
	}
	if g.started == nil || g.finished == nil {
		t.Fatalf("stream without started or finished")
	}
	return g, nil
}

func regenerate(t *testing.T, ctx context.Context, c apiClients, convID, messageID string) (generation, error) {
	t.Helper()
	stream, err := c.Conv.RegenerateMessage(ctx, connect.NewRequest(&parleyv1.RegenerateMessageRequest{ConversationId: convID, MessageId: messageID}))
	return drain(t, stream, err)
}

func sendTo(t *testing.T, ctx context.Context, c apiClients, req *parleyv1.SendMessageRequest) (generation, error) {
	t.Helper()
	stream, err := c.Conv.SendMessage(ctx, connect.NewRequest(req))
	return drain(t, stream, err)
}

func mustSend(t *testing.T, ctx context.Context, c apiClients, req *parleyv1.SendMessageRequest) generation {
	t.Helper()
	g, err := sendTo(t, ctx, c, req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	return g
}

func mustRegenerate(t *testing.T, ctx context.Context, c apiClients, convID, messageID string) generation {
	t.Helper()
	g, err := regenerate(t, ctx, c, convID, messageID)
	if err != nil {
		t.Fatalf("RegenerateMessage: %v", err)
	}
	return g
}

// branchOf lists a branch (leaf "" for the active one), in pages of 2.
func branchOf(t *testing.T, ctx context.Context, c apiClients, convID, leaf string, makeCurrent bool) []*parleyv1.ConversationMessage {
	t.Helper()
	var all []*parleyv1.ConversationMessage
	token := ""
	for range 50 {
		res, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: convID,
			LeafMessageId: leaf, MakeCurrent: makeCurrent, PageSize: 2, PageToken: token}))
		if err != nil {
			t.Fatalf("ListMessages: %v", err)
		}
		all = append(all, res.Msg.GetMessages()...)
		if token = res.Msg.GetNextPageToken(); token == "" {
			if n := len(all); n > 0 && res.Msg.GetLeafMessageId() != all[n-1].GetMessageId() {
				t.Fatalf("leaf_message_id %s, last message %s", res.Msg.GetLeafMessageId(), all[n-1].GetMessageId())
			}
			return all
		}
	}
	t.Fatal("ListMessages never ended")
	return nil
}

func idsOf(ms []*parleyv1.ConversationMessage) []string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.GetMessageId())
	}
	return ids
}

// wantBranch checks a listed branch: its ids, that each message follows the
// one before, and the sibling position of each.
func wantBranch(t *testing.T, what string, got []*parleyv1.ConversationMessage, ids []string, siblings map[string][]string) {
	t.Helper()
	if !slices.Equal(idsOf(got), ids) {
		t.Fatalf("%s: branch %v, want %v", what, idsOf(got), ids)
	}
	for i, m := range got {
		parent := ""
		if i > 0 {
			parent = ids[i-1]
		}
		want := siblings[m.GetMessageId()]
		if want == nil {
			want = []string{m.GetMessageId()}
		}
		if m.GetParentMessageId() != parent || !slices.Equal(m.GetSiblingMessageIds(), want) ||
			m.GetSiblingCount() != int32(len(want)) || m.GetSiblingIndex() != int32(slices.Index(want, m.GetMessageId())) ||
			m.GetStatus() != parleyv1.MessageStatus_MESSAGE_STATUS_COMPLETE {
			t.Fatalf("%s: message %d = parent %q siblings %v (%d of %d) status %v; want parent %q siblings %v",
				what, i, m.GetParentMessageId(), m.GetSiblingMessageIds(), m.GetSiblingIndex(), m.GetSiblingCount(), m.GetStatus(), parent, want)
		}
	}
}

func prompt(msgs ...llm.ChatMessage) int64 {
	return int64(llm.PromptTokens(tokenize.Default(), msgs))
}

func turn(role, text string) llm.ChatMessage {
	return llm.ChatMessage{Role: role, Parts: []llm.Part{{Text: text}}}
}

func wantField(t *testing.T, what string, err error, code connect.Code, field string) {
	t.Helper()
	var fv parleyv1.FieldViolation
	if connect.CodeOf(err) != code || (field != "" && (!detailOf(err, &fv) || fv.GetField() != field)) {
		t.Fatalf("%s: %v (field %q), want %v on %q", what, err, fv.GetField(), code, field)
	}
}

// tinyModels writes a models file with one small model whose free tier has
// the given limits over a window so long (83 days, under the Redis limiter's 104) that nothing refills
// while a test runs: the tier's counts are exact.
func tinyModels(t *testing.T, limits string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(file, []byte(`models:
- id: tiny
  display_name: Tiny (simulated)
  simulated: true
  context_window: 4096
  max_output_tokens: 10
  tier_limits:
    free: {`+limits+`, window: 2000h}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// Regenerate twice (once over SSE) and edit once, then switch branches,
// continue one and edit the first question: the tree, the active branch,
// the sibling counts, the context of each answer, its usage record and the
// tier's counts; the eighth request is over the tier's limit.
func TestBranchesRegenerateAndEdit(t *testing.T) { testBranches(t) }

// The same on the scale backends: PostgreSQL, Redis (limits and the
// generations' log), Cassandra for the messages, ClickHouse for usage.
func TestScaleBranchesRegenerateAndEdit(t *testing.T) {
	scaleMode(t)
	testBranches(t)
}

func testBranches(t *testing.T) {
	s := startServer(t, append(fastAuth, "--models-file", tinyModels(t, "requests: 7, input_tokens: 10000, output_tokens: 1000"))...)
	a := s.newAccount(t, "branches@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 60*time.Second)
	var gens []generation

	g1 := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{Model: "tiny", Parts: textPart("Who is late?")})
	conv := g1.started.GetConversationId()
	q1, a1 := g1.started.GetUserMessageId(), g1.started.GetMessageId()
	g2 := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("Why is he late?")})
	q2, a2 := g2.started.GetUserMessageId(), g2.started.GetMessageId()
	ctx2 := prompt(turn("user", "Who is late?"), turn("assistant", g1.text), turn("user", "Why is he late?"))
	if g2.finished.GetUsage().GetPromptTokens() != ctx2 {
		t.Fatalf("second answer's prompt %d, want %d", g2.finished.GetUsage().GetPromptTokens(), ctx2)
	}
	gens = append(gens, g1, g2)

	// Refused requests cost nothing (the tier's counts at the end say so).
	_, err := regenerate(t, ctx, c, conv, q2)
	wantField(t, "regenerating a question", err, connect.CodeInvalidArgument, "message_id")
	_, err = regenerate(t, ctx, c, conv, "0190c0de-0000-7000-8000-000000000000")
	wantField(t, "regenerating an unknown message", err, connect.CodeInvalidArgument, "message_id")
	_, err = sendTo(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("x"), ParentMessageId: &q1})
	wantField(t, "sending under a question", err, connect.CodeInvalidArgument, "parent_message_id")
	unknown := "0190c0de-0000-7000-8000-000000000001"
	_, err = sendTo(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("x"), ParentMessageId: &unknown})
	wantField(t, "sending under an unknown message", err, connect.CodeInvalidArgument, "parent_message_id")
	_, err = c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: conv, LeafMessageId: unknown}))
	wantField(t, "listing an unknown branch", err, connect.CodeInvalidArgument, "leaf_message_id")
	_, err = c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: conv, MakeCurrent: true}))
	wantField(t, "make_current without a leaf", err, connect.CodeInvalidArgument, "leaf_message_id")

	// Regenerate a2 twice: over Connect, then over SSE as the web app would.
	g3 := mustRegenerate(t, ctx, c, conv, a2)
	a2b := g3.started.GetMessageId()
	if g3.started.GetUserMessageId() != q2 || a2b == a2 || g3.started.GetConversationId() != conv || g3.finished.GetUsage().GetPromptTokens() != ctx2 {
		t.Fatalf("regenerated: started %v, prompt %d (want %d)", g3.started, g3.finished.GetUsage().GetPromptTokens(), ctx2)
	}
	g4 := regenerateSSE(t, s, a, conv, a2)
	a2c := g4.started.GetMessageId()
	if g4.started.GetUserMessageId() != q2 || a2c == a2 || a2c == a2b || g4.finished.GetUsage().GetPromptTokens() != ctx2 {
		t.Fatalf("regenerated over SSE: started %v, prompt %d (want %d)", g4.started, g4.finished.GetUsage().GetPromptTokens(), ctx2)
	}
	gens = append(gens, g3, g4)
	answers := []string{a2, a2b, a2c}
	got := branchOf(t, ctx, c, conv, "", false)
	wantBranch(t, "after two regenerations", got, []string{q1, a1, q2, a2c}, map[string][]string{a2c: answers})
	if got[3].GetParts()[0].GetText() != g4.text || got[3].GetTokens() != g4.finished.GetUsage().GetCompletionTokens() {
		t.Fatalf("stored regenerated answer %v, streamed %q", got[3], g4.text)
	}
	current := func() string {
		res, err := c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: conv}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Msg.GetConversation().GetCurrentMessageId()
	}
	if cur := current(); cur != a2c {
		t.Fatalf("current message %s, want the newest answer %s", cur, a2c)
	}

	// Edit q2: a new question under its parent.
	g5 := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("Why was he late, really?"), ParentMessageId: &a1})
	q2e, a2e := g5.started.GetUserMessageId(), g5.started.GetMessageId()
	if want := prompt(turn("user", "Who is late?"), turn("assistant", g1.text), turn("user", "Why was he late, really?")); g5.finished.GetUsage().GetPromptTokens() != want {
		t.Fatalf("edited question's prompt %d, want %d (without the replaced question)", g5.finished.GetUsage().GetPromptTokens(), want)
	}
	gens = append(gens, g5)
	wantBranch(t, "after the edit", branchOf(t, ctx, c, conv, "", false), []string{q1, a1, q2e, a2e}, map[string][]string{q2e: {q2, q2e}})

	// Another branch by its leaf; listing it does not switch.
	wantBranch(t, "the branch of a2b", branchOf(t, ctx, c, conv, a2b, false), []string{q1, a1, q2, a2b},
		map[string][]string{q2: {q2, q2e}, a2b: answers})
	if cur := current(); cur != a2e {
		t.Fatalf("listing a branch moved the current message to %s", cur)
	}
	// Switch to q2's version: its newest answer follows, and it becomes current.
	wantBranch(t, "switched to q2", branchOf(t, ctx, c, conv, q2, true), []string{q1, a1, q2, a2c},
		map[string][]string{q2: {q2, q2e}, a2c: answers})
	if cur := current(); cur != a2c {
		t.Fatalf("current after switching: %s, want %s", cur, a2c)
	}
	// A message without a parent continues the active branch.
	g6 := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("And then?")})
	q3, a3 := g6.started.GetUserMessageId(), g6.started.GetMessageId()
	if want := prompt(turn("user", "Who is late?"), turn("assistant", g1.text), turn("user", "Why is he late?"),
		turn("assistant", g4.text), turn("user", "And then?")); g6.finished.GetUsage().GetPromptTokens() != want {
		t.Fatalf("continued branch's prompt %d, want %d", g6.finished.GetUsage().GetPromptTokens(), want)
	}
	gens = append(gens, g6)
	wantBranch(t, "continued", branchOf(t, ctx, c, conv, "", false), []string{q1, a1, q2, a2c, q3, a3},
		map[string][]string{q2: {q2, q2e}, a2c: answers})

	// Paging goes on along the branch it started on, even when another
	// becomes active meanwhile.
	first, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: conv, PageSize: 2}))
	if err != nil || !slices.Equal(idsOf(first.Msg.GetMessages()), []string{q1, a1}) {
		t.Fatalf("first page: %v %v", first, err)
	}
	branchOf(t, ctx, c, conv, a2b, true)
	rest, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: conv, PageSize: 10,
		PageToken: first.Msg.GetNextPageToken()}))
	if err != nil || !slices.Equal(idsOf(rest.Msg.GetMessages()), []string{q2, a2c, q3, a3}) || rest.Msg.GetNextPageToken() != "" {
		t.Fatalf("next page after switching branches: %v %v", rest, err)
	}
	if cur := current(); cur != a2b {
		t.Fatalf("current after switching to a2b: %s", cur)
	}

	// Edit the first question: a new root.
	root := ""
	g7 := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("Who is early?"), ParentMessageId: &root})
	q1e, a1e := g7.started.GetUserMessageId(), g7.started.GetMessageId()
	if want := prompt(turn("user", "Who is early?")); g7.finished.GetUsage().GetPromptTokens() != want {
		t.Fatalf("new root's prompt %d, want %d", g7.finished.GetUsage().GetPromptTokens(), want)
	}
	gens = append(gens, g7)
	wantBranch(t, "edited root", branchOf(t, ctx, c, conv, "", false), []string{q1e, a1e}, map[string][]string{q1e: {q1, q1e}})

	// The eighth request is over the tier's limit: refused, and nothing stored.
	_, err = regenerate(t, ctx, c, conv, a1e)
	var le parleyv1.LimitExceeded
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !apierr.Detail(err, &le) || le.GetLimit().GetKind() != parleyv1.LimitKind_LIMIT_KIND_REQUESTS {
		t.Fatalf("eighth request: %v", err)
	}
	wantBranch(t, "after the refused regeneration", branchOf(t, ctx, c, conv, "", false), []string{q1e, a1e}, map[string][]string{q1e: {q1, q1e}})

	// Each answer has its usage record, and the tier counted each exactly.
	recs := usageOf(t, c, len(gens))
	var in, out int64
	byRequest := map[string]*parleyv1.UsageRecord{}
	for _, r := range recs {
		byRequest[r.GetRequestId()] = r
	}
	for i, g := range gens {
		r := byRequest[g.started.GetRequestId()]
		if r == nil || r.GetChannel() != parleyv1.AuthChannel_AUTH_CHANNEL_SESSION || r.GetModel() != "tiny" || r.GetCostNanos() != 0 ||
			r.GetUsage().GetPromptTokens() != g.finished.GetUsage().GetPromptTokens() ||
			r.GetUsage().GetCompletionTokens() != g.finished.GetUsage().GetCompletionTokens() {
			t.Fatalf("generation %d: usage record %v, finished %v", i, r, g.finished.GetUsage())
		}
		in += g.finished.GetUsage().GetPromptTokens()
		out += g.finished.GetUsage().GetCompletionTokens()
	}
	lim, err := c.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "tiny"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lim.Msg.GetLimits() {
		want := map[parleyv1.LimitKind]int64{parleyv1.LimitKind_LIMIT_KIND_REQUESTS: 7,
			parleyv1.LimitKind_LIMIT_KIND_INPUT_TOKENS: in, parleyv1.LimitKind_LIMIT_KIND_OUTPUT_TOKENS: out}[l.GetKind()]
		if l.GetUsed() != want {
			t.Errorf("%v used %d, want %d", l.GetKind(), l.GetUsed(), want)
		}
	}
}

// regenerateSSE runs RegenerateMessage through the SSE adapter.
func regenerateSSE(t *testing.T, s *server, a *account, convID, messageID string) generation {
	t.Helper()
	req, _ := http.NewRequest("POST", s.BaseURL+"/sse/parley.v1.ConversationService/RegenerateMessage",
		strings.NewReader(fmt.Sprintf(`{"conversationId":%q,"messageId":%q}`, convID, messageID)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", "Session_id="+a.Cookie)
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("SSE answered %d %v", res.StatusCode, res.Header)
	}
	dec := sse.NewDecoder(res.Body)
	var g generation
	for {
		ev, err := dec.Next()
		if err != nil {
			break
		}
		if ev.Event == "error" {
			t.Fatalf("error event %s", ev.Data)
		}
		var msg parleyv1.RegenerateMessageResponse
		if err := protojson.Unmarshal([]byte(ev.Data), &msg); err != nil {
			t.Fatalf("event %q: %v", ev.Data, err)
		}
		if st := msg.GetEvent().GetStarted(); st != nil {
			g.started = st
		}
		g.text += msg.GetEvent().GetDelta().GetText()
		if f := msg.GetEvent().GetFinished(); f != nil {
			g.finished = f
		}
	}
	if g.started == nil || g.finished == nil {
		t.Fatal("SSE stream without started or finished")
	}
	return g
}

// Custom instructions and a conversation's system prompt are the context's
// system message, counted in the tier's input tokens; regenerations get
// them too, and they are another user's business only.
func TestInstructionsInTheContext(t *testing.T) {
	s := startServer(t, append(fastAuth, "--models-file", tinyModels(t, "requests: 100, input_tokens: 10000, output_tokens: 1000"))...)
	a := s.newAccount(t, "instructions@example.com")
	b := s.newAccount(t, "bystander@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 60*time.Second)

	_, err := c.Conv.SetCustomInstructions(ctx, connect.NewRequest(&parleyv1.SetCustomInstructionsRequest{Instructions: strings.Repeat("é", 8001)}))
	wantField(t, "instructions too long", err, connect.CodeInvalidArgument, "instructions")
	set, err := c.Conv.SetCustomInstructions(ctx, connect.NewRequest(&parleyv1.SetCustomInstructionsRequest{Instructions: "  I am a chemist.\n"}))
	if err != nil || set.Msg.GetInstructions() != "I am a chemist." {
		t.Fatalf("SetCustomInstructions: %v %v", set, err)
	}
	got, err := c.Conv.GetCustomInstructions(ctx, connect.NewRequest(&parleyv1.GetCustomInstructionsRequest{}))
	if err != nil || got.Msg.GetInstructions() != "I am a chemist." {
		t.Fatalf("GetCustomInstructions: %v %v", got, err)
	}
	_, err = c.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{SystemPrompt: strings.Repeat("x", 8001)}))
	wantField(t, "system prompt too long", err, connect.CodeInvalidArgument, "system_prompt")
	created, err := c.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Model: "tiny", SystemPrompt: "Answer in French."}))
	if err != nil || created.Msg.GetConversation().GetSystemPrompt() != "Answer in French." {
		t.Fatalf("CreateConversation: %v %v", created, err)
	}
	conv := created.Msg.GetConversation().GetConversationId()

	g1 := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("hi")})
	want1 := prompt(turn("system", "I am a chemist.\n\nAnswer in French."), turn("user", "hi"))
	if p := g1.finished.GetUsage().GetPromptTokens(); p != want1 || p == prompt(turn("user", "hi")) {
		t.Fatalf("prompt %d tokens, want %d (the instructions and the system prompt, then the question)", p, want1)
	}
	inputUsed := func() int64 {
		lim, err := c.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "tiny"}))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lim.Msg.GetLimits() {
			if l.GetKind() == parleyv1.LimitKind_LIMIT_KIND_INPUT_TOKENS {
				return l.GetUsed()
			}
		}
		t.Fatal("no input limit")
		return 0
	}
	if used := inputUsed(); used != want1 {
		t.Fatalf("tier input tokens used %d, want %d (the system message counted)", used, want1)
	}

	// Clearing the system prompt leaves the instructions.
	empty := ""
	upd, err := c.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: conv, SystemPrompt: &empty}))
	if err != nil || upd.Msg.GetConversation().GetSystemPrompt() != "" {
		t.Fatalf("UpdateConversation: %v %v", upd, err)
	}
	long := strings.Repeat("x", 8001)
	_, err = c.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: conv, SystemPrompt: &long}))
	wantField(t, "updating to a system prompt too long", err, connect.CodeInvalidArgument, "system_prompt")
	g2 := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("again")})
	want2 := prompt(turn("system", "I am a chemist."), turn("user", "hi"), turn("assistant", g1.text), turn("user", "again"))
	if p := g2.finished.GetUsage().GetPromptTokens(); p != want2 {
		t.Fatalf("prompt %d tokens, want %d (instructions only)", p, want2)
	}

	// A regeneration gets them too: here a new system prompt, no instructions.
	if _, err := c.Conv.SetCustomInstructions(ctx, connect.NewRequest(&parleyv1.SetCustomInstructionsRequest{})); err != nil {
		t.Fatal(err)
	}
	terse := "Be terse."
	if _, err := c.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: conv, SystemPrompt: &terse})); err != nil {
		t.Fatal(err)
	}
	g3 := mustRegenerate(t, ctx, c, conv, g2.started.GetMessageId())
	want3 := prompt(turn("system", "Be terse."), turn("user", "hi"), turn("assistant", g1.text), turn("user", "again"))
	if p := g3.finished.GetUsage().GetPromptTokens(); p != want3 {
		t.Fatalf("regenerated prompt %d tokens, want %d", p, want3)
	}
	if used := inputUsed(); used != want1+want2+want3 {
		t.Fatalf("tier input tokens used %d, want %d", used, want1+want2+want3)
	}

	// Another user's instructions are not A's.
	if _, err := c.Conv.SetCustomInstructions(ctx, connect.NewRequest(&parleyv1.SetCustomInstructionsRequest{Instructions: "A's secret."})); err != nil {
		t.Fatal(err)
	}
	cb := s.api(protocols[0], cred{cookie: b.Cookie})
	if got, err := cb.Conv.GetCustomInstructions(ctx, connect.NewRequest(&parleyv1.GetCustomInstructionsRequest{})); err != nil || got.Msg.GetInstructions() != "" {
		t.Fatalf("B's instructions: %v %v", got, err)
	}
	gb := mustSend(t, ctx, cb, &parleyv1.SendMessageRequest{Model: "tiny", Parts: textPart("hi")})
	if p := gb.finished.GetUsage().GetPromptTokens(); p != prompt(turn("user", "hi")) {
		t.Fatalf("B's prompt %d tokens: A's instructions reached it", p)
	}
}

// The context window applies to a regeneration as to a send: a system
// prompt set since makes the same question too long.
func TestRegenerationFitsTheWindow(t *testing.T) {
	file := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(file, []byte("models:\n- id: narrow\n  simulated: true\n  context_window: 600\n  max_output_tokens: 10\n  tier_limits:\n    free: {requests: 100, input_tokens: 100000, output_tokens: 1000, window: 1h}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, append(fastAuth, "--models-file", file)...)
	a := s.newAccount(t, "window@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 30*time.Second)
	question := strings.Repeat("The rabbit ran down the hall. ", 50) // ~350 tokens
	g := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{Model: "narrow", Parts: textPart(question)})
	conv := g.started.GetConversationId()
	big := strings.Repeat("Always answer as the Mad Hatter would. ", 100) // ~800 tokens
	if _, err := c.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: conv, SystemPrompt: &big})); err != nil {
		t.Fatal(err)
	}
	_, err := regenerate(t, ctx, c, conv, g.started.GetMessageId())
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "context window") {
		t.Fatalf("regeneration over the window: %v", err)
	}
	if got := branchOf(t, ctx, c, conv, "", false); len(got) != 2 || got[1].GetSiblingCount() != 1 {
		t.Fatalf("a refused regeneration stored something: %v", got)
	}
}

func init() {
	idorCases = append(idorCases,
		idorCase{
			name: "ConversationService.RegenerateMessage in B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				return refusedStream(a.Conv.RegenerateMessage(ctx, connect.NewRequest(&parleyv1.RegenerateMessageRequest{
					ConversationId: b.ConversationID, MessageId: "0190c0de-0000-7000-8000-000000000000"})))
			},
			intact: conversationIntact,
		},
		idorCase{
			name: "ConversationService.ListMessages switching B's branch",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: b.ConversationID,
					LeafMessageId: "0190c0de-0000-7000-8000-000000000000", MakeCurrent: true}))
				return leakIfNil(err, "listed B's branch")
			},
			intact: conversationIntact,
		},
		idorCase{
			name: "ConversationService.UpdateConversation system prompt of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				p := "pwned"
				_, err := a.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: b.ConversationID, SystemPrompt: &p}))
				return leakIfNil(err, "set B's system prompt")
			},
			intact: conversationIntact,
		},
	)
}

// kill -9 of the gateway mid-answer: what had been saved of the answer
// stays stored, and after the restart it reads as interrupted, answering
// its question (never two questions in a row); the conversation goes on
// from it.
func TestCrashLeavesThePartialAnswerInterrupted(t *testing.T) {
	dir := t.TempDir()
	args := append(fastAuth, "--data-dir", dir, "--sim-time-scale", "10") // ~7 tokens a second
	testCrash(t, startServer(t, args...), func() *server { return startServer(t, args...) },
		func(conv string) []store.Message { return storedMessages(t, dir, conv) })
}

// The same with two gateways on the scale backends: the killed gateway's
// claim on the conversation (in Redis) lapses within seconds, and the other
// gateway then reads the answer as interrupted and takes the next question.
func TestScaleCrashLeavesThePartialAnswerInterrupted(t *testing.T) {
	scaleMode(t)
	args := append(fastAuth, "--sim-time-scale", "10")
	gw0, gw1 := startServer(t, args...), startServer(t, args...)
	testCrash(t, gw0, func() *server { return gw1 }, nil)
}

// testCrash kills s with SIGKILL mid-answer and reads the conversation
// through the gateway next returns; stored, if given, reads the store
// directly.
func testCrash(t *testing.T, s *server, next func() *server, stored func(conv string) []store.Message) {
	a := s.newAccount(t, "crash@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 90*time.Second)
	stream, err := c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{
		Model: "sim-small", Parts: textPart("Tell me everything you know."), MaxOutputTokens: 2000}))
	if err != nil {
		t.Fatal(err)
	}
	var started *parleyv1.GenerationStarted
	var streamed strings.Builder
	for stream.Receive() && started == nil {
		started = stream.Msg().GetEvent().GetStarted()
	}
	if started == nil {
		t.Fatalf("no generation started: %v", stream.Err())
	}
	conv := started.GetConversationId()
	// While it runs the answer is stored in progress, and grows.
	var saved string
	deadline := time.Now().Add(20 * time.Second)
	for saved == "" {
		for stream.Receive() {
			streamed.WriteString(stream.Msg().GetEvent().GetDelta().GetText())
			if streamed.Len() > 0 {
				break
			}
		}
		msgs := branchOf(t, ctx, c, conv, "", false)
		if len(msgs) != 2 || msgs[1].GetMessageId() != started.GetMessageId() || msgs[1].GetStatus() != parleyv1.MessageStatus_MESSAGE_STATUS_IN_PROGRESS {
			t.Fatalf("while generating: %v", msgs)
		}
		saved = textOf(msgs[1])
		if time.Now().After(deadline) {
			t.Fatal("nothing of the answer saved in 20 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.Signal(syscall.SIGKILL)
	if _, err := s.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	partial := ""
	if stored != nil {
		msgs := stored(conv)
		if len(msgs) != 2 || msgs[1].Status != "in_progress" || len(msgs[1].Parts) != 1 || msgs[1].Parts[0].Text == "" || msgs[1].ParentID != msgs[0].ID {
			t.Fatalf("stored after kill -9: %+v", msgs)
		}
		partial = msgs[1].Parts[0].Text
	}

	// Restarted (or on the other gateway once the dead one's claim has
	// lapsed), the answer reads as interrupted, with what was saved.
	s2 := next()
	c = s2.api(protocols[0], cred{cookie: a.Cookie})
	var msgs []*parleyv1.ConversationMessage
	for end := time.Now().Add(40 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		msgs = branchOf(t, ctx, c, conv, "", false)
		if len(msgs) != 2 || msgs[1].GetStatus() != parleyv1.MessageStatus_MESSAGE_STATUS_IN_PROGRESS || time.Now().After(end) {
			break
		}
	}
	if partial == "" && len(msgs) == 2 {
		partial = textOf(msgs[1])
	}
	if len(msgs) != 2 || msgs[0].GetRole() != parleyv1.Role_ROLE_USER || msgs[1].GetRole() != parleyv1.Role_ROLE_ASSISTANT ||
		msgs[1].GetStatus() != parleyv1.MessageStatus_MESSAGE_STATUS_INTERRUPTED || textOf(msgs[1]) != partial || partial == "" {
		t.Fatalf("after the crash: %v", msgs)
	}
	if !strings.HasPrefix(partial, saved) {
		t.Fatalf("stored %q does not continue what was saved before (%q)", partial, saved)
	}
	if stored != nil {
		if msgs := stored(conv); msgs[1].Status != "interrupted" {
			t.Fatalf("stored status after the restart: %q", msgs[1].Status)
		}
	}
	got, err := c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: conv}))
	if err != nil || got.Msg.GetConversation().GetGenerating() {
		t.Fatalf("conversation after the restart: %v %v", got, err)
	}
	// The next question follows the partial answer, which is in its context.
	g := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("Go on."), MaxOutputTokens: 5})
	want := prompt(turn("user", "Tell me everything you know."), turn("assistant", partial), turn("user", "Go on."))
	if p := g.finished.GetUsage().GetPromptTokens(); p != want {
		t.Fatalf("next prompt %d tokens, want %d (with the partial answer)", p, want)
	}
	msgs = branchOf(t, ctx, c, conv, "", false)
	for i, m := range msgs {
		if wantRole := []parleyv1.Role{parleyv1.Role_ROLE_USER, parleyv1.Role_ROLE_ASSISTANT}[i%2]; m.GetRole() != wantRole {
			t.Fatalf("message %d is %v: %v", i, m.GetRole(), msgs)
		}
	}
	if len(msgs) != 4 || msgs[3].GetStatus() != parleyv1.MessageStatus_MESSAGE_STATUS_COMPLETE {
		t.Fatalf("after the next question: %v", msgs)
	}
}

func textOf(m *parleyv1.ConversationMessage) string {
	var b strings.Builder
	for _, p := range m.GetParts() {
		b.WriteString(p.GetText())
	}
	return b.String()
}
