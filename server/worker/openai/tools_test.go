package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/worker/openai"
)

// vLLM's exact stream for two parallel tool calls (its hermes/llama3 tool
// parsers): a role chunk, then per call a first piece with id, type and name
// and empty arguments, the arguments split across chunks, a finish chunk
// with "tool_calls", and the usage chunk last.
var vllmToolStream = []string{
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"llama-3-8b","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"llama-3-8b","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-a1","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"llama-3-8b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\": \"Pa"}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"llama-3-8b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ris\"}"}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"llama-3-8b","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-b2","type":"function","index":1,"function":{"name":"get_time","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"llama-3-8b","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"llama-3-8b","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"tool_calls","stop_reason":128008}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"llama-3-8b","choices":[],"usage":{"prompt_tokens":310,"total_tokens":338,"completion_tokens":28}}`,
	`[DONE]`,
}

func TestToolCallsFromVLLM(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { stream(w, vllmToolStream...) })
	e := newEngine(t, u, openai.Config{MetricsURL: "-"})
	req := request(llm.Part{Text: "Weather and time in Paris?"})
	parallel := true
	req.Tools = []llm.Tool{
		{Name: "get_weather", Description: "Weather", Parameters: []byte(`{"type":"object","properties":{"location":{"type":"string"}}}`)},
		{Name: "get_time", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`), Strict: true},
	}
	req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceRequired}
	req.ParallelToolCalls = &parallel
	req.ResponseFormat = llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "x", Schema: []byte(`{"type":"object"}`)}
	req.Messages = append(req.Messages,
		llm.ChatMessage{Role: "assistant", Parts: []llm.Part{{ToolCall: &llm.ToolCall{ID: "c0", Name: "get_time", Arguments: `{}`}}}},
		llm.ChatMessage{Role: "tool", Parts: []llm.Part{{ToolResult: &llm.ToolResult{ToolCallID: "c0", Content: "noon"}}}},
		llm.ChatMessage{Role: "user", Parts: []llm.Part{{Text: "Again"}}})

	var calls []llm.ToolCall
	pieces := 0
	res, err := e.Generate(t.Context(), &req, func(d llm.Delta) error {
		for _, c := range d.ToolCalls {
			pieces++
			for len(calls) <= c.Index {
				calls = append(calls, llm.ToolCall{})
			}
			if c.ID != "" {
				calls[c.Index].ID, calls[c.Index].Name = c.ID, c.Name
			}
			calls[c.Index].Arguments += c.Arguments
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "chatcmpl-tool-a1", Name: "get_weather", Arguments: `{"location": "Paris"}`},
		{ID: "chatcmpl-tool-b2", Name: "get_time", Arguments: `{"city": "Paris"}`},
	}
	if !reflect.DeepEqual(calls, want) || pieces != 5 {
		t.Fatalf("calls %+v in %d pieces, want %+v in 5", calls, pieces, want)
	}
	if res.FinishReason != llm.FinishToolCalls || res.Usage.PromptTokens != 310 || res.Usage.CompletionTokens != 28 || res.Usage.Estimated {
		t.Fatalf("result %+v", res)
	}

	// What went upstream: OpenAI's own shapes.
	body, _ := json.Marshal(u.lastBody())
	var sent struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
				Strict     bool           `json:"strict"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice        any  `json:"tool_choice"`
		ParallelToolCalls bool `json:"parallel_tool_calls"`
		ResponseFormat    struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name, Arguments string
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Tools) != 2 || sent.Tools[0].Type != "function" || sent.Tools[0].Function.Name != "get_weather" ||
		sent.Tools[0].Function.Parameters["type"] != "object" || !sent.Tools[1].Function.Strict ||
		sent.ToolChoice != "required" || !sent.ParallelToolCalls ||
		sent.ResponseFormat.Type != "json_schema" || sent.ResponseFormat.JSONSchema.Name != "x" {
		t.Fatalf("upstream body %s", body)
	}
	asst, tool := sent.Messages[2], sent.Messages[3]
	if asst.Role != "assistant" || asst.Content != nil || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != "c0" ||
		asst.ToolCalls[0].Type != "function" || asst.ToolCalls[0].Function.Name != "get_time" ||
		tool.Role != "tool" || tool.ToolCallID != "c0" || tool.Content != "noon" {
		t.Fatalf("history sent upstream %s", body)
	}
}

