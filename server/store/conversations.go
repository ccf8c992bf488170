package store

import (
	"context"
	"time"
)

// Conversation is the metadata of one web-chat conversation. Its messages are
// kept by Messages.
type Conversation struct {
	// ID is the caller-made UUIDv7.
	ID string
	// UserID is the owner.
	UserID string
	// Title is shown in the conversation list; empty until set.
	Title string
	// TitleGenerated says the model wrote the title (SetGeneratedTitle);
	// a rename clears it.
	TitleGenerated bool
	// Pinned keeps it at the top of the person's list.
	Pinned bool
	// Folder is the folder it is filed in; empty for none.
	Folder string
	// Model is the model the conversation uses by default.
	Model string
	// Archived hides the conversation from the default list.
	Archived bool
	// CreatedAt is when the conversation was made.
	CreatedAt time.Time
	// UpdatedAt is the last activity; lists are ordered by it.
	UpdatedAt time.Time
	// SystemPrompt is the conversation's own system prompt; empty for none.
	SystemPrompt string
	// LeafID is the last message of the active branch; empty until set
	// (then the newest message is).
	LeafID string
	// ProjectID is the project the conversation belongs to; empty for
	// none. It is set at Create and never changes.
	ProjectID string
}

// ArchiveFilter selects conversations by their Archived flag.
type ArchiveFilter int

const (
	// ArchiveActive lists conversations that are not archived.
	ArchiveActive ArchiveFilter = iota
	// ArchiveArchived lists archived conversations only.
	ArchiveArchived
	// ArchiveAll lists both.
	ArchiveAll
)

// ConversationFilter narrows Conversations.List.
type ConversationFilter struct {
	// Archived selects by the archived flag; the zero value lists active
	// conversations.
	Archived ArchiveFilter
	// ProjectID, when set, lists only that project's conversations.
	ProjectID string
}

// ConversationPatch lists the fields Update changes; nil fields are kept.
type ConversationPatch struct {
	// Title, if set, replaces the title.
	Title *string
	// Archived, if set, replaces the archived flag.
	Archived *bool
	// SystemPrompt, if set, replaces the system prompt.
	SystemPrompt *string
	// LeafID, if set, replaces the active branch's leaf.
	LeafID *string
	// Pinned, if set, pins or unpins it.
	Pinned *bool
	// Folder, if set, files it in a folder (empty: none).
	Folder *string
}

// Conversations stores conversation metadata. Every method is scoped to a
// user: another user's conversation is reported as ErrNotFound.
type Conversations interface {
	// Create stores c. It returns ErrConflict if the ID exists, ErrNotFound
	// if the user does not.
	Create(ctx context.Context, c Conversation) error
	// Get returns the user's conversation, or ErrNotFound.
	Get(ctx context.Context, userID, id string) (Conversation, error)
	// List returns the user's conversations, most recently updated first
	// (ties broken by ID, descending).
	List(ctx context.Context, userID string, filter ConversationFilter, page PageRequest) ([]Conversation, string, error)
	// Update applies patch, moves UpdatedAt to now (never backwards) and
	// returns the result, or ErrNotFound.
	Update(ctx context.Context, userID, id string, patch ConversationPatch, now time.Time) (Conversation, error)
	// Touch records activity: UpdatedAt becomes now (never moving backwards),
	// and if the title is empty it becomes titleIfEmpty. It returns
	// ErrNotFound if the conversation is not the user's.
	Touch(ctx context.Context, userID, id string, now time.Time, titleIfEmpty string) error
	// SetLeaf makes leafID the last message of the active branch, without
	// moving UpdatedAt. It returns ErrNotFound if the conversation is not
	// the user's.
	SetLeaf(ctx context.Context, userID, id, leafID string) error
	// Instructions returns the user's custom instructions for every
	// conversation; empty when none are set.
	Instructions(ctx context.Context, userID string) (string, error)
	// SetInstructions replaces the user's custom instructions (empty clears
	// them). It returns ErrNotFound if the user does not exist.
	SetInstructions(ctx context.Context, userID, instructions string, now time.Time) error
	// Delete removes the user's conversation, or returns ErrNotFound. Its
	// messages live in Messages, which may be another backend: the caller
	// deletes them with Messages.DeleteConversation.
	Delete(ctx context.Context, userID, id string) error
	// SetGeneratedTitle sets a title the model wrote, only while the title
	// is still replaces (a rename meanwhile wins), and reports whether it
	// did.
	SetGeneratedTitle(ctx context.Context, userID, id, replaces, title string) (bool, error)
}
