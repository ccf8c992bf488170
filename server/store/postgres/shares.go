package postgres

import (
	"context"

	"github.com/parleyhq/parley/server/store"
)

type shares struct{ db *DB }

func (s shares) Put(ctx context.Context, v store.Share) (store.Share, error) {
	// Inserted from the conversation's row, so a conversation that is not
	// the user's inserts nothing.
	var created int64
	err := s.db.conn().QueryRow(ctx, `INSERT INTO shares (id, conversation_id, user_id, snapshot, created_at)
		SELECT $1, id, user_id, $2, $3 FROM conversations WHERE id = $4 AND user_id = $5
		ON CONFLICT (conversation_id) DO UPDATE SET snapshot = excluded.snapshot, created_at = excluded.created_at
		RETURNING id, created_at`,
		v.ID, v.Snapshot, ts(v.CreatedAt), v.ConversationID, v.UserID).Scan(&v.ID, &created)
	if err != nil {
		return store.Share{}, notFound(err, "conversation")
	}
	v.CreatedAt = fromTS(created)
	return v, nil
}

func (s shares) Get(ctx context.Context, id string) (store.Share, error) {
	var v store.Share
	var created int64
	err := s.db.conn().QueryRow(ctx, `SELECT id, user_id, conversation_id, snapshot, created_at FROM shares WHERE id = $1`, id).
		Scan(&v.ID, &v.UserID, &v.ConversationID, &v.Snapshot, &created)
	if err != nil {
		return store.Share{}, notFound(err, "share")
	}
	v.CreatedAt = fromTS(created)
	return v, nil
}

func (s shares) Delete(ctx context.Context, userID, conversationID string) (bool, error) {
	tag, err := s.db.exec(ctx, `DELETE FROM shares WHERE conversation_id = $1 AND user_id = $2`, conversationID, userID)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}