func TestSeveralChoicesAndLogprobsFromUpstream(t *testing.T) {
	chunk := func(i int, content, lp string) string {
		return `{"id":"c","object":"chat.completion.chunk","model":"llama-3-8b","choices":[{"index":` + string(rune('0'+i)) +
			`,"delta":{"content":"` + content + `"},"logprobs":{"content":[` + lp + `]},"finish_reason":null}]}`
	}
	lp := func(tok string) string {
		return `{"token":"` + tok + `","logprob":-0.5,"bytes":[` + "104" + `],"top_logprobs":[{"token":"` + tok + `","logprob":-0.5,"bytes":[104]}]}`
	}
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		stream(w,
			chunk(0, "h", lp("h")), chunk(1, "h", lp("h")), chunk(1, "i", lp("i")),
			`{"id":"c","object":"chat.completion.chunk","model":"llama-3-8b","choices":[{"index":1,"delta":{},"finish_reason":"length"}]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"llama-3-8b","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`[DONE]`)
	})
	e := newEngine(t, u, openai.Config{MetricsURL: "-"})
	req := request()
	req.N, req.Logprobs, req.TopLogprobs = 2, true, 1
	texts := map[int]string{}
	finishes := map[int]llm.FinishReason{}
	lps := 0
	res, err := e.Generate(t.Context(), &req, func(d llm.Delta) error {
		texts[d.Choice] += d.Text
		lps += len(d.Logprobs)
		if d.Finish != "" {
			finishes[d.Choice] = d.Finish
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if texts[0] != "h" || texts[1] != "hi" || lps != 3 || finishes[0] != llm.FinishStop || finishes[1] != llm.FinishLength ||
		res.FinishReason != llm.FinishStop || res.Usage.CompletionTokens != 3 {
		t.Fatalf("texts %v finishes %v logprobs %d result %+v", texts, finishes, lps, res)
	}
	body := u.lastBody()
	if body["n"] != float64(2) || body["logprobs"] != true || body["top_logprobs"] != float64(1) {
		t.Fatalf("upstream body %v", body)
	}
}

func TestEmbeddingsFromUpstream(t *testing.T) {
	u := newUpstream(t, nil)
	var got map[string]any
	u.mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		// One vector as base64 (what Parley asks for), one as numbers (what some
		// servers send regardless), out of order.
		_, _ = w.Write([]byte(`{"object":"list","model":"llama-3-8b","data":[
			{"object":"embedding","index":1,"embedding":[0.6,0.8]},
			{"object":"embedding","index":0,"embedding":"AACAPwAAAAA="}],"usage":{"prompt_tokens":7,"total_tokens":7}}`))
	})
	e := newEngine(t, u, openai.Config{MetricsURL: "-"})
	res, err := e.Embed(t.Context(), llm.EmbedRequest{Model: "llama-3-8b", Inputs: []string{"a", "b"}, Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Vectors, [][]float32{{1, 0}, {0.6, 0.8}}) || res.Usage.PromptTokens != 7 || res.Usage.Estimated {
		t.Fatalf("%+v", res)
	}
	if got["encoding_format"] != "base64" || got["dimensions"] != float64(2) || len(got["input"].([]any)) != 2 {
		t.Fatalf("sent %v", got)
	}
	if _, err := e.Embed(t.Context(), llm.EmbedRequest{Model: "nope", Inputs: []string{"a"}}); !errors.Is(err, llm.ErrUnknownModel) {
		t.Fatalf("unknown model: %v", err)
	}
}

func TestEmbeddingsUpstreamRefusal(t *testing.T) {
	u := newUpstream(t, nil)
	u.mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"input too long","type":"invalid_request_error","code":400}}`))
	})
	e := newEngine(t, u, openai.Config{MetricsURL: "-"})
	_, err := e.Embed(t.Context(), llm.EmbedRequest{Model: "llama-3-8b", Inputs: []string{"a"}})
	if !errors.Is(err, llm.ErrInvalidRequest) || !strings.Contains(err.Error(), "input too long") {
		t.Fatalf("%v", err)
	}
}
