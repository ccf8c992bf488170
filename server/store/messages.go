package store

import (
	"context"
	"time"

	"github.com/parleyhq/parley/server/llm"
)

// Part is one piece of a message's content: text, a reference to an
// attachment, an image given inline, a tool call or a tool result. Backends
// keep a message's parts as one JSON document, so a new kind of part needs
// no migration.
type Part struct {
	// Text is the text of a text part.
	Text string `json:"text,omitempty"`
	// AttachmentID references an Attachment for an image or document part.
	AttachmentID string `json:"attachment_id,omitempty"`
	// Image is an image given inline (the API channel), as the model
	// received it: already fitted, so it is small.
	Image *Image `json:"image,omitempty"`
	// ToolCall is a call the model made, in an assistant message.
	ToolCall *llm.ToolCall `json:"tool_call,omitempty"`
	// ToolResult is a tool's answer to a call, in a "tool" message.
	ToolResult *llm.ToolResult `json:"tool_result,omitempty"`
	// Reasoning is a model's reasoning before or between its answer's
	// parts (models that reason), kept so a stored answer reads back as
	// it streamed; no prompt includes it.
	Reasoning string `json:"reasoning,omitempty"`
	// Meta is JSON a surface keeps with the message that is not content:
	// the model never sees it (the Responses API keeps a response's
	// settings and its place in a chain here).
	Meta string `json:"meta,omitempty"`
	// Citation is a passage of a file an answer cites, in an assistant
	// message (after its text): the model never sees it.
	Citation *Citation `json:"citation,omitempty"`
}

// Citation is one passage an answer cites, found by file search.
type Citation struct {
	// Number is the marker the text cites it by ([1] is 1).
	Number int `json:"number"`
	// FileID and Filename name the file (an attachment).
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
	// Quote is the passage (a chunk's text, cut to a bound).
	Quote string `json:"quote"`
	// Score is the search's relevance score, 0 to 1.
	Score float64 `json:"score"`
}

// Image is an image kept inline in a message.
type Image struct {
	Data     []byte `json:"data"`
	MimeType string `json:"mime_type"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

// Message is one turn of a conversation.
type Message struct {
	// ID is the caller-made UUIDv7; it orders messages with the same
	// CreatedAt.
	ID string
	// ConversationID is the conversation, which is the partition key of the
	// scale backend.
	ConversationID string
	// Role is "system", "user", "assistant" or "tool" (a message of tool
	// results).
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
	// ParentID is the message this one follows in the conversation's tree
	// (the web channel's branches); empty for a root. Messages stored before
	// the tree existed read as a chain: each one's parent is the message
	// before it.
	ParentID string
	// Status is MessageComplete (empty), MessageInProgress or
	// MessageInterrupted.
	Status string
}

// Message statuses: an answer is stored in progress when its generation
// starts, rewritten as it grows, and completed at the end; one whose
// generation died with its gateway is marked interrupted.
const (
	MessageComplete    = ""
	MessageInProgress  = "in_progress"
	MessageInterrupted = "interrupted"
)

// MessageKey names one stored message of a conversation: its ID and its
// CreatedAt, which together are the scale backend's clustering key. Take
// both from a message as List returned it.
type MessageKey struct {
	ID        string
	CreatedAt time.Time
}

// Messages stores messages, partitioned by conversation (the
// scale backend is ScyllaDB, with conversation ID as partition key and
// creation time and ID as clustering key). It knows nothing about owners:
// callers check ownership with Conversations.Get first.
type Messages interface {
	// Append stores m. Appending an ID that already exists in the
	// conversation is a no-op, so retries are safe.
	Append(ctx context.Context, m Message) error
	// Put stores m, replacing the whole of a stored message with the same
	// key (ID and CreatedAt): an answer in progress is rewritten as it grows.
	Put(ctx context.Context, m Message) error
	// MarkInterrupted sets the status of the message key to
	// MessageInterrupted if it is MessageInProgress, and changes nothing
	// else (a concurrent Put of the finished answer wins). A key that names
	// no message is ignored.
	MarkInterrupted(ctx context.Context, conversationID string, key MessageKey) error
	// List returns a conversation's messages, oldest first (by CreatedAt,
	// then ID).
	List(ctx context.Context, conversationID string, page PageRequest) ([]Message, string, error)
	// Delete removes some of a conversation's messages; a key that names no
	// message is ignored.
	Delete(ctx context.Context, conversationID string, keys []MessageKey) error
	// DeleteConversation removes all of a conversation's messages. Deleting
	// an empty or unknown conversation is not an error.
	DeleteConversation(ctx context.Context, conversationID string) error
}
