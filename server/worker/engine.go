// Package worker is the generation plane's side of a GPU worker: the Engine
// interface that the sim and the OpenAI-compatible upstream implement, and the
// plain Go types it speaks. The gRPC WorkerService adapts an Engine to the wire.
package worker

import (
	"context"
	"errors"
)

// Request is one generation: a chat to continue with one assistant message.
type Request struct {
	// ID identifies the request in logs; engines do not interpret it.
	ID    string
	Model string
	// Messages are the conversation so far, oldest first.
	Messages []ChatMessage
	// MaxTokens bounds the completion; zero means the model's MaxOutputTokens.
	MaxTokens int
	// Temperature and TopP are sampling settings; nil means the engine's default.
	Temperature, TopP *float64
	// Stop ends the completion before the first occurrence of any of these strings.
	Stop []string
	// Seed makes sampling repeatable where the engine supports it.
	Seed *int64

	// Tools are the functions the model may call; ToolChoice says whether it
	// must, may or must not (the zero value: auto when Tools is set).
	Tools      []Tool
	ToolChoice ToolChoice
	// ParallelToolCalls, when false, allows at most one call per answer; nil
	// means the engine's default (several allowed).
	ParallelToolCalls *bool
	// ResponseFormat constrains the answer's text (the zero value: free text).
	ResponseFormat ResponseFormat
	// N is the number of choices to generate (0 and 1: one).
	N int
	// Logprobs asks for each output token's log probability, with the
	// TopLogprobs most likely alternatives (0–20).
	Logprobs    bool
	TopLogprobs int
}

// Choices is the number of choices req asks for: N, at least 1.
func (req *Request) Choices() int { return max(req.N, 1) }

// Tool is a function the model may call: its name, what it does, and its
// parameters as a JSON Schema (raw JSON, passed on unchanged).
type Tool struct {
	Name, Description string
	Parameters        []byte
	// Strict asks the engine to follow Parameters exactly.
	Strict bool
}

// ToolChoiceMode says whether the model calls a tool.
type ToolChoiceMode string

// The tool choice modes, as OpenAI names them.
const (
	ToolChoiceAuto     ToolChoiceMode = "" // the model decides (the default)
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceFunction: the model must call ToolChoice.Function.
	ToolChoiceFunction ToolChoiceMode = "function"
)

// ToolChoice is a request's tool choice: a mode and, for ToolChoiceFunction,
// the function's name.
type ToolChoice struct {
	Mode     ToolChoiceMode
	Function string
}

// ResponseFormatType is the kind of text an answer must be.
type ResponseFormatType string

// The response formats, as OpenAI names them.
const (
	FormatText       ResponseFormatType = "" // free text (the default)
	FormatJSONObject ResponseFormatType = "json_object"
	FormatJSONSchema ResponseFormatType = "json_schema"
)

// ResponseFormat constrains an answer's text: any JSON object, or JSON valid
// against Schema (raw JSON).
type ResponseFormat struct {
	Type   ResponseFormatType
	Name   string
	Schema []byte
	Strict bool
}

// Delta is one step of one choice's output: text, pieces of tool calls, and
// the log probabilities of the tokens it holds.
type Delta struct {
	// Choice is the choice's index (0 unless the request asked for N > 1).
	Choice int
	// Text is more answer text (may be empty when the delta carries a call).
	Text string
	// Tokens is how many output tokens the delta is.
	Tokens int
	// ToolCalls are pieces of tool calls, in OpenAI's streamed form: the first
	// piece of a call has its ID and Name, later ones more Arguments.
	ToolCalls []ToolCallDelta
	// Logprobs are the log probabilities of the delta's tokens, when asked for.
	Logprobs []TokenLogprob
	// Finish, when set, ends this choice (requests with N > 1 get one per choice;
	// the Result has the last word for choice 0).
	Finish FinishReason
}

// ToolCallDelta is a piece of the Index-th tool call of a choice.
type ToolCallDelta struct {
	Index     int
	ID, Name  string
	Arguments string
}

// TokenLogprob is one output token's log probability and its most likely
// alternatives.
type TokenLogprob struct {
	Token   string
	Logprob float64
	Bytes   []byte
	Top     []TopLogprob
}

// TopLogprob is one alternative token at a position.
type TopLogprob struct {
	Token   string
	Logprob float64
	Bytes   []byte
}

// Emit receives a generation's deltas in order; an error stops the
// generation (FinishCancelled).
type Emit func(Delta) error

