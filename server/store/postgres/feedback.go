package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type feedback struct{ db *DB }

var _ store.Feedback = feedback{}

func (f feedback) PutRating(ctx context.Context, r store.Rating) error {
	_, err := f.db.exec(ctx, `INSERT INTO message_feedback (user_id, message_id, conversation_id, model, good, note, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (user_id, message_id) DO UPDATE SET good = excluded.good, note = excluded.note,
		model = excluded.model, updated_at = excluded.updated_at`,
		r.UserID, r.MessageID, r.ConversationID, r.Model, r.Good, r.Note, ts(r.UpdatedAt))
	return err
}

func (f feedback) DeleteRating(ctx context.Context, userID, messageID string) error {
	_, err := f.db.exec(ctx, `DELETE FROM message_feedback WHERE user_id = $1 AND message_id = $2`, userID, messageID)
	return err
}

func scanRating(r pgx.Rows) (store.Rating, error) {
	var x store.Rating
	var at int64
	err := r.Scan(&x.UserID, &x.MessageID, &x.ConversationID, &x.Model, &x.Good, &x.Note, &at)
	x.UpdatedAt = fromTS(at)
	return x, err
}

const ratingCols = `user_id, message_id, conversation_id, model, good, note, updated_at`

func (f feedback) ListRatings(ctx context.Context, userID, conversationID string) ([]store.Rating, error) {
	// The primary: a person sees the rating it just gave.
	rows, err := f.db.conn().Query(ctx, `SELECT `+ratingCols+` FROM message_feedback WHERE user_id = $1 AND conversation_id = $2`, userID, conversationID)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectRows(rows, scanRating)
}

func (f feedback) CountRatings(ctx context.Context, from, to time.Time) ([]store.FeedbackCount, error) {
	return readRows(ctx, f.db, `SELECT model, count(*) FILTER (WHERE good), count(*) FILTER (WHERE NOT good) FROM message_feedback
		WHERE updated_at >= $1 AND updated_at < $2`+f.db.owned("user_id", false)+` GROUP BY model ORDER BY count(*) DESC, model`, []any{ts(from), ts(to)},
		func(r pgx.Rows) (store.FeedbackCount, error) {
			var c store.FeedbackCount
			return c, r.Scan(&c.Model, &c.Good, &c.Bad)
		})
}

func (f feedback) RatingNotes(ctx context.Context, from, to time.Time, limit int) ([]store.Rating, error) {
	return readRows(ctx, f.db, `SELECT `+ratingCols+` FROM message_feedback
		WHERE note <> '' AND updated_at >= $1 AND updated_at < $2`+f.db.owned("user_id", false)+` ORDER BY updated_at DESC LIMIT $3`, []any{ts(from), ts(to), limit}, scanRating)
}
