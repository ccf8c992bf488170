package openaiwire

import (
	"encoding/json"
	"testing"
)

func TestChunkWire(t *testing.T) {
	stop := "stop"
	chunk := ChatCompletionChunk{
		ID: "chatcmpl-1", Object: "chat.completion.chunk", Created: 1700000000, Model: "sim-small",
		Choices: []Choice{{Index: 0, Delta: &Delta{Content: "Hi"}, FinishReason: &stop}},
	}
	b, err := json.Marshal(chunk)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"sim-small","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestUsageChunkFromUpstream(t *testing.T) {
	const in = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],
		"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,
		"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":0}}}`
	var c ChatCompletionChunk
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if c.Usage == nil || c.Usage.PromptTokens != 1200 || c.Usage.PromptTokensDetails.CachedTokens != 1024 {
		t.Fatalf("usage = %+v", c.Usage)
	}
	const nullUsage = `{"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}],"usage":null}`
	if err := json.Unmarshal([]byte(nullUsage), &c); err != nil {
		t.Fatal(err)
	}
	if c.Usage != nil || c.Choices[0].FinishReason != nil || c.Choices[0].Delta.Role != "assistant" {
		t.Fatalf("chunk = %+v", c)
	}
}

func TestErrorResponse(t *testing.T) {
	b, err := json.Marshal(ErrorResponse{Error: Error{Message: "bad", Type: "invalid_request_error"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`; string(b) != want {
		t.Fatalf("got %s", b)
	}
	for in, code := range map[string]string{
		`{"error":{"message":"m","type":"t","param":"model","code":"model_not_found"}}`: "model_not_found",
		`{"error":{"message":"m","type":"BadRequestError","param":null,"code":400}}`:    "400",
	} {
		var e ErrorResponse
		if err := json.Unmarshal([]byte(in), &e); err != nil {
			t.Fatal(err)
		}
		if e.Error.Code == nil || *e.Error.Code != code || e.Error.Message != "m" {
			t.Fatalf("%s → %+v", in, e.Error)
		}
	}
	var e ErrorResponse
	if err := json.Unmarshal([]byte(`{"error":{"message":"m","code":null}}`), &e); err != nil || e.Error.Code != nil {
		t.Fatalf("null code → %+v, %v", e.Error, err)
	}
}
