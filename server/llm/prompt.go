package llm

import (
	"hash/fnv"
	"math"
	"strings"
)

// Tokenizer turns prompt text into tokens: the gateway's and the sim's
// tokenizer (the tokenize package's) is one.
type Tokenizer interface {
	// Encode returns the text's token ids.
	Encode(s string) []int
	// Count returns how many tokens Encode would return.
	Count(s string) int
}

// render walks messages the way a chat template lays them out — a role tag,
// the content, a newline, and finally the assistant's tag — handing text
// runs and images to the callbacks in order. It is the one layout behind
// both PromptIDs (the sim's prompt) and PromptTokens (the gateway's count),
// so the two always agree.
func render(msgs []ChatMessage, text func(string), image func(*Image)) {
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			text(b.String())
			b.Reset()
		}
	}
	for _, m := range msgs {
		b.WriteString("<|" + m.Role + "|>\n")
		for _, p := range m.Parts {
			switch {
			case p.Image != nil:
				flush()
				image(p.Image)
			case p.ToolCall != nil:
				b.WriteString("<tool_call id=\"" + p.ToolCall.ID + "\" name=\"" + p.ToolCall.Name + "\">" + p.ToolCall.Arguments + "</tool_call>\n")
			case p.ToolResult != nil:
				b.WriteString("<tool_result id=\"" + p.ToolResult.ToolCallID + "\">" + p.ToolResult.Content + "</tool_result>\n")
			case p.Document != nil:
				b.WriteString("<document name=\"" + p.Document.Filename + "\">\n")
				b.WriteString(p.Document.Text)
				b.WriteString("\n</document>\n")
			default:
				b.WriteString(p.Text)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("<|assistant|>\n")
	flush()
}

// RequestPromptBound bounds RequestPromptTokens without tokenizing: the
// length of the text it would tokenize (no token is shorter than a byte)
// plus image(img) for each image. It follows render's layout byte for byte
// and allocates nothing.
func RequestPromptBound(req *Request, image func(*Image) int) int {
	n := len("<|tools|>\n")
	if len(req.Tools) == 0 {
		n = 0
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(": ") + len(t.Description) + len(" ") + len(t.Parameters) + len("\n")
	}
	for _, m := range req.Messages {
		n += len("<|") + len(m.Role) + len("|>\n")
		for _, p := range m.Parts {
			switch {
			case p.Image != nil:
				n += image(p.Image)
			case p.ToolCall != nil:
				n += len(`<tool_call id="`) + len(p.ToolCall.ID) + len(`" name="`) + len(p.ToolCall.Name) + len(`">`) + len(p.ToolCall.Arguments) + len("</tool_call>\n")
			case p.ToolResult != nil:
				n += len(`<tool_result id="`) + len(p.ToolResult.ToolCallID) + len(`">`) + len(p.ToolResult.Content) + len("</tool_result>\n")
			case p.Document != nil:
				n += len(`<document name="`) + len(p.Document.Filename) + len("\">\n") + len(p.Document.Text) + len("\n</document>\n")
			default:
				n += len(p.Text)
			}
		}
		n += len("\n")
	}
	return n + len("<|assistant|>\n")
}

// ToolsPrompt is the text the tool definitions add to a prompt, as a chat
// template puts them ahead of the messages: one line per tool with its name,
// description and parameter schema. Both the gateway's count and the sim's
// prompt start with it, so tools are paid for like any prompt text.
func ToolsPrompt(tools []Tool) string {
	if len(tools) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<|tools|>\n")
	for _, t := range tools {
		b.WriteString(t.Name)
		b.WriteString(": ")
		b.WriteString(t.Description)
		b.WriteString(" ")
		b.Write(t.Parameters)
		b.WriteString("\n")
	}
	return b.String()
}

// RequestPromptIDs is PromptIDs of the request's tools and messages.
func RequestPromptIDs(tok Tokenizer, req *Request) []int {
	ids := tok.Encode(ToolsPrompt(req.Tools))
	return append(ids, PromptIDs(tok, req.Messages)...)
}

// RequestPromptTokens counts the request's prompt as RequestPromptIDs would:
// its tool definitions and its messages.
func RequestPromptTokens(tok Tokenizer, req *Request) int {
	return tok.Count(ToolsPrompt(req.Tools)) + PromptTokens(tok, req.Messages)
}

// PromptIDs returns the prompt's tokens. An image stands for ImageTokens
// placeholder tokens (negative ids) derived from its bytes, so identical
// images share a cached prefix.
func PromptIDs(tok Tokenizer, msgs []ChatMessage) []int {
	var ids []int
	render(msgs,
		func(s string) { ids = append(ids, tok.Encode(s)...) },
		func(img *Image) {
			h := fnv.New64a()
			_, _ = h.Write(img.Data)
			base := h.Sum64()
			for i := range ImageTokens(img.Width, img.Height) {
				ids = append(ids, -1-int((base^uint64(i)*0x9E3779B97F4A7C15)>>2))
			}
		})
	return ids
}

// PromptTokens counts the prompt's tokens, as PromptIDs would, without
// building the ids.
func PromptTokens(tok Tokenizer, msgs []ChatMessage) int {
	n := 0
	render(msgs,
		func(s string) { n += tok.Count(s) },
		func(img *Image) { n += ImageTokens(img.Width, img.Height) })
	return n
}

// ImageTokens returns the prompt tokens of an image by OpenAI's high-detail
// formula: fit within 2048×2048, scale the short side down to 768, then 170 per
// 512×512 tile plus 85. An image of unknown size counts as 1024×1024 (765).
func ImageTokens(width, height int) int {
	w, h := float64(width), float64(height)
	if w <= 0 || h <= 0 {
		w, h = 1024, 1024
	}
	if m := max(w, h); m > 2048 {
		w, h = w*2048/m, h*2048/m
	}
	if s := min(w, h); s > 768 {
		w, h = w*768/s, h*768/s
	}
	tiles := math.Ceil(w/512) * math.Ceil(h/512)
	return 85 + 170*int(tiles)
}
