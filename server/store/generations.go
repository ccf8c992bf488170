package store

import (
	"context"
	"time"
)

// Generations is the log of the web generations in progress, one per
// conversation, shared by every gateway: the gateway running a generation
// appends its events, and any gateway can replay and follow them or ask for
// the generation to be cancelled. Events are opaque bytes (the API's
// GenerationEvent, marshalled), numbered from 1.
type Generations interface {
	// Start claims the conversation for a new generation, starting an empty
	// log. It fails with ErrConflict while another generation is running
	// there; a finished one is replaced.
	Start(ctx context.Context, conversationID string) error
	// Append adds event number seq (1, 2, … in order) to a started log.
	Append(ctx context.Context, conversationID string, seq uint64, event []byte) error
	// Finish marks the log complete; it stays readable for linger, so a
	// follower that reconnects just after the end still gets it.
	Finish(ctx context.Context, conversationID string, linger time.Duration) error
	// Abandon removes a log that never got an event (refused before it ran).
	Abandon(ctx context.Context, conversationID string) error
	// Follow calls fn with each event after afterSeq, then with each new one
	// as it is appended, until the log is finished (nil), fn fails or ctx
	// ends (their error). It fails with ErrNotFound when the conversation
	// has no log.
	Follow(ctx context.Context, conversationID string, afterSeq uint64, fn func(seq uint64, event []byte) error) error
	// Keep renews a running generation's claim. The gateway running it
	// calls it every few seconds, so the claim of a gateway that died lapses
	// soon after (where claims expire) and the conversation is free again.
	// Keeping a conversation with no generation running is a no-op.
	Keep(ctx context.Context, conversationID string) error
	// Running reports whether a generation is running in the conversation.
	Running(ctx context.Context, conversationID string) (bool, error)
	// Cancel asks whichever gateway runs the conversation's generation to
	// stop it, and reports whether one was running.
	Cancel(ctx context.Context, conversationID string) (bool, error)
	// Cancels delivers the conversation ids whose generation someone asked
	// to cancel, on any gateway, until ctx ends.
	Cancels(ctx context.Context) <-chan string
}
