package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/server/store"
)

// search finds conversations through the FTS5 table search_text, which
// triggers keep in step with conversations' titles and messages' text
// (migration 0005).
type search struct{ db *DB }

// match is the FTS5 query of terms: each a quoted prefix, all required.
// Terms hold only letters and digits (store.SearchTerms), so quoting is
// enough to keep them out of FTS5's query syntax.
func match(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + t + `"*`
	}
	return strings.Join(q, " ")
}

func (s search) Search(ctx context.Context, userID string, terms []string, p store.PageRequest) ([]store.SearchHit, string, error) {
	if len(terms) == 0 {
		return nil, "", fmt.Errorf("%w: no search terms", store.ErrInvalidArgument)
	}
	limit := p.Limit()
	// The title first, else the newest matching message; then only the
	// user's conversations, in list order.
	// convCols unqualified: h's column names are none of conversations'.
	q := `SELECT ` + convCols + `, h.message_id, h.text
		FROM (SELECT r.conversation_id, r.message_id, t.text,
				row_number() OVER (PARTITION BY r.conversation_id ORDER BY r.message_id = '' DESC, r.id DESC) AS n
			FROM search_text t JOIN search_rows r ON r.id = t.rowid
			WHERE search_text MATCH ?) h
		JOIN conversations c ON c.id = h.conversation_id
		WHERE h.n = 1 AND c.user_id = ?`
	args := []any{match(terms), userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (c.updated_at, c.id) < (?, ?)`
		args = append(args, at, id)
	}
	q += ` ORDER BY c.updated_at DESC, c.id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.SearchHit
	for rows.Next() {
		var cs convScan
		var h store.SearchHit
		if err := rows.Scan(append(cs.dest(), &h.MessageID, &h.Text)...); err != nil {
			return nil, "", err
		}
		h.Conversation = cs.conv()
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.SearchHit) (int64, string) {
		return ts(v.Conversation.UpdatedAt), v.Conversation.ID
	})
	return out, next, nil
}
