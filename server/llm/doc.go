// Package llm is the domain of a generation: the plain Go types that the
// engines, the chat core, the store and the API surfaces share, and nothing
// of how any of them does its work.
//
// A generation is a Request — a conversation of ChatMessages, each a list of
// Parts (text, an Image, a Document, a ToolCall or a ToolResult), with the
// sampling settings, Tools, a ToolChoice and a ResponseFormat. Its output
// arrives as Deltas passed to an Emit callback, and ends with a Result: a
// FinishReason and the Usage. EmbedRequest and EmbedResult are the same for
// embeddings. A Job is a Request with the hints that place it on a worker (a
// priority and an affinity key). The sentinel errors (ErrUnknownModel,
// ErrInvalidRequest, ErrOverloaded, ErrUpstreamTimeout) are how an engine says
// why a generation could not start.
//
// The prompt layout is here too (RequestPromptIDs, RequestPromptTokens,
// RequestPromptBound, ImageTokens), so that the gateway's count of a prompt's
// tokens and the sim's prompt come from one rendering; it takes any
// Tokenizer.
//
// The package imports nothing of Parley: the engine interface, the wire
// client and server live in package worker, placement in package scheduler,
// and the core in package chat, all on top of these types. A test keeps it a
// leaf.
package llm
