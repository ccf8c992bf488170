package llm

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/tokenize"
)

// TestRequestPromptBound checks that the bound is the rendered text's
// length exactly (so it follows render) and bounds the token count.
func TestRequestPromptBound(t *testing.T) {
	req := &Request{
		Tools: []Tool{{Name: "get_weather", Description: "Weather now", Parameters: []byte(`{"type":"object"}`)}},
		Messages: []ChatMessage{
			{Role: "system", Parts: []Part{{Text: "Be brief."}}},
			{Role: "user", Parts: []Part{{Text: "What is in these? 🐇 " + strings.Repeat("words ", 50)},
				{Image: &Image{Width: 1024, Height: 512}}, {Document: &Document{Filename: "a.txt", Text: "doc text"}}}},
			{Role: "assistant", Parts: []Part{{ToolCall: &ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"location":"Paris"}`}}}},
			{Role: "tool", Parts: []Part{{ToolResult: &ToolResult{ToolCallID: "c1", Content: "sunny"}}}},
		},
	}
	var text strings.Builder
	text.WriteString(ToolsPrompt(req.Tools))
	images := 0
	render(req.Messages, func(s string) { text.WriteString(s) }, func(img *Image) { images += ImageTokens(img.Width, img.Height) })
	got := RequestPromptBound(req, func(img *Image) int { return ImageTokens(img.Width, img.Height) })
	if want := text.Len() + images; got != want {
		t.Fatalf("bound %d, rendered text %d + images %d", got, text.Len(), images)
	}
	if tokens := RequestPromptTokens(tokenize.Default(), req); tokens > got {
		t.Fatalf("%d tokens, over the bound %d", tokens, got)
	}
}
