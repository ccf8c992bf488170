package store

import (
	"context"
	"time"
)

// SavedPrompt is a prompt of a person's library.
type SavedPrompt struct {
	ID, UserID string
	// Name is unique per user.
	Name, Text string
	UpdatedAt  time.Time
}

// MaxSavedPrompts is the most prompts one person keeps.
const MaxSavedPrompts = 200

// Prompts stores people's prompt libraries. Every method is scoped to a
// user: another user's prompt is ErrNotFound.
type Prompts interface {
	// ListPrompts lists a user's prompts by name.
	ListPrompts(ctx context.Context, userID string) ([]SavedPrompt, error)
	// CreatePrompt adds p: ErrConflict when the user has a prompt of its
	// name, ErrQuotaExceeded when it has MaxSavedPrompts already.
	CreatePrompt(ctx context.Context, p SavedPrompt) error
	// UpdatePrompt changes a user's prompt's name and text: ErrNotFound,
	// or ErrConflict for a name another of its prompts has.
	UpdatePrompt(ctx context.Context, p SavedPrompt) error
	// DeletePrompt removes a user's prompt: ErrNotFound when there is none.
	DeletePrompt(ctx context.Context, userID, id string) error
}
