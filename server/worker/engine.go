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
}

// ChatMessage is one turn of a conversation: a role ("system", "user",
// "assistant") and its content in order.
type ChatMessage struct {
	Role  string
	Parts []Part
}

// Part is one piece of a message's content; exactly one field is set.
type Part struct {
	Text     string
	Image    *Image
	Document *Document
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
	// Generate runs one generation, calling emit for each delta (text, tokens) as it
	// is made; emit errors or ctx cancellation stop it (FinishReason cancelled, usage
	// so far). It returns an error, wrapping ErrUnknownModel or ErrInvalidRequest
	// where one applies, only when generation could not start; once started, how it
	// ended is in the Result.
	Generate(ctx context.Context, req Request, emit func(text string, tokens int) error) (Result, error)
	// Load reports the engine's current load.
	Load() LoadReport
	// LoadChanged returns a channel that is closed the next time the load changes
	// (then call again).
	LoadChanged() <-chan struct{}
}
