package e2e

import (
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// A prompt library: saved, renamed, listed by name, deleted; names unique
// per person, fields named when wrong, another person's prompts not found.
func TestSavedPrompts(t *testing.T) {
	s := startServer(t, fastAuth...)
	ctx := ctxTimeout(t, 30*time.Second)
	a, b := s.newAccount(t, "library@example.com"), s.newAccount(t, "nosy@example.com")
	ac, bc := s.api(protocols[0], cred{cookie: a.Cookie}), s.api(protocols[0], cred{cookie: b.Cookie})
	save := func(c apiClients, req *parleyv1.SavePromptRequest) (*parleyv1.SavedPrompt, error) {
		res, err := c.Conv.SavePrompt(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return res.Msg.GetPrompt(), nil
	}
	sum, err := save(ac, &parleyv1.SavePromptRequest{Name: "summarize", Text: "Summarize this in three bullets:"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := save(ac, &parleyv1.SavePromptRequest{Name: "résumé", Text: "Résume en français :"}); err != nil {
		t.Fatalf("a name with accents: %v", err)
	}
	_, err = save(ac, &parleyv1.SavePromptRequest{Name: "summarize", Text: "again"})
	wantCode(t, "a second prompt of the name", err, connect.CodeAlreadyExists)
	for field, req := range map[string]*parleyv1.SavePromptRequest{
		"name":      {Name: "two words", Text: "x"},
		"text":      {Name: "empty", Text: ""},
		"prompt_id": {PromptId: "not-an-id", Name: "x", Text: "x"},
	} {
		_, err := save(ac, req)
		if fv := new(parleyv1.FieldViolation); connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, fv) || fv.GetField() != field {
			t.Errorf("a bad %s: %v", field, err)
		}
	}
	_, err = save(ac, &parleyv1.SavePromptRequest{Name: "long", Text: strings.Repeat("x", 8001)})
	wantCode(t, "a text of 8001 characters", err, connect.CodeInvalidArgument)
	// Another person can neither change nor delete it, nor see it.
	_, err = save(bc, &parleyv1.SavePromptRequest{PromptId: sum.GetPromptId(), Name: "mine", Text: "stolen"})
	wantCode(t, "changing another person's prompt", err, connect.CodeNotFound)
	_, err = bc.Conv.DeleteSavedPrompt(ctx, connect.NewRequest(&parleyv1.DeleteSavedPromptRequest{PromptId: sum.GetPromptId()}))
	wantCode(t, "deleting another person's prompt", err, connect.CodeNotFound)
	if l, err := bc.Conv.ListSavedPrompts(ctx, connect.NewRequest(&parleyv1.ListSavedPromptsRequest{})); err != nil || len(l.Msg.GetPrompts()) != 0 {
		t.Fatalf("another person's library: %v %v", l, err)
	}
	// Renamed, then listed by name.
	if _, err := save(ac, &parleyv1.SavePromptRequest{PromptId: sum.GetPromptId(), Name: "bullets", Text: "Three bullets:"}); err != nil {
		t.Fatal(err)
	}
	l, err := ac.Conv.ListSavedPrompts(ctx, connect.NewRequest(&parleyv1.ListSavedPromptsRequest{}))
	if err != nil || len(l.Msg.GetPrompts()) != 2 || l.Msg.GetPrompts()[0].GetName() != "bullets" || l.Msg.GetPrompts()[0].GetText() != "Three bullets:" {
		t.Fatalf("the library: %v %v", l, err)
	}
	if _, err := ac.Conv.DeleteSavedPrompt(ctx, connect.NewRequest(&parleyv1.DeleteSavedPromptRequest{PromptId: sum.GetPromptId()})); err != nil {
		t.Fatal(err)
	}
	if l, _ := ac.Conv.ListSavedPrompts(ctx, connect.NewRequest(&parleyv1.ListSavedPromptsRequest{})); len(l.Msg.GetPrompts()) != 1 {
		t.Fatalf("after a delete: %v", l.Msg)
	}
}
