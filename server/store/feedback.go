package store

import (
	"context"
	"time"
)

// Rating is one person's verdict on one answer.
type Rating struct {
	UserID, ConversationID, MessageID string
	// Model wrote the answer (kept for the counts per model).
	Model string
	Good  bool
	// Note is what the person added; may be empty.
	Note      string
	UpdatedAt time.Time
}

// FeedbackCount is how one model's answers were rated.
type FeedbackCount struct {
	Model     string
	Good, Bad int64
}

// Feedback stores people's ratings of answers, one per person and answer.
// A rating goes with its conversation (and its user).
type Feedback interface {
	// PutRating stores r, replacing the person's earlier rating of the
	// answer.
	PutRating(ctx context.Context, r Rating) error
	// DeleteRating takes a person's rating of an answer back; none is no
	// error.
	DeleteRating(ctx context.Context, userID, messageID string) error
	// ListRatings lists a person's ratings in one conversation.
	ListRatings(ctx context.Context, userID, conversationID string) ([]Rating, error)
	// CountRatings counts the ratings given in [from, to) per model, the
	// most rated first.
	CountRatings(ctx context.Context, from, to time.Time) ([]FeedbackCount, error)
	// RatingNotes lists the newest ratings with a note given in [from, to),
	// at most limit.
	RatingNotes(ctx context.Context, from, to time.Time, limit int) ([]Rating, error)
}
