package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

func weatherTool(t *testing.T) *parleyv1.Tool {
	params, err := structpb.NewStruct(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"location": map[string]any{"type": "string"},
			"unit":     map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
		},
		"required":             []any{"location", "unit"},
		"additionalProperties": false,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &parleyv1.Tool{Name: "get_weather", Description: "Current weather", Parameters: params}
}

// The same tool conversation — a forced call, then its result, then a text
// answer — through Connect, gRPC and gRPC-Web, whole and streamed.
func TestToolConversationOverEveryProtocol(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "tools@example.com")
	s.topup(t, a, "10")
	tool := weatherTool(t)
	for _, p := range allProtocols {
		t.Run(p.name, func(t *testing.T) {
			c := s.api(p, cred{bearer: a.Key})
			ctx := ctxTimeout(t, 20*time.Second)
			req := &parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("Weather in Paris?"), Tools: []*parleyv1.Tool{tool},
				ToolChoice: &parleyv1.ToolChoice{Mode: parleyv1.ToolChoiceMode_TOOL_CHOICE_MODE_REQUIRED}, User: "end-user-7"}
			res, err := c.Chat.Complete(ctx, connect.NewRequest(req))
			if err != nil {
				t.Fatal(err)
			}
			m := res.Msg
			if m.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_TOOL_CALLS || len(m.GetMessage().GetParts()) != 1 || len(m.GetChoices()) != 1 {
				t.Fatalf("response %v", m)
			}
			call := m.GetMessage().GetParts()[0].GetToolCall()
			var args map[string]any
			if call.GetName() != "get_weather" || call.GetId() == "" || json.Unmarshal([]byte(call.GetArguments()), &args) != nil ||
				args["location"] == nil || (args["unit"] != "celsius" && args["unit"] != "fahrenheit") {
				t.Fatalf("call %v", call)
			}

			// Streamed, the pieces put together are the same call.
			stream, err := c.Chat.CompleteStream(ctx, connect.NewRequest(&parleyv1.CompleteStreamRequest{
				Model: req.Model, Messages: req.Messages, Tools: req.Tools, ToolChoice: req.ToolChoice}))
			if err != nil {
				t.Fatal(err)
			}
			var streamed parleyv1.ToolCall
			var fin *parleyv1.GenerationFinished
			for stream.Receive() {
				ev := stream.Msg().GetEvent()
				for _, d := range ev.GetDelta().GetToolCalls() {
					if d.GetId() != "" {
						streamed.Id, streamed.Name = d.GetId(), d.GetName()
					}
					streamed.Arguments += d.GetArguments()
				}
				if f := ev.GetFinished(); f != nil {
					fin = f
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if streamed.GetArguments() != call.GetArguments() || streamed.GetName() != call.GetName() ||
				fin.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_TOOL_CALLS || len(fin.GetChoices()) != 1 {
				t.Fatalf("streamed %v finished %v, whole %v", &streamed, fin, call)
			}

			// The result goes back; the answer is text that uses it.
			follow := append(req.Messages,
				&parleyv1.Message{Role: parleyv1.Role_ROLE_ASSISTANT, Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_ToolCall{ToolCall: call}}}},
				&parleyv1.Message{Role: parleyv1.Role_ROLE_TOOL, Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_ToolResult{
					ToolResult: &parleyv1.ToolResult{ToolCallId: call.GetId(), Content: `{"temperature": 18}`}}}}})
			res, err = c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: follow, Tools: []*parleyv1.Tool{tool}}))
			if err != nil {
				t.Fatal(err)
			}
			text := res.Msg.GetMessage().GetParts()[0].GetText()
			if res.Msg.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_STOP || !strings.Contains(text, `{"temperature": 18}`) {
				t.Fatalf("follow-up %v", res.Msg)
			}
			// Tools count toward the prompt.
			plain, err := c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: req.Messages, MaxOutputTokens: 5}))
			if err != nil {
				t.Fatal(err)
			}
			if m.GetUsage().GetPromptTokens() < plain.Msg.GetUsage().GetPromptTokens()+30 {
				t.Fatalf("prompt with a tool %d tokens, without %d", m.GetUsage().GetPromptTokens(), plain.Msg.GetUsage().GetPromptTokens())
			}
		})
	}

	// The SSE adapter carries the same events as protojson.
	t.Run("sse", func(t *testing.T) {
		body, _ := protojson.Marshal(&parleyv1.CompleteStreamRequest{Model: "sim-small", Messages: userText("Weather in Paris?"),
			Tools: []*parleyv1.Tool{tool}, ToolChoice: &parleyv1.ToolChoice{Mode: parleyv1.ToolChoiceMode_TOOL_CHOICE_MODE_FUNCTION, FunctionName: "get_weather"}})
		req, _ := http.NewRequest("POST", s.BaseURL+"/sse/parley.v1.ChatService/CompleteStream", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+a.Key)
		res, err := h1Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var args strings.Builder
		finished := false
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var msg parleyv1.CompleteStreamResponse
			if err := protojson.Unmarshal([]byte(data), &msg); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			for _, d := range msg.GetEvent().GetDelta().GetToolCalls() {
				args.WriteString(d.GetArguments())
			}
			if msg.GetEvent().GetFinished().GetFinishReason() == parleyv1.FinishReason_FINISH_REASON_TOOL_CALLS {
				finished = true
			}
		}
		var parsed map[string]any
		if !finished || json.Unmarshal([]byte(args.String()), &parsed) != nil {
			t.Fatalf("sse: finished %v, arguments %q", finished, args.String())
		}

		// A reconnect with Last-Event-ID cannot start a second billed run.
		req, _ = http.NewRequest("POST", s.BaseURL+"/sse/parley.v1.ChatService/CompleteStream", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+a.Key)
		req.Header.Set("Last-Event-ID", "3")
		res2, err := h1Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res2.Body)
		res2.Body.Close()
		if res2.StatusCode != 400 || !strings.Contains(string(b), "cannot resume") {
			t.Fatalf("Last-Event-ID on CompleteStream: %d %s", res2.StatusCode, b)
		}
	})

	t.Run("bad tools name the field", func(t *testing.T) {
		c := s.api(protocols[0], cred{bearer: a.Key})
		for _, tc := range []struct {
			req   *parleyv1.CompleteRequest
			field string
			code  connect.Code
		}{
			{&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("x"), Tools: []*parleyv1.Tool{{Name: "bad name"}}}, "tools[0].name", connect.CodeInvalidArgument},
			{&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("x"), Tools: []*parleyv1.Tool{tool, tool}}, "tools[1].name", connect.CodeInvalidArgument},
			{&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("x"), Tools: []*parleyv1.Tool{tool},
				ToolChoice: &parleyv1.ToolChoice{Mode: parleyv1.ToolChoiceMode_TOOL_CHOICE_MODE_FUNCTION, FunctionName: "nope"}}, "tool_choice", connect.CodeInvalidArgument},
			{&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("x"), N: 9}, "n", connect.CodeInvalidArgument},
			{&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("x"), TopLogprobs: 3}, "top_logprobs", connect.CodeInvalidArgument},
			{&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("x"), Stop: []string{strings.Repeat("s", 65)}}, "stop[0]", connect.CodeInvalidArgument},
			{&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("x"), User: strings.Repeat("u", 257)}, "user", connect.CodeInvalidArgument},
			{&parleyv1.CompleteRequest{Model: "sim-small", Messages: []*parleyv1.Message{{Role: parleyv1.Role_ROLE_TOOL, Parts: textPart("x")}}}, "messages[0].parts[0]", connect.CodeInvalidArgument},
			{&parleyv1.CompleteRequest{Model: "nope", Messages: userText("x")}, "model", connect.CodeNotFound},
		} {
			_, err := c.Chat.Complete(ctxTimeout(t, 10*time.Second), connect.NewRequest(tc.req))
			var fv parleyv1.FieldViolation
			if connect.CodeOf(err) != tc.code || !detailOf(err, &fv) || fv.GetField() != tc.field {
				t.Errorf("%v (field %q), want %v naming %q", err, fv.GetField(), tc.code, tc.field)
			}
		}
	})
}

