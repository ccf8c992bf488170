package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type messages struct{ db *DB }

func (m messages) Append(ctx context.Context, msg store.Message) error {
	return m.insert(ctx, msg, `ON CONFLICT DO NOTHING`)
}

func (m messages) Put(ctx context.Context, msg store.Message) error {
	return m.insert(ctx, msg, `ON CONFLICT (conversation_id, created_at, id) DO UPDATE SET role = excluded.role, parts = excluded.parts,
		model = excluded.model, tokens = excluded.tokens, finish_reason = excluded.finish_reason, parent_id = excluded.parent_id,
		status = excluded.status`)
}

func (m messages) insert(ctx context.Context, msg store.Message, onConflict string) error {
	parts := msg.Parts
	if parts == nil {
		parts = []store.Part{}
	}
	js, err := json.Marshal(parts)
	if err != nil {
		return fmt.Errorf("postgres: encode message parts: %w", err)
	}
	_, err = m.db.exec(ctx, `INSERT INTO messages (id, conversation_id, role, parts, model, tokens, finish_reason, created_at, parent_id, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) `+onConflict,
		msg.ID, msg.ConversationID, msg.Role, string(js), msg.Model, msg.Tokens, msg.FinishReason, ts(msg.CreatedAt), msg.ParentID, msg.Status)
	return err
}

func (m messages) MarkInterrupted(ctx context.Context, conversationID string, key store.MessageKey) error {
	_, err := m.db.exec(ctx, `UPDATE messages SET status = $1 WHERE conversation_id = $2 AND id = $3 AND status = $4`,
		store.MessageInterrupted, conversationID, key.ID, store.MessageInProgress)
	return err
}

func (m messages) List(ctx context.Context, conversationID string, p store.PageRequest) ([]store.Message, string, error) {
	limit := p.Limit()
	q := `SELECT id, conversation_id, role, parts, model, tokens, finish_reason, created_at, parent_id, status FROM messages WHERE conversation_id = $1`
	args := []any{conversationID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (created_at, id) > ($2, $3)`
		args = append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY created_at, id LIMIT %d`, limit+1)
	out, err := readRows(ctx, m.db, q, args, func(r pgx.Rows) (store.Message, error) {
		var msg store.Message
		var parts string
		var created int64
		if err := r.Scan(&msg.ID, &msg.ConversationID, &msg.Role, &parts, &msg.Model, &msg.Tokens, &msg.FinishReason, &created, &msg.ParentID, &msg.Status); err != nil {
			return msg, err
		}
		if err := json.Unmarshal([]byte(parts), &msg.Parts); err != nil {
			return msg, fmt.Errorf("postgres: decode parts of message %s: %w", msg.ID, err)
		}
		msg.CreatedAt = fromTS(created)
		return msg, nil
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.Message) (int64, string) { return ts(v.CreatedAt), v.ID })
	return out, next, nil
}

func (m messages) Delete(ctx context.Context, conversationID string, keys []store.MessageKey) error {
	if len(keys) == 0 {
		return nil
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	_, err := m.db.exec(ctx, `DELETE FROM messages WHERE conversation_id = $1 AND id = ANY($2)`, conversationID, ids)
	return err
}

func (m messages) DeleteConversation(ctx context.Context, conversationID string) error {
	_, err := m.db.exec(ctx, `DELETE FROM messages WHERE conversation_id = $1`, conversationID)
	return err
}
