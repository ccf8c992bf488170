package compat

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/sse"
)

func TestAnthropicErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		typ        string
		retryAfter string
		noRetry    bool
	}{
		{"invalid", apierr.InvalidArgument("max_tokens", "is required"), 400, "invalid_request_error", "", false},
		{"too large", &bodyTooLarge{apierr.InvalidArgument("body", "is over the limit of 10 bytes")}, 413, "request_too_large", "", false},
		{"unauthenticated", apierr.Unauthenticated("no"), 401, "authentication_error", "", false},
		{"permission", apierr.PermissionDenied("no"), 403, "permission_error", "", false},
		{"unknown model", apierr.UnknownModel("model", "x"), 404, "not_found_error", "", false},
		{"rate limit", apierr.ResourceExhausted("slow down", 1500*time.Millisecond), 429, "rate_limit_error", "2", false},
		{"balance", apierr.InsufficientBalance(0, 1234), 400, "invalid_request_error", "", true},
		{"overloaded", apierr.Unavailable("busy", 3*time.Second), 529, "overloaded_error", "3", false},
		{"internal", errors.New("boom"), 500, "api_error", "", false},
		{"deadline", connect.NewError(connect.CodeDeadlineExceeded, errors.New("late")), 504, "timeout_error", "", false},
	} {
		rec := httptest.NewRecorder()
		writeAnthropicError(rec, nil, tc.err)
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != tc.status || body.Type != "error" ||
			body.Error.Type != tc.typ || body.Error.Message == "" {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
		if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", tc.name, got, tc.retryAfter)
		}
		if (rec.Header().Get("X-Should-Retry") == "false") != tc.noRetry {
			t.Errorf("%s: X-Should-Retry %q", tc.name, rec.Header().Get("X-Should-Retry"))
		}
		if tc.name == "balance" && !strings.HasPrefix(body.Error.Message, "Your credit balance is too low") {
			t.Errorf("balance message %q", body.Error.Message)
		}
		if tc.name == "internal" && strings.Contains(body.Error.Message, "boom") {
			t.Errorf("an internal cause leaked: %q", body.Error.Message)
		}
	}
}

