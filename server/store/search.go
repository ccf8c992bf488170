package store

import (
	"context"
	"strings"
	"unicode"
)

// MaxSearchTerms is the most words of a query a search uses; the rest are
// ignored.
const MaxSearchTerms = 16

// SearchTerms splits a search query into the words every backend matches:
// runs of letters and digits, lower-cased, in order, without repeats, at
// most MaxSearchTerms. Everything else (quotes, operators, punctuation) only
// separates words, so no query reaches an index's own query language.
func SearchTerms(query string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(query, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.ToLower(w)
		if seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == MaxSearchTerms {
			break
		}
	}
	return out
}

// SearchHit is one conversation that matched a search, with the text that
// matched.
type SearchHit struct {
	// Conversation is the matching conversation.
	Conversation Conversation
	// MessageID is the message whose text matched; "" when the title did.
	MessageID string
	// Text is the matching title or the message's text parts, joined by
	// newlines.
	Text string
}

// ConversationSearch finds a user's conversations by the words of their
// titles and messages. Each backend indexes in its own way (SQLite FTS5,
// PostgreSQL tsvector); messages kept in another backend (ScyllaDB) are not
// indexed, so only titles are found there.
type ConversationSearch interface {
	// Search returns the user's conversations whose title, or one of whose
	// messages, holds every term as a word prefix (terms as SearchTerms
	// makes them, at least one), most recently updated first (ties by ID,
	// descending), one hit per conversation: the title if it matches, else
	// the newest matching message.
	Search(ctx context.Context, userID string, terms []string, page PageRequest) ([]SearchHit, string, error)
}
