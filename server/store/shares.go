package store

import (
	"context"
	"time"
)

// Share is a public, read-only snapshot of a conversation, read by its
// unguessable ID with no credentials.
type Share struct {
	// ID is the caller-made public id (random, at least 128 bits).
	ID string
	// UserID is the owner.
	UserID string
	// ConversationID is the conversation shared.
	ConversationID string
	// Snapshot is what readers see, encoded by the caller; the store keeps
	// it as it is.
	Snapshot []byte
	// CreatedAt is when the snapshot was taken.
	CreatedAt time.Time
}

// Shares stores share links, at most one per conversation. A share goes
// with its conversation when that is deleted.
type Shares interface {
	// Put stores s as its conversation's share and returns what is stored:
	// a conversation already shared keeps its share's ID and takes the new
	// snapshot and CreatedAt. The ID stored may differ from s.ID in its
	// first character, where a store spread over clusters names the user's
	// shard, so the caller links the returned ID. It returns ErrNotFound if
	// the conversation is not the user's.
	Put(ctx context.Context, s Share) (Share, error)
	// Get returns the share with id, or ErrNotFound.
	Get(ctx context.Context, id string) (Share, error)
	// Delete removes the user's share of a conversation; false when there
	// was none (or the conversation is not the user's).
	Delete(ctx context.Context, userID, conversationID string) (bool, error)
}
