package e2e

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"

	"google.golang.org/protobuf/proto"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// A new web chat is named after its first exchange by the model: a short
// generation counted in the tier's limits and in usage like any message;
// later messages, a conversation given a title and a rename keep theirs.
func TestAutoTitles(t *testing.T) {
	s := startServer(t, append(fastAuth, "--auto-titles")...)
	a := s.newAccount(t, "titles@example.com")
	ctx := ctxTimeout(t, 60*time.Second)
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	started, _, _ := send(t, ctx, c, &parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("What is a raven like, and why is it like a writing desk?")})
	id := started.GetConversationId()
	var conv *parleyv1.Conversation
	waitFor(t, 20*time.Second, "a generated title", func() bool {
		res, err := c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: id}))
		if err != nil {
			t.Fatal(err)
		}
		conv = res.Msg.GetConversation()
		return conv.GetTitleGenerated()
	})
	if conv.GetTitle() == "" || conv.GetTitle() == "What is a raven like, and why is it like a writing desk?" || utf8.RuneCountInString(conv.GetTitle()) > 80 {
		t.Fatalf("the generated title: %q", conv.GetTitle())
	}
	t.Logf("generated title %q", conv.GetTitle())
	// Counted like a message: two requests of the tier's allowance.
	lim, err := c.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "sim-small"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lim.Msg.GetLimits() {
		if l.GetKind() == parleyv1.LimitKind_LIMIT_KIND_REQUESTS && l.GetUsed() != 2 {
			t.Errorf("requests used: %d, want 2 (the answer and the title)", l.GetUsed())
		}
	}
	// A second message does not rename it; a rename clears the flag.
	_, _, _ = send(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: id, Parts: textPart("Tell me more.")})
	time.Sleep(300 * time.Millisecond)
	res, err := c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: id}))
	if err != nil || res.Msg.GetConversation().GetTitle() != conv.GetTitle() {
		t.Fatalf("after a second message: %v %v", res, err)
	}
	up, err := c.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: id, Title: proto.String("Riddles")}))
	if err != nil || up.Msg.GetConversation().GetTitleGenerated() || up.Msg.GetConversation().GetTitle() != "Riddles" {
		t.Fatalf("a rename: %v %v", up, err)
	}
	// A conversation made with a title keeps it.
	named, err := c.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Title: "My own name"}))
	if err != nil {
		t.Fatal(err)
	}
	_, _, _ = send(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: named.Msg.GetConversation().GetConversationId(), Parts: textPart("Hello there.")})
	time.Sleep(500 * time.Millisecond)
	got, err := c.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: named.Msg.GetConversation().GetConversationId()}))
	if err != nil || got.Msg.GetConversation().GetTitle() != "My own name" || got.Msg.GetConversation().GetTitleGenerated() {
		t.Fatalf("a named conversation: %v %v", got, err)
	}
}

// Pins and folders through the API: set, kept, cleared; a folder's name is
// bounded and named when wrong; another person's conversation not found.
func TestPinsAndFolders(t *testing.T) {
	s := startServer(t, fastAuth...)
	ctx := ctxTimeout(t, 30*time.Second)
	a, b := s.newAccount(t, "pins@example.com"), s.newAccount(t, "nosy@example.com")
	ac, bc := s.api(protocols[0], cred{cookie: a.Cookie}), s.api(protocols[0], cred{cookie: b.Cookie})
	conv, err := ac.Conv.CreateConversation(ctx, connect.NewRequest(&parleyv1.CreateConversationRequest{Title: "Plans"}))
	if err != nil {
		t.Fatal(err)
	}
	id := conv.Msg.GetConversation().GetConversationId()
	up, err := ac.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: id, Pinned: proto.Bool(true), Folder: proto.String(" Work ")}))
	if err != nil || !up.Msg.GetConversation().GetPinned() || up.Msg.GetConversation().GetFolder() != "Work" {
		t.Fatalf("pin and file: %v %v", up, err)
	}
	_, err = bc.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: id, Pinned: proto.Bool(false)}))
	wantCode(t, "another person's pin", err, connect.CodeNotFound)
	_, err = ac.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: id, Folder: proto.String(strings.Repeat("f", 61))}))
	if fv := new(parleyv1.FieldViolation); connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, fv) || fv.GetField() != "folder" {
		t.Fatalf("a 61-character folder: %v", err)
	}
	l, err := ac.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{}))
	if err != nil || len(l.Msg.GetConversations()) != 1 || !l.Msg.GetConversations()[0].GetPinned() || l.Msg.GetConversations()[0].GetFolder() != "Work" {
		t.Fatalf("listed: %v %v", l, err)
	}
	up, err = ac.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: id, Pinned: proto.Bool(false), Folder: proto.String("")}))
	if err != nil || up.Msg.GetConversation().GetPinned() || up.Msg.GetConversation().GetFolder() != "" {
		t.Fatalf("unpin and unfile: %v %v", up, err)
	}
}
