package store

import (
	"context"
	"time"
)

// Part is one piece of a message's content: text, or a reference to an
// attachment.
type Part struct {
	// Text is the text of a text part.
	Text string `json:"text,omitempty"`
	// AttachmentID references an Attachment for an image or document part.
	AttachmentID string `json:"attachment_id,omitempty"`
}

// Message is one turn of a conversation.
type Message struct {
	// ID is the caller-made UUIDv7; it orders messages with the same
	// CreatedAt.
	ID string
	// ConversationID is the conversation, which is the partition key of the
	// scale backend.
	ConversationID string
	// Role is "system", "user" or "assistant".
	Role string
	// Parts is the content.
	Parts []Part
	// Model is the model that wrote an assistant message.
	Model string
	// Tokens is the message's token count.
	Tokens int64
	// FinishReason is why an assistant message ended ("stop", "length",
	// "cancelled", "error"…).
	FinishReason string
	// CreatedAt orders the conversation.
	CreatedAt time.Time
}

// Messages stores messages, append-only and partitioned by conversation (the
// scale backend is ScyllaDB, with conversation ID as partition key and
// creation time and ID as clustering key). It knows nothing about owners:
// callers check ownership with Conversations.Get first.
type Messages interface {
	// Append stores m. Appending an ID that already exists in the
	// conversation is a no-op, so retries are safe.
	Append(ctx context.Context, m Message) error
	// List returns a conversation's messages, oldest first (by CreatedAt,
	// then ID).
	List(ctx context.Context, conversationID string, page PageRequest) ([]Message, string, error)
	// DeleteConversation removes all of a conversation's messages. Deleting
	// an empty or unknown conversation is not an error.
	DeleteConversation(ctx context.Context, conversationID string) error
}
