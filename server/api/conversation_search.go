package api

import (
	"context"
	"encoding/base64"
	"strings"
	"unicode"
	"unicode/utf8"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

const maxQuery = 200

// SearchConversations finds the caller's conversations by the words of
// their titles and messages, with a highlighted snippet of each.
func (h *ConversationHandler) SearchConversations(ctx context.Context, req *connect.Request[parleyv1.SearchConversationsRequest]) (*connect.Response[parleyv1.SearchConversationsResponse], error) {
	p, _ := auth.FromContext(ctx)
	q := req.Msg.GetQuery()
	if !utf8.ValidString(q) || utf8.RuneCountInString(q) > maxQuery {
		return nil, apierr.InvalidArgument("query", "must be valid UTF-8 of at most 200 characters")
	}
	terms := store.SearchTerms(q)
	if len(terms) == 0 {
		return nil, apierr.InvalidArgument("query", "must hold a word (letters or digits)")
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	// A token is good only for the query it was made for.
	list := "search:" + base64.RawURLEncoding.EncodeToString([]byte(strings.Join(terms, " ")))
	cursor, err := h.Pages.Open(p.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	hits, next, err := h.Search.Search(ctx, p.UserID, terms, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, apierr.Store(err)
	}
	res := &parleyv1.SearchConversationsResponse{NextPageToken: h.Pages.Seal(p.UserID, list, next)}
	for _, hit := range hits {
		text, ranges := Snippet(hit.Text, terms, snippetLen)
		res.Results = append(res.Results, &parleyv1.ConversationSearchResult{
			Conversation: h.toProto(ctx, hit.Conversation), MessageId: hit.MessageID, Snippet: text, Highlights: ranges,
		})
	}
	return connect.NewResponse(res), nil
}

// snippetLen is the most code points of a snippet, not counting the "…"
// where it is cut.
const snippetLen = 200

// Snippet cuts text to at most limit code points around its first word that
// starts with one of terms (lower-case), whitespace folded to single
// spaces, with "…" where it was cut, and returns it with the ranges (in
// code points) of the words in it that match. No match: the start of the
// text, no ranges.
func Snippet(text string, terms []string, limit int) (string, []*parleyv1.TextRange) {
	rs := []rune(strings.Join(strings.Fields(text), " "))
	type word struct{ start, end int }
	var matches []word
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && isWordRune(rs[j]) {
			j++
		}
		w := strings.ToLower(string(rs[i:j]))
		for _, t := range terms {
			if strings.HasPrefix(w, t) {
				matches = append(matches, word{i, j})
				break
			}
		}
		i = j
	}
	start, lead := 0, limit*3/10 // the text kept before the first match
	if len(matches) > 0 && matches[0].start > lead && len(rs) > limit {
		start = matches[0].start - lead
		// Start at a word, and never so late that the text left is short.
		for start > 0 && start < matches[0].start && rs[start-1] != ' ' {
			start++
		}
		if len(rs)-start < limit {
			start = max(0, len(rs)-limit)
		}
	}
	end := min(len(rs), start+limit)
	if end < len(rs) {
		// End at a space if there is one in the last fifth.
		for e := end; e > start+limit*4/5; e-- {
			if rs[e] == ' ' {
				end = e
				break
			}
		}
	}
	var b strings.Builder
	shift := -start
	if start > 0 {
		b.WriteString("…")
		shift++
	}
	b.WriteString(string(rs[start:end]))
	if end < len(rs) {
		b.WriteString("…")
	}
	var ranges []*parleyv1.TextRange
	for _, m := range matches {
		if m.start < start || m.end > end {
			continue
		}
		ranges = append(ranges, &parleyv1.TextRange{Start: int32(m.start + shift), End: int32(m.end + shift)})
	}
	return b.String(), ranges
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
