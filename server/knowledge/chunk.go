package knowledge

import (
	"fmt"
	"unicode/utf8"

	"github.com/parleyhq/parley/server/tokenize"
)

// The chunking OpenAI documents as auto, and the bounds of a static one.
const (
	AutoChunkTokens   = 800
	AutoOverlapTokens = 400
	MinChunkTokens    = 100
	MaxChunkTokens    = 4096
)

// CheckChunking checks a static chunking strategy: chunks of 100 to 4096
// tokens, overlapping by at most half of one.
func CheckChunking(chunkTokens, overlapTokens int) error {
	switch {
	case chunkTokens < MinChunkTokens || chunkTokens > MaxChunkTokens:
		return fmt.Errorf("max_chunk_size_tokens: %d is outside %d to %d", chunkTokens, MinChunkTokens, MaxChunkTokens)
	case overlapTokens < 0 || overlapTokens > chunkTokens/2:
		return fmt.Errorf("chunk_overlap_tokens: %d is outside 0 to half of max_chunk_size_tokens (%d)", overlapTokens, chunkTokens/2)
	}
	return nil
}

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
func Split(tok *tokenize.Tokenizer, text string, chunkTokens, overlapTokens int) []Span {
	if text == "" {
		return nil
	}
	ids := tok.Encode(text)
	// offs[i] is where token i starts; the tokens tile the text's bytes.
	offs := make([]int, len(ids)+1)
	for i, id := range ids {
		offs[i+1] = offs[i] + len(tok.Token(id))
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
