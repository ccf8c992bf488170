package chat

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/tokenize"
)

// A document attached to a web message that does not fit the model's
// window, even with the rest of the conversation dropped, is retrieved from
// instead of being cut or refused: it is split into passages of
// DocPassageTokens (tiling it, so neighbours join seamlessly), the passages
// are ranked by BM25 against the message's own text, as the lexical indexes
// rank chunks, and those that match are kept, best first, as many as the
// window leaves room for, with the document's opening, all in the
// document's order. A note at the document's head tells the model what it
// reads; "[…]" marks each part left out. A message with no text of its own
// (or none that matches) keeps as much of the document's beginning as fits.

// DocPassageTokens is the size of the passages a long document is split
// into to be retrieved from.
const DocPassageTokens = 200

// docGap marks a part of a document left out.
const docGap = "\n[…]\n"

// docPassage is one passage of document doc (an index among the message's
// document parts): bytes start to end of its text.
type docPassage struct {
	doc, ord, start, end, tokens int
	score                        float64
}

// retrieveFromDocuments is msg with its documents cut to their passages
// most relevant to msg's own text, the documents' texts together taking at
// most room tokens (by tok's count of each piece; the caller rechecks the
// whole prompt); msg itself is left as it is. It reports whether any
// passage fits.
func retrieveFromDocuments(tok *tokenize.Tokenizer, msg llm.ChatMessage, room int) (llm.ChatMessage, bool) {
	var question strings.Builder
	var docs []*llm.Document
	for _, p := range msg.Parts {
		switch {
		case p.Document != nil:
			docs = append(docs, p.Document)
		case p.ToolCall == nil && p.ToolResult == nil && p.Image == nil:
			question.WriteString(p.Text + "\n")
		}
	}
	if len(docs) == 0 {
		return msg, false
	}
	var passages []docPassage
	totals, counts := make([]int, len(docs)), make([]int, len(docs))
	for d, doc := range docs {
		for ord, sp := range tok.Split(doc.Text, DocPassageTokens, 0) {
			passages = append(passages, docPassage{doc: d, ord: ord, start: sp.Start, end: sp.End, tokens: sp.Tokens})
			totals[d] += sp.Tokens
			counts[d]++
		}
	}
	var terms []string
	for _, w := range store.QueryTerms(question.String()) {
		if !stopWords[w] {
			terms = append(terms, w)
		}
	}
	tf := make([]map[string]int, len(passages))
	length := make([]int, len(passages))
	for i, p := range passages {
		tf[i], length[i] = store.TermCounts(docs[p.doc].Text[p.start:p.end])
	}
	for i, s := range store.BM25(terms, tf, length) {
		passages[i].score = s
	}
	ranked := slices.Clone(passages)
	slices.SortStableFunc(ranked, func(x, y docPassage) int {
		if c := cmp.Compare(y.score, x.score); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.ord, y.ord), cmp.Compare(x.doc, y.doc))
	})

	// Each document keeps its note; each passage kept may open a gap.
	notes := make([]string, len(docs))
	used := 0
	for d, doc := range docs {
		notes[d] = fmt.Sprintf("[%s is %d tokens, more than the model's context window holds, so only its passages most relevant to the message follow, in order; %q marks what was left out.]\n",
			doc.Filename, totals[d], strings.TrimSpace(docGap))
		used += tok.Count(notes[d]) + tok.Count(docGap)
	}
	gap := tok.Count(docGap)
	var kept []docPassage
	take := func(p docPassage) {
		if used+p.tokens+gap <= room { // else a shorter one (a document's last) may still fit
			used += p.tokens + gap
			kept = append(kept, p)
		}
	}
	if ranked[0].score > 0 {
		// The passages that match, best first, then each document's
		// opening (its title, what it is) where room is left.
		for _, p := range ranked {
			if p.score > 0 {
				take(p)
			}
		}
		for _, p := range passages {
			if p.ord == 0 && p.score == 0 {
				take(p)
			}
		}
	} else {
		for _, p := range ranked { // the beginnings, in order
			take(p)
		}
	}
	if len(kept) == 0 {
		return msg, false
	}
	slices.SortFunc(kept, func(x, y docPassage) int {
		return cmp.Or(cmp.Compare(x.doc, y.doc), cmp.Compare(x.ord, y.ord))
	})
	texts := make([]string, len(docs))
	for d, doc := range docs {
		var b strings.Builder
		b.WriteString(notes[d])
		next := 0 // the passage that would follow the last one written
		for _, p := range kept {
			if p.doc != d {
				continue
			}
			if p.ord != next {
				b.WriteString(docGap)
			}
			b.WriteString(doc.Text[p.start:p.end])
			next = p.ord + 1
		}
		if next < counts[d] {
			b.WriteString(docGap)
		}
		texts[d] = b.String()
	}
	out := llm.ChatMessage{Role: msg.Role, Parts: slices.Clone(msg.Parts)}
	d := 0
	for i, p := range out.Parts {
		if p.Document != nil {
			out.Parts[i].Document = &llm.Document{Filename: p.Document.Filename, MimeType: p.Document.MimeType, Text: texts[d]}
			d++
		}
	}
	return out, true
}
