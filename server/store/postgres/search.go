package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

// search finds conversations through the generated tsvector columns of
// conversations and messages (migration 0006).
type search struct{ db *DB }

// tsquery is the query of terms: each a prefix, all required. Terms hold
// only letters and digits (store.SearchTerms), so none carries tsquery
// syntax.
func tsquery(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = t + ":*"
	}
	return strings.Join(q, " & ")
}

func (s search) Search(ctx context.Context, userID string, terms []string, p store.PageRequest) ([]store.SearchHit, string, error) {
	if len(terms) == 0 {
		return nil, "", fmt.Errorf("%w: no search terms", store.ErrInvalidArgument)
	}
	limit := p.Limit()
	// One row per conversation: the title if it matches (rank 0), else the
	// newest matching message. convCols unqualified: hits' column names are
	// none of conversations'.
	q := `WITH q AS (SELECT to_tsquery('simple', $2) AS q),
		hits AS (
			SELECT c.id AS conversation_id, '' AS message_id, c.title AS text, 0 AS rank, 0::bigint AS at
			FROM conversations c, q WHERE c.user_id = $1 AND c.search @@ q.q
			UNION ALL
			SELECT m.conversation_id, m.id, m.parts, 1, m.created_at
			FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.user_id = $1, q
			WHERE m.search @@ q.q)
		SELECT DISTINCT ON (c.updated_at, c.id) ` + convCols + `, h.message_id, h.text
		FROM hits h JOIN conversations c ON c.id = h.conversation_id
		WHERE c.user_id = $1`
	args := []any{userID, tsquery(terms)}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (c.updated_at, c.id) < ($3, $4)`
		args = append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY c.updated_at DESC, c.id DESC, h.rank, h.at DESC, h.message_id DESC LIMIT %d`, limit+1)
	rows, err := s.db.conn().Query(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	out, err := collectRows(rows, func(r pgx.Rows) (store.SearchHit, error) {
		var cs convScan
		var h store.SearchHit
		if err := r.Scan(append(cs.dest(), &h.MessageID, &h.Text)...); err != nil {
			return h, err
		}
		h.Conversation = cs.conv()
		if h.MessageID != "" {
			var parts []store.Part
			if err := json.Unmarshal([]byte(h.Text), &parts); err != nil {
				return h, fmt.Errorf("postgres: decode parts of message %s: %w", h.MessageID, err)
			}
			var texts []string
			for _, part := range parts {
				if part.Text != "" {
					texts = append(texts, part.Text)
				}
			}
			h.Text = strings.Join(texts, "\n")
		}
		return h, nil
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.SearchHit) (int64, string) {
		return ts(v.Conversation.UpdatedAt), v.Conversation.ID
	})
	return out, next, nil
}
