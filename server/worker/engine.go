// Package worker is the generation plane's side of a GPU worker: the Engine
// interface that the sim and the OpenAI-compatible upstream implement, over
// the domain types of package llm. The gRPC WorkerService adapts an Engine to
// the wire (Server), and Remote is its client.
package worker

import (
	"context"
	"time"

	"github.com/parleyhq/parley/server/llm"
)

// LoadReport is a worker's load as the scheduler sees it: sequences decoding
// (Running) and queued (Waiting) against MaxBatch slots, requests in flight, and
// KV-cache use in tokens.
type LoadReport struct {
	Models                         []string
	Running, Waiting, MaxBatch     int
	InFlight                       int
	KVUsedTokens, KVCapacityTokens int64
	// Lag is how late the worker process lately ran what was ready to run
	// (0: not reported).
	Lag time.Duration
}

// ModelInfo describes a model an engine serves. Simulated models say so in
// DisplayName and Description, wherever a person sees them.
type ModelInfo struct {
	ID, DisplayName, Description   string
	Simulated                      bool
	ContextWindow, MaxOutputTokens int
}

// Engine is a GPU inference backend: the sim or an OpenAI-compatible upstream.
type Engine interface {
	// Models lists the models the engine serves.
	Models() []ModelInfo
	// Generate runs one generation, calling emit for each delta as it
	// is made; emit errors or ctx cancellation stop it (FinishReason cancelled, usage
	// so far). It returns an error, wrapping llm.ErrUnknownModel or
	// llm.ErrInvalidRequest where one applies, only when generation could not start; once started, how it
	// ended is in the Result. req is read, never changed: the scheduler may
	// retry it on another engine. (It is a pointer so that no copy of it sits
	// in the frames an open stream keeps on its stack.)
	Generate(ctx context.Context, req *llm.Request, emit llm.Emit) (llm.Result, error)
	// Embed returns one unit vector per input; it fails (llm.ErrUnknownModel,
	// llm.ErrInvalidRequest, or the backend's error) as a whole.
	Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResult, error)
	// Load reports the engine's current load.
	Load() LoadReport
	// LoadChanged returns a channel that is closed the next time the load changes
	// (then call again).
	LoadChanged() <-chan struct{}
}
