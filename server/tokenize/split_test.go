package tokenize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Chunks hold at most the tokens asked for, overlap by the tokens asked
// for, cover the whole text in order, are valid UTF-8 even where tokens
// split characters, and come out the same every time.
func TestSplit(t *testing.T) {
	tok := Default()
	var b strings.Builder
	for i := range 3000 {
		b.WriteString([]string{"The kept notes ", "naïve café ", "日本語のテキスト ", "🙂🙃 ", "x=42; "}[i%5])
	}
	text := b.String()
	spans := tok.Split(text, 100, 40)
	if len(spans) < 10 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, s := range spans {
		chunk := text[s.Start:s.End]
		if !utf8.ValidString(chunk) {
			t.Fatalf("span %d is not valid UTF-8", i)
		}
		if s.Tokens > 100 {
			t.Fatalf("span %d: %d tokens", i, s.Tokens)
		}
		if i > 0 && (s.Start <= spans[i-1].Start || s.Start >= spans[i-1].End) {
			t.Fatalf("span %d [%d,%d) does not overlap the one before [%d,%d)", i, s.Start, s.End, spans[i-1].Start, spans[i-1].End)
		}
	}
	if spans[0].Start != 0 || spans[len(spans)-1].End != len(text) {
		t.Fatalf("the spans do not cover the text: %d..%d of %d", spans[0].Start, spans[len(spans)-1].End, len(text))
	}
	again := tok.Split(text, 100, 40)
	if len(again) != len(spans) || again[7] != spans[7] {
		t.Fatal("the same text split differently")
	}
	if got := tok.Split("short", 800, 400); len(got) != 1 || got[0].End != 5 {
		t.Fatalf("a short text: %v", got)
	}
	if tok.Split("", 100, 0) != nil {
		t.Fatal("an empty text has chunks")
	}
}
