package chat

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/tokenize"
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

func user(parts ...llm.Part) llm.ChatMessage {
	return llm.ChatMessage{Role: "user", Parts: parts}
}

// An empty text part is refused, naming it; an assistant turn of tool
// calls only (no text part at all) is fine.
func TestEmptyTextPartRefused(t *testing.T) {
	c := validationCore(t, 0)
	_, _, _, err := c.validate(&Request{Request: llm.Request{Model: "sim-small", Messages: []llm.ChatMessage{
		user(llm.Part{Text: "Hello"}),
		{Role: "assistant", Parts: []llm.Part{{Text: "Hi"}}},
		user(llm.Part{Text: "a"}, llm.Part{Text: ""}),
	}}})
	wantField(t, "empty text part", err, "messages[2].parts[1].text")

	_, _, _, err = c.validate(&Request{Request: llm.Request{Model: "sim-small", Messages: []llm.ChatMessage{
		user(llm.Part{Text: "What is the weather in Paris?"}),
		{Role: "assistant", Parts: []llm.Part{{ToolCall: &llm.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"location":"Paris"}`}}}},
		{Role: "tool", Parts: []llm.Part{{ToolResult: &llm.ToolResult{ToolCallID: "call_1", Content: "sunny"}}}},
	}}})
	if err != nil {
		t.Errorf("assistant message of tool calls only: %v", err)
	}
}

// Stop sequences count toward the prompt's size bound.
func TestStopStringsCountTowardThePromptSize(t *testing.T) {
	c := validationCore(t, 300)
	prompt := strings.Repeat("a", 250)
	stop := []string{strings.Repeat("x", 64), strings.Repeat("y", 64)}
	if _, _, _, err := c.validate(&Request{Request: llm.Request{Model: "sim-small", Messages: []llm.ChatMessage{user(llm.Part{Text: prompt})}, Stop: stop[:0]}}); err != nil {
		t.Fatalf("prompt alone, under the bound: %v", err)
	}
	_, _, _, err := c.validate(&Request{Request: llm.Request{Model: "sim-small", Messages: []llm.ChatMessage{user(llm.Part{Text: prompt})}, Stop: stop}})
	wantField(t, "prompt and stop sequences over the bound", err, "stop")
}

// A schema over its budget is refused naming the keyword inside it, under
// the field the caller's surface spells; max_output_tokens decides what an
// impossible minimum is.
func TestSchemaBudgetNamesTheKeyword(t *testing.T) {
	c := validationCore(t, 0)
	schema := []byte(`{"type":"object","properties":{"items":{"type":"array","minItems":1000000000}},"required":["items"]}`)
	msgs := []llm.ChatMessage{user(llm.Part{Text: "list"})}
	_, _, _, err := c.validate(&Request{Request: llm.Request{Model: "sim-small", Messages: msgs,
		ResponseFormat: llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "out", Schema: schema}}})
	wantField(t, "response format", err, "response_format.schema.properties.items.minItems")

	req := Request{Request: llm.Request{Model: "sim-small", Messages: msgs, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired},
		Tools: []llm.Tool{{Name: "a", Parameters: []byte(`{"type":"object"}`)}, {Name: "b", Parameters: schema}}},
		Rename: func(f string) string {
			if f == "tools[1].parameters" {
				return "tools[1].input_schema"
			}
			return f
		}}
	_, _, _, err = c.validate(&req)
	wantField(t, "tool parameters", req.renamed(err), "tools[1].input_schema.properties.items.minItems")

	small := []byte(`{"type":"string","minLength":2000}`)
	ok := Request{Request: llm.Request{Model: "sim-small", Messages: msgs, ResponseFormat: llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "s", Schema: small}}}
	if _, _, _, err := c.validate(&ok); err != nil {
		t.Errorf("minLength 2000 at the model's maximum output: %v", err)
	}
	ok.MaxOutputTokens = 100
	_, _, _, err = c.validate(&ok)
	wantField(t, "minLength 2000 in 100 tokens", err, "response_format.schema.minLength")
}