// The stream's blocks: text, then each tool call in a block of its own,
// every block closed before the next opens; an error after the start is an
// error event.
func TestAnthropicStreamBlocks(t *testing.T) {
	rec := httptest.NewRecorder()
	s := &anthropicStream{chunkWriter: chunkWriter{w: rec, enc: sse.NewEncoder(rec)}, callBlock: map[int32]int{}, cur: -1}
	for _, d := range []*parleyv1.GenerationDelta{
		{Text: "Let me "},
		{Text: "look."},
		{ToolCalls: []*parleyv1.ToolCallDelta{{Index: 0, Id: "call_1", Name: "get_weather", Arguments: `{"loc`}}},
		{ToolCalls: []*parleyv1.ToolCallDelta{{Index: 0, Arguments: `ation":"Paris"}`}}},
		{ToolCalls: []*parleyv1.ToolCallDelta{{Index: 1, Id: "call_2", Name: "get_time"}}},
	} {
		if err := s.delta(0, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.closeBlock(); err != nil {
		t.Fatal(err)
	}
	s.fail(apierr.Unavailable("the server is shutting down", time.Second))
	want := []string{
		`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"look."}}`,
		`content_block_stop {"type":"content_block_stop","index":0}`,
		`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_1","name":"get_weather","input":{}}}`,
		`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"loc"}}`,
		`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ation\":\"Paris\"}"}}`,
		`content_block_stop {"type":"content_block_stop","index":1}`,
		`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_2","name":"get_time","input":{}}}`,
		`content_block_stop {"type":"content_block_stop","index":2}`,
		`error {"type":"error","error":{"type":"overloaded_error","message":"the server is shutting down"}}`,
	}
	var got []string
	dec := sse.NewDecoder(rec.Body)
	for {
		ev, err := dec.Next()
		if err != nil {
			break
		}
		got = append(got, ev.Event+" "+ev.Data)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
}

func TestAnthropicMapping(t *testing.T) {
	h := &anthropicHandler{&deps{Core: &chat.Core{}}}
	body := `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Be kind.","cache_control":{"type":"ephemeral"}}],
		"metadata":{"user_id":"u-1"},"stop_sequences":["END"],"temperature":0.5,
		"tools":[{"name":"get_weather","description":"w","input_schema":{"type":"object"}}],
		"tool_choice":{"type":"any","disable_parallel_tool_use":true},
		"messages":[
			{"role":"user","content":"Weather?"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"Looking."},
				{"type":"tool_use","id":"call_1","name":"get_weather","input":{ "location" : "Paris" }}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"sunny"},
				{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"no "},{"type":"text","text":"such"}],"is_error":true},
				{"type":"text","text":"Thanks"}]}]}`
	r := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
	req, err := h.parse(r, false)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := h.toChat(r, req)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	if cr.Model != "m" || cr.MaxOutputTokens != 10 || cr.User != "u-1" || len(cr.Stop) != 1 || *cr.Temperature != 0.5 ||
		cr.ToolChoice.Mode != llm.ToolChoiceRequired || cr.ParallelToolCalls == nil || *cr.ParallelToolCalls != no ||
		len(cr.Tools) != 1 || string(cr.Tools[0].Parameters) != `{"type":"object"}` {
		t.Fatalf("request %+v", cr)
	}
	type msg struct {
		role  string
		parts string
	}
	var got []msg
	for _, m := range cr.Messages {
		var parts []string
		for _, p := range m.Parts {
			switch {
			case p.ToolCall != nil:
				parts = append(parts, "call "+p.ToolCall.ID+" "+p.ToolCall.Name+" "+p.ToolCall.Arguments)
			case p.ToolResult != nil:
				parts = append(parts, "result "+p.ToolResult.ToolCallID+" "+p.ToolResult.Content)
			default:
				parts = append(parts, p.Text)
			}
		}
		got = append(got, msg{m.Role, strings.Join(parts, " | ")})
	}
	want := []msg{
		{"system", "Be brief. | Be kind."},
		{"user", "Weather?"},
		{"assistant", `Looking. | call call_1 get_weather {"location":"Paris"}`},
		{"tool", "result call_1 sunny"},
		{"tool", "result call_2 Error: no such"},
		{"user", "Thanks"},
	}
	if len(got) != len(want) {
		t.Fatalf("messages %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The core's field paths come back as the caller spelled them.
	for core, caller := range map[string]string{
		"messages[0].parts[1].text":         "system[1].text",
		"messages[1].parts[0].text":         "messages[0].content",
		"messages[2].parts[1].arguments":    "messages[1].content[2].input",
		"messages[2].parts[1].id":           "messages[1].content[2].id",
		"messages[4].parts[0].tool_call_id": "messages[2].content[1].tool_use_id",
		"messages[5].parts[0]":              "messages[2].content[2]",
		"messages[5].role":                  "messages[2].role",
		"max_output_tokens":                 "max_tokens",
		"stop[0]":                           "stop_sequences[0]",
		"stop":                              "stop_sequences",
		"user":                              "metadata.user_id",
		"tools[0].parameters":               "tools[0].input_schema",
		"tools[0].name":                     "tools[0].name",
		"tool_choice":                       "tool_choice",
	} {
		if got := cr.Rename(core); got != caller {
			t.Errorf("Rename(%s) = %s, want %s", core, got, caller)
		}
	}
}

func TestToolInput(t *testing.T) {
	for in, want := range map[string]string{
		``:                   `{}`,
		` {"a":1} `:          `{"a":1}`,
		`[1]`:                `"[1]"`,
		`{"a":`:              `"{\"a\":"`,
		`null`:               `"null"`,
		`{"nested":{}} `:     `{"nested":{}}`,
		"{\"s\":\"\u00e9\"}": "{\"s\":\"\u00e9\"}",
	} {
		if got := string(toolInput(in)); got != want {
			t.Errorf("toolInput(%q) = %s, want %s", in, got, want)
		}
	}
}
