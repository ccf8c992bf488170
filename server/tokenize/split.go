package tokenize

import "unicode/utf8"

// Span is one chunk of a text: its byte range and its tokens.
type Span struct {
	Start, End int
	Tokens     int
}

// Split cuts text into chunks of at most chunkTokens tokens, each starting
// chunkTokens-overlapTokens tokens after the one before (so consecutive
// chunks share overlapTokens), the last one reaching the end. Boundaries
// fall between tokens, moved forward to a character's start where a token
// ends inside one, so every chunk is valid UTF-8. The same text always
// splits the same way.
func (t *Tokenizer) Split(text string, chunkTokens, overlapTokens int) []Span {
	if text == "" {
		return nil
	}
	ids := t.Encode(text)
	// offs[i] is where token i starts; the tokens tile the text's bytes.
	offs := make([]int, len(ids)+1)
	for i, id := range ids {
		offs[i+1] = offs[i] + len(t.Token(id))
	}
	if offs[len(ids)] != len(text) {
		// Not expected of a byte-level BPE; fall back to whole text.
		return []Span{{0, len(text), len(ids)}}
	}
	step := max(chunkTokens-overlapTokens, 1)
	var spans []Span
	for first := 0; first < len(ids); first += step {
		last := min(first+chunkTokens, len(ids))
		start, end := runeStart(text, offs[first]), runeStart(text, offs[last])
		if end > start {
			spans = append(spans, Span{start, end, last - first})
		}
		if last == len(ids) {
			break
		}
	}
	return spans
}

// runeStart is i, or the start of the next character when i is inside one.
func runeStart(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
