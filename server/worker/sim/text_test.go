package sim

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
)

func TestSplitDeltasKeepsCharactersWhole(t *testing.T) {
	tok := tokenize.Default()
	const text = "Rabbit 🐇 says こんにちは, Ж, 🇫🇷 and é\u0301!"
	ids := tok.Encode(text)
	deltas := splitDeltas(tok, ids)
	var b strings.Builder
	n := 0
	for _, d := range deltas {
		if !utf8.ValidString(d.text) {
			t.Fatalf("delta %q is not valid UTF-8", d.text)
		}
		b.WriteString(d.text)
		n += d.tokens
		if d.end != n {
			t.Fatalf("delta %q ends at %d, want %d", d.text, d.end, n)
		}
	}
	if b.String() != text || n != len(ids) {
		t.Fatalf("deltas join to %q (%d tokens), want %q (%d)", b.String(), n, text, len(ids))
	}
	if len(deltas) == len(ids) {
		t.Fatal("no token split a character: the test text no longer exercises the grouping")
	}
	// Cut inside the emoji: the partial character is not streamed.
	for cut := range len(ids) {
		joined := ""
		for _, d := range splitDeltas(tok, ids[:cut]) {
			joined += d.text
		}
		if !utf8.ValidString(joined) || !strings.HasPrefix(text, joined) {
			t.Fatalf("cut at %d: %q", cut, joined)
		}
	}
}

func TestMakePlan(t *testing.T) {
	tok := tokenize.Default()
	text := "Down, down, down. Would the fall never come to an end?"
	p := makePlan(tok, text, nil, 100)
	if p.finish != llm.FinishStop || p.tokens() != tok.Count(text) || p.steps != p.tokens()+1 {
		t.Fatalf("plan %+v", p)
	}
	p = makePlan(tok, text, []string{"never", "fall"}, 100)
	if p.finish != llm.FinishStop || joined(p) != "Down, down, down. Would the " {
		t.Fatalf("stop: %q", joined(p))
	}
	p = makePlan(tok, text, []string{"Down"}, 100)
	if len(p.deltas) != 0 || p.steps != 1 {
		t.Fatalf("stop at the start: %+v", p)
	}
	p = makePlan(tok, text, nil, 3)
	if p.finish != llm.FinishLength || p.steps != 3 || joined(p) != "Down, down" {
		t.Fatalf("length: %q %+v", joined(p), p)
	}
}

func joined(p plan) string {
	var b strings.Builder
	for _, d := range p.deltas {
		b.WriteString(d.text)
	}
	return b.String()
}

func TestCorpusChain(t *testing.T) {
	c := corpusChain()
	if len(c.starts) < 20 || len(c.next) < 500 {
		t.Fatalf("chain too small: %d starts, %d pairs", len(c.starts), len(c.next))
	}
}
