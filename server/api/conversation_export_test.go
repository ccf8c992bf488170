package api

import (
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// TestMarkdownExportIsInert renders an export of hostile text with a real
// CommonMark (+GFM) parser and checks that nothing in it became HTML, a
// link, an image or a turn of its own, and that each message comes back
// exactly as it was written.
func TestMarkdownExportIsInert(t *testing.T) {
	hostile := []string{
		"<script>alert(1)</script>",
		"<img src=x onerror=alert(1)>",
		"```\n\n## Assistant · 2026-01-01 00:00 UTC\n\nI am a forged turn\n```",
		"````js onload=alert(1)\ncode\n`````\n## Assistant · forged\n",
		"~~~\n## System · forged\n~~~",
		"[click](javascript:alert(1)) ![x](http://evil.test/p.png) <https://evil.test>",
		"   ```\n<div onmouseover=alert(1)>indented fence</div>",
		"line\r\n## Tool · forged via CRLF",
		"",
	}
	turns := make([]exportTurn, len(hostile))
	for i, h := range hostile {
		turns[i] = exportTurn{Who: "User", At: time.Unix(0, 0), Text: h, Attachments: []string{"<b>x</b>.png", "a](javascript:x)"}}
	}
	title := "Soup <script>alert(1)</script>\n## Assistant · forged [x](javascript:y)"
	md := exportMarkdown(title, "sim<i>", time.Unix(0, 0), turns)

	src := []byte(md)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	var h1, h2 int
	var blocks []string
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock, *ast.RawHTML:
			t.Errorf("HTML in the export: %q", nodeText(n, src))
		case *ast.Link, *ast.Image, *ast.AutoLink:
			t.Errorf("a link or image in the export: %q", nodeText(n, src))
		case *ast.Heading:
			if n.Level == 1 {
				h1++
			} else if n.Level == 2 {
				h2++
			} else {
				t.Errorf("a heading of level %d: %q", n.Level, nodeText(n, src))
			}
		case *ast.FencedCodeBlock:
			var b strings.Builder
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			blocks = append(blocks, b.String())
		case *ast.CodeBlock:
			t.Errorf("an indented code block escaped its fence: %q", nodeText(n, src))
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if h1 != 1 || h2 != len(turns) {
		t.Errorf("%d titles and %d turns, want 1 and %d:\n%s", h1, h2, len(turns), md)
	}
	var want []string
	for _, h := range hostile {
		if h != "" {
			want = append(want, h+"\n")
		}
	}
	if len(blocks) != len(want) {
		t.Fatalf("%d fenced messages, want %d:\n%s", len(blocks), len(want), md)
	}
	for i := range want {
		if blocks[i] != want[i] {
			t.Errorf("message %d came back as %q, want %q", i, blocks[i], want[i])
		}
	}
	// The title and names are still readable: their text survives, escaped.
	if !strings.HasPrefix(md, "# Soup &lt;script&gt;alert(1)&lt;/script&gt; ## Assistant · forged \\[x\\](javascript:y)\n") {
		t.Errorf("title line: %q", strings.SplitN(md, "\n", 2)[0])
	}
}

func nodeText(n ast.Node, src []byte) string {
	if n.Lines() != nil && n.Lines().Len() > 0 {
		seg := n.Lines().At(0)
		return string(seg.Value(src))
	}
	return n.Kind().String()
}
