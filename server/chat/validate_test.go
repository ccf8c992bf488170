package chat

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/tokenize"
	"github.com/parleyhq/parley/server/worker"
)

func validationCore(t *testing.T, maxPromptBytes int) *Core {
	t.Helper()
	catalog, err := models.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return &Core{Models: catalog, Tokens: tokenize.Default(), MaxPromptBytes: maxPromptBytes}
}

// wantField checks that err is invalid_argument naming field.
func wantField(t *testing.T, what string, err error, field string) {
	t.Helper()
	var fv parleyv1.FieldViolation
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !apierr.Detail(err, &fv) || fv.GetField() != field {
		t.Errorf("%s: %v (field %q), want invalid_argument on %s", what, err, fv.GetField(), field)
	}
}

func user(parts ...worker.Part) worker.ChatMessage {
	return worker.ChatMessage{Role: "user", Parts: parts}
}

// An empty text part is refused, naming it; an assistant turn of tool
// calls only (no text part at all) is fine.
func TestEmptyTextPartRefused(t *testing.T) {
	c := validationCore(t, 0)
	_, _, _, err := c.validate(Request{Model: "sim-small", Messages: []worker.ChatMessage{
		user(worker.Part{Text: "Hello"}),
		{Role: "assistant", Parts: []worker.Part{{Text: "Hi"}}},
		user(worker.Part{Text: "a"}, worker.Part{Text: ""}),
	}})
	wantField(t, "empty text part", err, "messages[2].parts[1].text")

	_, _, _, err = c.validate(Request{Model: "sim-small", Messages: []worker.ChatMessage{
		user(worker.Part{Text: "What is the weather in Paris?"}),
		{Role: "assistant", Parts: []worker.Part{{ToolCall: &worker.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"location":"Paris"}`}}}},
		{Role: "tool", Parts: []worker.Part{{ToolResult: &worker.ToolResult{ToolCallID: "call_1", Content: "sunny"}}}},
	}})
	if err != nil {
		t.Errorf("assistant message of tool calls only: %v", err)
	}
}

// Stop sequences count toward the prompt's size bound.
func TestStopStringsCountTowardThePromptSize(t *testing.T) {
	c := validationCore(t, 300)
	prompt := strings.Repeat("a", 250)
	stop := []string{strings.Repeat("x", 64), strings.Repeat("y", 64)}
	if _, _, _, err := c.validate(Request{Model: "sim-small", Messages: []worker.ChatMessage{user(worker.Part{Text: prompt})}, Stop: stop[:0]}); err != nil {
		t.Fatalf("prompt alone, under the bound: %v", err)
	}
	_, _, _, err := c.validate(Request{Model: "sim-small", Messages: []worker.ChatMessage{user(worker.Part{Text: prompt})}, Stop: stop})
	wantField(t, "prompt and stop sequences over the bound", err, "stop")
}
