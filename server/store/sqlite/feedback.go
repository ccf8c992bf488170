package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/parleyhq/parley/server/store"
)

type feedback struct{ db *DB }

var _ store.Feedback = feedback{}

func (f feedback) PutRating(ctx context.Context, r store.Rating) error {
	_, err := f.db.exec(ctx, `INSERT INTO message_feedback (user_id, message_id, conversation_id, model, good, note, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, message_id) DO UPDATE SET good = excluded.good, note = excluded.note,
		model = excluded.model, updated_at = excluded.updated_at`,
		r.UserID, r.MessageID, r.ConversationID, r.Model, r.Good, r.Note, ts(r.UpdatedAt))
	return err
}

func (f feedback) DeleteRating(ctx context.Context, userID, messageID string) error {
	_, err := f.db.exec(ctx, `DELETE FROM message_feedback WHERE user_id = ? AND message_id = ?`, userID, messageID)
	return err
}

func scanRating(r *sql.Rows) (store.Rating, error) {
	var x store.Rating
	var at int64
	err := r.Scan(&x.UserID, &x.MessageID, &x.ConversationID, &x.Model, &x.Good, &x.Note, &at)
	x.UpdatedAt = fromTS(at)
	return x, err
}

const ratingCols = `user_id, message_id, conversation_id, model, good, note, updated_at`

func (f feedback) ListRatings(ctx context.Context, userID, conversationID string) ([]store.Rating, error) {
	rows, err := f.db.r.QueryContext(ctx, `SELECT `+ratingCols+` FROM message_feedback WHERE user_id = ? AND conversation_id = ?`, userID, conversationID)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanRating)
}

func (f feedback) CountRatings(ctx context.Context, from, to time.Time) ([]store.FeedbackCount, error) {
	rows, err := f.db.r.QueryContext(ctx, `SELECT model, sum(good), sum(1 - good) FROM message_feedback
		WHERE updated_at >= ? AND updated_at < ? GROUP BY model ORDER BY count(*) DESC, model`, ts(from), ts(to))
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r *sql.Rows) (store.FeedbackCount, error) {
		var c store.FeedbackCount
		return c, r.Scan(&c.Model, &c.Good, &c.Bad)
	})
}

func (f feedback) RatingNotes(ctx context.Context, from, to time.Time, limit int) ([]store.Rating, error) {
	rows, err := f.db.r.QueryContext(ctx, `SELECT `+ratingCols+` FROM message_feedback
		WHERE note <> '' AND updated_at >= ? AND updated_at < ? ORDER BY updated_at DESC LIMIT ?`, ts(from), ts(to), limit)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanRating)
}
