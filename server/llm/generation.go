package llm

import (
	"errors"
	"syscall"
)

// Delta is one step of one choice's output: text, pieces of tool calls, and
// the log probabilities of the tokens it holds.
type Delta struct {
	// Choice is the choice's index (0 unless the request asked for N > 1).
	Choice int
	// Text is more answer text (may be empty when the delta carries a call
	// or reasoning).
	Text string
	// Reasoning is more of the model's reasoning, which some models (those
	// the catalog lists with the reasoning capability) write before or
	// between their answer's text; it is not part of the answer.
	Reasoning string
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

// Errors an Engine returns from Generate when the backend behind it refused or
// failed before generation started; the scheduler reads them to decide between
// giving up, trying another worker, and ejecting this one.
var (
	// ErrOverloaded: the engine or its upstream is full (HTTP 429 upstream, or a
	// worker's resource_exhausted); another worker may take the request, and this
	// one is not at fault.
	ErrOverloaded = errors.New("worker: overloaded")
	// ErrUpstreamTimeout: the upstream sent nothing within its timeout.
	ErrUpstreamTimeout = errors.New("worker: upstream timed out")
)

// CallerFault reports whether err, returned by Generate before generation began,
// is the request's fault (retrying it anywhere would fail the same way).
func CallerFault(err error) bool {
	return errors.Is(err, ErrInvalidRequest)
}

// LocalFault reports whether err is this process running out of what a
// call needs — file descriptors (EMFILE, ENFILE), socket buffers, memory —
// before the other end was reached: the upstream is not to blame, and
// another would fail the same way until some are freed.
func LocalFault(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Priorities of the web tiers, higher first; the API channel's is configured
// among them.
const (
	PriorityFree = 0
	PriorityPlus = 1
	PriorityPro  = 2
	PriorityMax  = 3
	// PriorityBackground is work no one waits on (a file's ingestion):
	// below every tier, and the first pushed out of a full queue.
	PriorityBackground = -1
	// PriorityIdle is work that runs only on idle capacity (a batch's
	// lines): it never waits in a queue, and takes a worker only when one
	// has free slots beyond a reserve kept for interactive arrivals and no
	// job of its model is waiting; otherwise it is refused at once
	// (ErrNoIdleCapacity), for its caller to try again later.
	PriorityIdle = -2
)

// ErrNoIdleCapacity refuses a PriorityIdle job: no worker has capacity to
// spare for it now.
var ErrNoIdleCapacity = errors.New("no idle capacity")

// Job is one generation to place on a worker: the request, its priority
// (higher first: PriorityMax > PriorityPro > PriorityPlus > PriorityFree, the
// API's from configuration) and its affinity key (the conversation id on the
// web, a hash of the prompt's first ~1,000 tokens on the API; empty: no
// affinity).
type Job struct {
	Request     Request
	Priority    int
	AffinityKey string
}
