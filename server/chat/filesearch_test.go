package chat

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCitations(t *testing.T) {
	found := []Passage{{FileID: "f1", Filename: "a.pdf", Text: "alpha", Score: 0.9}, {FileID: "f2", Filename: "b.md", Text: "beta", Score: 0.5}}
	// [2] twice, [1] once, [3] and [0] name no passage, [12 is not closed.
	text := "See [2] and [1], again [2]; not [3], [0], [], [x] or [12"
	got := Citations(text, found)
	if len(got) != 2 || got[0].Number != 1 || got[0].FileID != "f1" || got[1].Number != 2 || got[1].Filename != "b.md" || got[1].Quote != "beta" {
		t.Fatalf("citations %+v, want [1] a.pdf then [2] b.md, each once", got)
	}
	cites := Cites(text, len(found))
	if len(cites) != 3 || text[cites[0].End-3:cites[0].End] != "[2]" {
		t.Fatalf("markers %+v, want three, the first ending after [2]", cites)
	}
	if Citations("no markers", found) != nil || Citations("[1]", nil) != nil {
		t.Fatal("citations without markers or passages")
	}
}

func TestQuoteCutsAtACharacter(t *testing.T) {
	long := strings.Repeat("é", MaxPassageBytes) // 2 bytes each
	q := Quote(long)
	if len(q) > MaxPassageBytes || !utf8.ValidString(q) || len(q) < MaxPassageBytes-1 {
		t.Fatalf("quote of %d bytes (valid %v), want at most %d, whole characters", len(q), utf8.ValidString(q), MaxPassageBytes)
	}
	if Quote("short") != "short" {
		t.Fatal("a short passage is quoted whole")
	}
	if !strings.Contains(PassagesText([]Passage{{Filename: "a.pdf", Text: "alpha"}}), "[1] a.pdf: alpha") {
		t.Fatal("passages are numbered from 1 with their file's name")
	}
}