// ChatMessage is one turn of a conversation: a role ("system", "user",
// "assistant", "tool") and its content in order. An assistant message may
// hold tool calls; a "tool" message holds one tool result.
type ChatMessage struct {
	Role  string
	Parts []Part
}

// Part is one piece of a message's content; exactly one field is set.
type Part struct {
	Text       string
	Image      *Image
	Document   *Document
	ToolCall   *ToolCall
	ToolResult *ToolResult
}

// ToolCall is a call the model made: its id, the function's name and the
// arguments as a JSON object in a string.
type ToolCall struct {
	ID, Name, Arguments string
}

// ToolResult is the caller's answer to the tool call ToolCallID.
type ToolResult struct {
	ToolCallID, Content string
}

// Image is an image attached to a message, with its pixel size (used for token
// accounting even where the data is not sent).
type Image struct {
	Data          []byte
	MimeType      string
	Width, Height int
}

// Document is an attached document, already reduced to its text.
type Document struct {
	Filename, MimeType string
	Text               string
}

// Usage is the token accounting of one generation. CachedTokens are the prompt
// tokens served from the prefix cache; Estimated marks counts the engine made with
// the tokenizer because the backend reported none.
type Usage struct {
	PromptTokens, CompletionTokens, CachedTokens int
	Estimated                                    bool
}

// FinishReason says why a generation ended.
type FinishReason string

// The ways a generation ends.
const (
	// FinishStop: the model ended its answer or hit a stop string.
	FinishStop FinishReason = "stop"
	// FinishLength: the completion reached MaxTokens.
	FinishLength FinishReason = "length"
	// FinishCancelled: the caller's context ended or emit failed.
	FinishCancelled FinishReason = "cancelled"
	// FinishError: the engine failed after generation began.
	FinishError FinishReason = "error"
	// FinishToolCalls: the model called one or more tools.
	FinishToolCalls FinishReason = "tool_calls"
)

// Result is how a generation ended: the reason, the usage so far, and for a
// cancelled or error finish the cause.
type Result struct {
	FinishReason FinishReason
	Usage        Usage
	Err          error
}

// LoadReport is a worker's load as the scheduler sees it: sequences decoding
// (Running) and queued (Waiting) against MaxBatch slots, requests in flight, and
// KV-cache use in tokens.
type LoadReport struct {
	Models                         []string
	Running, Waiting, MaxBatch     int
	InFlight                       int
	KVUsedTokens, KVCapacityTokens int64
}

// ModelInfo describes a model an engine serves. Simulated models say so in
// DisplayName and Description, wherever a person sees them.
type ModelInfo struct {
	ID, DisplayName, Description   string
	Simulated                      bool
	ContextWindow, MaxOutputTokens int
}

// EmbedRequest is one batch of texts to embed.
type EmbedRequest struct {
	// ID identifies the request in logs.
	ID    string
	Model string
	// Inputs are the texts, in order.
	Inputs []string
	// Dimensions shortens the vectors (0: the model's full length).
	Dimensions int
}

// EmbedResult is one vector per input, and the tokens the inputs were.
type EmbedResult struct {
	Vectors [][]float32
	Usage   Usage
}

// Errors an Engine returns from Generate before generation starts.
var (
	// ErrUnknownModel: the engine does not serve Request.Model.
	ErrUnknownModel = errors.New("worker: unknown model")
	// ErrInvalidRequest: the request cannot be run as given (no messages, a
	// negative MaxTokens, a prompt past the context window).
	ErrInvalidRequest = errors.New("worker: invalid request")
)

// Engine is a GPU inference backend: the sim or an OpenAI-compatible upstream.
type Engine interface {
	// Models lists the models the engine serves.
	Models() []ModelInfo
	// Generate runs one generation, calling emit for each delta as it
	// is made; emit errors or ctx cancellation stop it (FinishReason cancelled, usage
	// so far). It returns an error, wrapping ErrUnknownModel or ErrInvalidRequest
	// where one applies, only when generation could not start; once started, how it
	// ended is in the Result.
	Generate(ctx context.Context, req Request, emit Emit) (Result, error)
	// Embed returns one unit vector per input; it fails (ErrUnknownModel,
	// ErrInvalidRequest, or the backend's error) as a whole.
	Embed(ctx context.Context, req EmbedRequest) (EmbedResult, error)
	// Load reports the engine's current load.
	Load() LoadReport
	// LoadChanged returns a channel that is closed the next time the load changes
	// (then call again).
	LoadChanged() <-chan struct{}
}
