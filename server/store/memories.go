package store

import (
	"context"
	"time"
)

// Memory is something a web chat user asked to be remembered: a short text
// that joins the system message of their chats while memory is on.
type Memory struct {
	// ID is the caller-made UUIDv7.
	ID     string
	UserID string
	// Text is what to remember, 1 to 1000 characters.
	Text string
	// CreatedAt, and UpdatedAt (the last change of the text); lists are
	// ordered by UpdatedAt.
	CreatedAt, UpdatedAt time.Time
}

// Memories stores memories and the user's memory switch. Every method is
// scoped to a user: another user's memory is reported as ErrNotFound.
type Memories interface {
	// Create stores m unless the user has max memories already
	// (ErrQuotaExceeded). It returns ErrConflict if the ID exists,
	// ErrNotFound if the user does not.
	Create(ctx context.Context, m Memory, max int) error
	// List returns the user's memories, most recently updated first (ties
	// broken by ID, descending).
	List(ctx context.Context, userID string, page PageRequest) ([]Memory, string, error)
	// Update replaces the text, moves UpdatedAt to now (never backwards) and
	// returns the result, or ErrNotFound.
	Update(ctx context.Context, userID, id, text string, now time.Time) (Memory, error)
	// Delete removes the user's memory, or returns ErrNotFound.
	Delete(ctx context.Context, userID, id string) error
	// Enabled says whether the user's memories join their chats: true
	// until SetEnabled turns it off.
	Enabled(ctx context.Context, userID string) (bool, error)
	// SetEnabled turns the user's memory on or off (ErrNotFound for an
	// unknown user).
	SetEnabled(ctx context.Context, userID string, on bool, now time.Time) error
}
