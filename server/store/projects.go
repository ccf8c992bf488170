package store

import (
	"context"
	"time"
)

// Project is a user's workspace in the web chat: a name, instructions that
// join the system message of every chat in it, and files kept in its own
// vector store, which every message of its chats retrieves from.
type Project struct {
	// ID is the caller-made UUIDv7.
	ID     string
	UserID string
	// Name is shown in the project list; 1 to 100 characters.
	Name string
	// Instructions join the system message of the project's chats, after
	// the user's custom instructions; empty for none.
	Instructions string
	// VectorStoreID is the project's own vector store (its files).
	VectorStoreID string
	// CreatedAt, and UpdatedAt (the last change of the project itself);
	// lists are ordered by UpdatedAt.
	CreatedAt, UpdatedAt time.Time
}

// ProjectPatch lists the fields Update changes; nil fields are kept.
type ProjectPatch struct {
	Name         *string
	Instructions *string
}

// Projects stores projects. Every method is scoped to a user: another
// user's project is reported as ErrNotFound.
type Projects interface {
	// Create stores p unless the user has max projects already
	// (ErrQuotaExceeded). It returns ErrConflict if the ID exists,
	// ErrNotFound if the user does not.
	Create(ctx context.Context, p Project, max int) error
	// Get returns the user's project, or ErrNotFound.
	Get(ctx context.Context, userID, id string) (Project, error)
	// List returns the user's projects, most recently updated first (ties
	// broken by ID, descending).
	List(ctx context.Context, userID string, page PageRequest) ([]Project, string, error)
	// Update applies patch, moves UpdatedAt to now (never backwards) and
	// returns the result, or ErrNotFound.
	Update(ctx context.Context, userID, id string, patch ProjectPatch, now time.Time) (Project, error)
	// Delete removes the user's project, or returns ErrNotFound. Its
	// conversations keep their ProjectID: the caller deletes them first.
	Delete(ctx context.Context, userID, id string) error
}
