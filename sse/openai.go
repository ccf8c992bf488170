package sse

import "encoding/json"

// ChatCompletionChunk is one "data:" payload of an OpenAI streaming chat
// completion (object "chat.completion.chunk"). With stream_options.include_usage
// the last chunk has no choices and carries Usage.
type ChatCompletionChunk struct {
	ID                string      `json:"id"`
	Object            string      `json:"object"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	SystemFingerprint string      `json:"system_fingerprint,omitempty"`
	Choices           []Choice    `json:"choices"`
	Usage             *ChunkUsage `json:"usage,omitempty"`
}

// ChatCompletion is the body of a non-streaming OpenAI chat completion (object
// "chat.completion").
type ChatCompletion struct {
	ID                string      `json:"id"`
	Object            string      `json:"object"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	SystemFingerprint string      `json:"system_fingerprint,omitempty"`
	Choices           []Choice    `json:"choices"`
	Usage             *ChunkUsage `json:"usage,omitempty"`
}

// Choice is one alternative of a completion: Delta in a chunk, Message in a whole
// completion. FinishReason stays null until the choice ends ("stop", "length",
// "content_filter", "tool_calls").
type Choice struct {
	Index        int      `json:"index"`
	Delta        *Delta   `json:"delta,omitempty"`
	Message      *Message `json:"message,omitempty"`
	FinishReason *string  `json:"finish_reason"`
}

// Delta is the part of the assistant message a chunk adds.
type Delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
	// ReasoningContent is the reasoning text some servers (vLLM, SGLang, DeepSeek)
	// stream beside the answer.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Refusal          string `json:"refusal,omitempty"`
}

// Message is the assistant message of a whole completion.
type Message struct {
	Role             string `json:"role"`
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Refusal          string `json:"refusal,omitempty"`
}

// ChunkUsage is a completion's token usage: the last chunk of a stream (with
// include_usage) or the usage of a whole completion.
type ChunkUsage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails breaks down the prompt tokens; CachedTokens are those served
// from the prefix cache.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionTokensDetails breaks down the completion tokens.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// ErrorResponse is the body of an OpenAI error (and, as a data payload, of an
// error inside a stream).
type ErrorResponse struct {
	Error Error `json:"error"`
}

// Error describes what went wrong: Type names the class
// ("invalid_request_error", "rate_limit_exceeded", ...), Param the request field at
// fault, Code a machine-readable code.
type Error struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// UnmarshalJSON accepts a numeric code too, as vLLM and others send ("code": 400).
func (e *Error) UnmarshalJSON(b []byte) error {
	type plain Error
	var v struct {
		plain
		Code json.RawMessage `json:"code"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Error(v.plain)
	e.Code = nil
	switch {
	case len(v.Code) == 0 || string(v.Code) == "null":
	case v.Code[0] == '"':
		var s string
		if err := json.Unmarshal(v.Code, &s); err != nil {
			return err
		}
		e.Code = &s
	default:
		var n json.Number
		if err := json.Unmarshal(v.Code, &n); err != nil {
			return err
		}
		s := n.String()
		e.Code = &s
	}
	return nil
}
