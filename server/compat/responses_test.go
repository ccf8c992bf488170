package compat

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

func TestResponseIDRoundTrip(t *testing.T) {
	conv, msg := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	id := responseID(conv, msg)
	if len(id) != 69 || !strings.HasPrefix(id, "resp_") {
		t.Fatalf("id %q", id)
	}
	c, m, ok := parseResponseID(id)
	if !ok || c != conv || m != msg {
		t.Fatalf("parse(%q) = %q %q %v", id, c, m, ok)
	}
	for _, bad := range []string{"", "resp_", "resp_" + strings.Repeat("g", 64), "msg_" + id[5:], id + "0", id[:68]} {
		if _, _, ok := parseResponseID(bad); ok {
			t.Fatalf("parse(%q) ok", bad)
		}
	}
}

// chainMessage is a stored message for the chain tests.
func chainMessage(id, role, text string) store.Message {
	return store.Message{ID: id, Role: role, Parts: []store.Part{{Text: text}}}
}

func withRecord(m store.Message, previous string, inputs ...string) store.Message {
	meta, _ := json.Marshal(chat.ResponseRecord{Previous: previous, Inputs: inputs})
	m.Parts = append(m.Parts, store.Part{Meta: string(meta)})
	return m
}

func TestResponseOutputItems(t *testing.T) {
	id := uuid.Must(uuid.NewV7()).String()
	m := withRecord(store.Message{ID: id, Role: "assistant", FinishReason: "tool_calls", Parts: []store.Part{
		{Text: "Looking."},
		{ToolCall: &llm.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"location":"Paris"}`}},
		{ToolCall: &llm.ToolCall{ID: "call_2", Name: "get_time", Arguments: `{}`}},
	}}, "")
	got, _ := json.Marshal(responseOutput(m))
	h := hexID(id)
	want := `[{"type":"message","id":"msg_` + h + `","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Looking.","annotations":[],"logprobs":[]}]},` +
		`{"type":"function_call","id":"fc_` + h + `00","call_id":"call_1","name":"get_weather","arguments":"{\"location\":\"Paris\"}","status":"completed"},` +
		`{"type":"function_call","id":"fc_` + h + `01","call_id":"call_2","name":"get_time","arguments":"{}","status":"completed"}]`
	if string(got) != want {
		t.Fatalf("output\n%s\nwant\n%s", got, want)
	}
	// Nothing said, cut at the limit: one empty, incomplete message.
	got, _ = json.Marshal(responseOutput(store.Message{ID: id, Role: "assistant", FinishReason: "length"}))
	if want := `[{"type":"message","id":"msg_` + h + `","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"","annotations":[],"logprobs":[]}]}]`; string(got) != want {
		t.Fatalf("empty output %s", got)
	}
}

// Function calls sent as separate items join the assistant message before
// them, as the engines expect one assistant turn with its calls; stored
// meta never reaches the model.
func TestResponseMessagesJoinCalls(t *testing.T) {
	h := &openAIHandler{&deps{Core: &chat.Core{}}}
	p := &responsePlan{}
	msgs := []store.Message{
		chainMessage("u", "user", "Weather and time?"),
		withRecord(store.Message{ID: "o", Role: "assistant", Parts: []store.Part{{Text: ""},
			{ToolCall: &llm.ToolCall{ID: "c1", Name: "get_weather", Arguments: "{}"}}}}, ""),
		{ID: "f", Role: "assistant", Parts: []store.Part{{ToolCall: &llm.ToolCall{ID: "c2", Name: "get_time", Arguments: "{}"}}}},
		{ID: "r1", Role: "tool", Parts: []store.Part{{ToolResult: &llm.ToolResult{ToolCallID: "c1", Content: "18"}}}},
		{ID: "r2", Role: "tool", Parts: []store.Part{{ToolResult: &llm.ToolResult{ToolCallID: "c2", Content: "noon"}}}},
	}
	for i, m := range msgs {
		if err := h.addMessage(t.Context(), "user", p, m, "input["+string(rune('0'+i))+"]", true); err != nil {
			t.Fatal(err)
		}
	}
	want := []llm.ChatMessage{
		{Role: "user", Parts: []llm.Part{{Text: "Weather and time?"}}},
		{Role: "assistant", Parts: []llm.Part{{ToolCall: &llm.ToolCall{ID: "c1", Name: "get_weather", Arguments: "{}"}},
			{ToolCall: &llm.ToolCall{ID: "c2", Name: "get_time", Arguments: "{}"}}}},
		{Role: "tool", Parts: []llm.Part{{ToolResult: &llm.ToolResult{ToolCallID: "c1", Content: "18"}}}},
		{Role: "tool", Parts: []llm.Part{{ToolResult: &llm.ToolResult{ToolCallID: "c2", Content: "noon"}}}},
	}
	if !reflect.DeepEqual(p.chat.Messages, want) {
		t.Fatalf("messages %+v", p.chat.Messages)
	}
	if !reflect.DeepEqual(p.origins, []string{"input[0]", "input[1]", "input[3]", "input[4]"}) {
		t.Fatalf("origins %v", p.origins)
	}
	if got := p.rename("messages[2].parts[0].tool_call_id"); got != "input[3]" {
		t.Fatalf("rename = %q", got)
	}
	if got := p.rename("response_format.schema"); got != "text.format.schema" {
		t.Fatalf("rename = %q", got)
	}
}

func TestParseResponsesRequest(t *testing.T) {
	parse := func(h *openAIHandler, body string) (*responsesRequest, error) {
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		req, err := h.parseResponses(r)
		if err != nil {
			return nil, err
		}
		if _, _, _, err := h.responsesChat(r, req); err != nil {
			return nil, err
		}
		if _, _, err := req.inputMessages(nil); err != nil {
			return nil, err
		}
		return req, nil
	}
	field := func(err error) string {
		var fv parleyv1.FieldViolation
		if !apierr.Detail(err, &fv) {
			return ""
		}
		return fv.GetField()
	}
	refuse := &openAIHandler{&deps{}}
	for body, want := range map[string]string{
		`{"model":"m","input":"hi","reasoning":{"effort":"extreme"}}`:                     "reasoning",
		`{"model":"m","input":"hi","truncation":"auto"}`:                                  "truncation",
		`{"model":"m","input":"hi","text":{"verbosity":"loud"}}`:                          "text.verbosity",
		`{"model":"m","input":"hi","include":["message.input_image.image_url"]}`:          "include",
		`{"model":"m","input":"hi","tools":[{"type":"file_search"}]}`:                     "tools[0].type",
		`{"model":"m","input":"hi","tool_choice":{"type":"web_search"}}`:                  "tool_choice",
		`{"model":"m","input":"hi","text":{"format":{"type":"xml"}}}`:                     "text.format.type",
		`{"model":"m","input":"hi","max_output_tokens":0}`:                                "max_output_tokens",
		`{"model":"m","input":[]}`:                                                        "input",
		`{"model":"m","input":[{"type":"function_call","name":"f"}]}`:                     "input[0].call_id",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_audio"}]}]}`:      "input[0].content[0].type",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`:      "input[0].content[0].image_url",
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image"}]}]}`: "input[0].content[0].type",
		`{"model":"m","input":"hi","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`:  "metadata.k",
	} {
		if _, err := parse(refuse, body); field(err) != want {
			t.Errorf("%s: %v, want a violation of %s", body, err, want)
		}
	}
	// Harmless values and the SDKs' echoes of earlier output are accepted.
	req, err := parse(refuse, `{"model":"m","reasoning":{"effort":null,"summary":null},"include":[],"store":false,"truncation":"disabled",
		"service_tier":"auto","top_logprobs":0,"stream_options":{"include_obfuscation":false},"prompt_cache_key":"k","safety_identifier":"eu",
		"input":[{"type":"message","role":"developer","content":"be kind"},
		{"type":"function_call","id":"fc_1","status":"completed","call_id":"c","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"ok"}]}]}`)
	if err != nil || req.stores() || req.User != "eu" {
		t.Fatalf("harmless request: %+v, %v", req, err)
	}
	// Dropped instead, when the operator says so.
	if _, err := parse(&openAIHandler{&deps{Unsupported: UnsupportedDrop}}, `{"model":"m","input":"hi","reasoning":{"effort":"high"},
		"tools":[{"type":"web_search"},{"type":"function","name":"f"}]}`); err != nil {
		t.Fatalf("drop: %v", err)
	}
}
