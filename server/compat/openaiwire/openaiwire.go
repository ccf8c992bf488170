// Package openaiwire holds the wire types of OpenAI's chat completions API:
// the chunks and whole completions the gateway's OpenAI-compatible surface
// writes (server/compat) and the worker's OpenAI engine reads from an
// upstream (server/worker/openai), and the error body both exchange. It
// imports nothing of Parley, so the engine does not pull in the surfaces.
package openaiwire

import (
	"encoding/binary"
	"encoding/json"
	"math"
)

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
	Index        int       `json:"index"`
	Delta        *Delta    `json:"delta,omitempty"`
	Message      *Message  `json:"message,omitempty"`
	Logprobs     *Logprobs `json:"logprobs,omitempty"`
	FinishReason *string   `json:"finish_reason"`
}

// ToolCall is a tool call in a message, or a piece of one in a delta: in a
// stream the first piece of the call at Index has ID, Type and the function's
// name, later pieces more of its arguments.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a ToolCall calls and its arguments (a JSON
// object as text, or a piece of it).
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Logprobs are a choice's token log probabilities.
type Logprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is one token's log probability, its UTF-8 bytes, and the most
// likely tokens at its position.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one likely token at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// Delta is the part of the assistant message a chunk adds.
type Delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
	// ReasoningContent is the reasoning text some servers (vLLM, SGLang, DeepSeek)
	// stream beside the answer.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// Reasoning is the same under the name newer vLLM releases use (read
	// only; Parley writes reasoning_content).
	Reasoning string     `json:"reasoning,omitempty"`
	Refusal   string     `json:"refusal,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Message is the assistant message of a whole completion. Content is null
// when the message is only tool calls.
type Message struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	Refusal          *string    `json:"refusal"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
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

// PackFloats is v as little-endian float32 bytes: the packed form of an
// embedding (OpenAI's encoding_format base64, before the base64).
func PackFloats(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}