// The OpenAI surface: tool calls in OpenAI's exact shapes, structured
// output, n, logprobs, and the compatibility rules the SDKs depend on.
func TestOpenAIToolsAndHygiene(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "oai-tools@example.com")
	s.topup(t, a, "10")
	broke := s.newAccount(t, "oai-broke@example.com")
	do := func(method, path, body, key string) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, s.BaseURL+path, strings.NewReader(body))
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
	const tools = `"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}}]`

	t.Run("tool call and its result", func(t *testing.T) {
		res, body := do("POST", "/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"Weather in Paris? use get_weather"}],`+tools+`}`, a.Key)
		var out struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason string `json:"finish_reason"`
			}
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &out) != nil || out.Choices[0].FinishReason != "tool_calls" ||
			out.Choices[0].Message.Content != nil || len(out.Choices[0].Message.ToolCalls) != 1 || out.Choices[0].Message.ToolCalls[0].Type != "function" {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		call := out.Choices[0].Message.ToolCalls[0]
		callJSON, _ := json.Marshal(call)
		res, body = do("POST", "/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"Weather in Paris? use get_weather"},
			{"role":"assistant","content":null,"tool_calls":[`+string(callJSON)+`]},
			{"role":"tool","tool_call_id":"`+call.ID+`","content":"sunny, 21C"}],`+tools+`}`, a.Key)
		if res.StatusCode != 200 || !strings.Contains(string(body), `"finish_reason":"stop"`) || !strings.Contains(string(body), "sunny, 21C") {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	})

	t.Run("streamed tool call deltas", func(t *testing.T) {
		res, body := do("POST", "/v1/chat/completions", `{"model":"sim-small","stream":true,"tool_choice":"required","messages":[{"role":"user","content":"hi"}],`+tools+`}`, a.Key)
		if res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		var args strings.Builder
		first := true
		finish := ""
		for line := range strings.Lines(string(body)) {
			data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var chunk struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							Index    *int   `json:"index"`
							ID       string `json:"id"`
							Type     string `json:"type"`
							Function struct {
								Name      string  `json:"name"`
								Arguments *string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				t.Fatal(err)
			}
			for _, c := range chunk.Choices {
				for _, tc := range c.Delta.ToolCalls {
					if tc.Index == nil || *tc.Index != 0 || tc.Function.Arguments == nil {
						t.Fatalf("tool call delta without index or arguments: %s", data)
					}
					if first != (tc.ID != "") || first != (tc.Type == "function") || first != (tc.Function.Name == "get_weather") {
						t.Fatalf("only the first piece has id, type and name: %s", data)
					}
					first = false
					args.WriteString(*tc.Function.Arguments)
				}
				if c.FinishReason != nil {
					finish = *c.FinishReason
				}
			}
		}
		var parsed map[string]any
		if finish != "tool_calls" || json.Unmarshal([]byte(args.String()), &parsed) != nil || parsed["location"] == nil {
			t.Fatalf("finish %q arguments %q", finish, args.String())
		}
	})

	t.Run("json_schema, n and logprobs", func(t *testing.T) {
		res, body := do("POST", "/v1/chat/completions", `{"model":"sim-small","n":2,"logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"hi"}],
			"response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"},"population":{"type":"integer","minimum":1}},"required":["name","population"],"additionalProperties":false}}}}`, a.Key)
		var out struct {
			Choices []struct {
				Index    int
				Message  struct{ Content string }
				Logprobs struct {
					Content []struct {
						Token       string
						Logprob     float64
						TopLogprobs []struct{ Token string } `json:"top_logprobs"`
					}
				}
			}
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &out) != nil || len(out.Choices) != 2 || out.Choices[1].Index != 1 {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		for _, c := range out.Choices {
			var city struct {
				Name       string
				Population int
			}
			if err := json.Unmarshal([]byte(c.Message.Content), &city); err != nil || city.Name == "" || city.Population < 1 {
				t.Fatalf("choice %d content %q: %v", c.Index, c.Message.Content, err)
			}
			if len(c.Logprobs.Content) == 0 || len(c.Logprobs.Content[0].TopLogprobs) != 2 || c.Logprobs.Content[0].Logprob > 0 {
				t.Fatalf("logprobs %+v", c.Logprobs)
			}
		}
	})

	t.Run("models retrieve and unknown paths", func(t *testing.T) {
		res, body := do("GET", "/v1/models/sim-small", "", a.Key)
		if res.StatusCode != 200 || !strings.Contains(string(body), `"id":"sim-small"`) || !strings.Contains(string(body), `"object":"model"`) {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		res, body = do("GET", "/v1/models/nope", "", a.Key)
		if res.StatusCode != 404 || !strings.Contains(string(body), `"code":"model_not_found"`) {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		for _, path := range []string{"/v1/nope", "/v1/assistants", "/v1/files/abc"} {
			res, body = do("GET", path, "", a.Key)
			if res.StatusCode != 404 || res.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"error"`) {
				t.Fatalf("%s: %d %s", path, res.StatusCode, body)
			}
		}
		res, body = do("POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, a.Key)
		if res.StatusCode != 404 || !strings.Contains(string(body), `"param":"model"`) || !strings.Contains(string(body), "model_not_found") {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
	})

	t.Run("insufficient quota is not retried", func(t *testing.T) {
		res, body := do("POST", "/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"x"}]}`, broke.Key)
		if res.StatusCode != 429 || res.Header.Get("X-Should-Retry") != "false" || !strings.Contains(string(body), "insufficient_quota") {
			t.Fatalf("%d %v %s", res.StatusCode, res.Header, body)
		}
	})

	t.Run("harmless defaults are accepted, the rest refused by name", func(t *testing.T) {
		for _, extra := range []string{`"tools":[]`, `"tools":null`, `"store":false`, `"metadata":{"a":"b"}`, `"parallel_tool_calls":true`,
			`"logprobs":false`, `"n":1`, `"stream_options":{"include_usage":true}`, `"presence_penalty":0`, `"tool_choice":"none"`} {
			res, body := do("POST", "/v1/chat/completions", `{"model":"sim-small","max_tokens":3,"messages":[{"role":"user","content":"x"}],`+extra+`}`, a.Key)
			if res.StatusCode != 200 {
				t.Fatalf("%s: %d %s", extra, res.StatusCode, body)
			}
		}
		for _, tc := range []struct{ extra, param string }{
			{`"store":true`, "store"}, {`"logit_bias":{"1":5}`, "logit_bias"}, {`"audio":{}`, "audio"},
			{`"max_tokens":100000`, "max_tokens"}, {`"max_completion_tokens":-1`, "max_completion_tokens"},
			{`"tools":[{"type":"function","function":{"name":"a b"}}]`, "tools[0].function.name"},
			{`"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`, "response_format.json_schema.schema"},
			{`"stop":["` + strings.Repeat("s", 65) + `"]`, "stop[0]"},
		} {
			res, body := do("POST", "/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"x"}],`+tc.extra+`}`, a.Key)
			if res.StatusCode != 400 || !strings.Contains(string(body), `"param":"`+tc.param+`"`) {
				t.Fatalf("%s: %d %s, want 400 naming %s", tc.extra, res.StatusCode, body, tc.param)
			}
		}
	})
}

// With --openai-unsupported=drop, fields Parley cannot honour are dropped
// and counted instead of refused.
func TestOpenAIUnsupportedDrop(t *testing.T) {
	s := startServer(t, append([]string{"--openai-unsupported", "drop"}, fastAuth...)...)
	a := s.newAccount(t, "drop@example.com")
	s.topup(t, a, "1")
	req, _ := http.NewRequest("POST", s.BaseURL+"/v1/chat/completions", strings.NewReader(
		`{"model":"sim-small","max_tokens":3,"messages":[{"role":"user","content":"x"}],"logit_bias":{"1":5},"audio":{"voice":"x"}}`))
	req.Header.Set("Authorization", "Bearer "+a.Key)
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	res, err = h1Client().Get(s.BaseURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(metrics), `parley_openai_dropped_params_total{field="logit_bias"} 1`) ||
		!strings.Contains(string(metrics), `parley_openai_dropped_params_total{field="audio"} 1`) {
		t.Fatalf("metrics:\n%s", grepLines(metrics, "dropped"))
	}
}
