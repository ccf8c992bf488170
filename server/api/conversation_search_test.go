package api

import (
	"strings"
	"testing"
)

func TestSnippet(t *testing.T) {
	marked := func(s string, terms []string, limit int) string {
		text, ranges := Snippet(s, terms, limit)
		rs := []rune(text)
		var b strings.Builder
		last := 0
		for _, r := range ranges {
			b.WriteString(string(rs[last:r.Start]) + "[" + string(rs[r.Start:r.End]) + "]")
			last = int(r.End)
		}
		b.WriteString(string(rs[last:]))
		return b.String()
	}
	for _, c := range []struct {
		text  string
		terms []string
		limit int
		want  string
	}{
		{"Holiday plans", []string{"holi"}, 200, "[Holiday] plans"},
		{"Where do Pelicans\n\nnest? pelican!", []string{"pelican"}, 200, "Where do [Pelicans] nest? [pelican]!"},
		{"Zürich über alles", []string{"über", "zür"}, 200, "[Zürich] [über] alles"},
		{"no match here", []string{"xyz"}, 200, "no match here"},
		{strings.Repeat("word ", 30) + "needle " + strings.Repeat("tail ", 30), []string{"needle"}, 40,
			"…word word [needle] tail tail tail tail…"},
		{"<b>bold</b> & co", []string{"bold"}, 200, "<b>[bold]</b> & co"},
	} {
		if got := marked(c.text, c.terms, c.limit); got != c.want {
			t.Errorf("Snippet(%q, %v, %d) = %q, want %q", c.text, c.terms, c.limit, got, c.want)
		}
	}
}
