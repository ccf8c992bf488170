package sim

import (
	"testing"

	"github.com/parleyhq/parley/server/llm"
)

func TestImageTokens(t *testing.T) {
	tests := []struct{ w, h, want int }{
		{512, 512, 255},    // one tile
		{1024, 1024, 765},  // short side to 768: 2×2 tiles
		{2048, 4096, 1105}, // OpenAI's worked example: fit 2048, then 768×1536: 2×3 tiles
		{4096, 8192, 1105},
		{1920, 1080, 1105}, // 1365×768: 3×2 tiles
		{100, 30, 255},     // small images are not enlarged
		{0, 0, 765},        // unknown size: as 1024×1024
	}
	for _, tt := range tests {
		if got := llm.ImageTokens(tt.w, tt.h); got != tt.want {
			t.Errorf("ImageTokens(%d, %d) = %d, want %d", tt.w, tt.h, got, tt.want)
		}
	}
}

func TestPromptTokens(t *testing.T) {
	e := New(Config{})
	img := &llm.Image{Data: []byte("png bytes"), MimeType: "image/png", Width: 512, Height: 512}
	msgs := []llm.ChatMessage{
		{Role: "system", Parts: []llm.Part{{Text: "Be brief."}}},
		{Role: "user", Parts: []llm.Part{
			{Text: "What is in this picture and this file?"},
			{Image: img},
			{Document: &llm.Document{Filename: "notes.txt", MimeType: "text/plain", Text: "The rabbit is late."}},
		}},
	}
	got := llm.PromptIDs(e.tok, msgs)
	before := e.tok.Count("<|system|>\nBe brief.\n<|user|>\nWhat is in this picture and this file?")
	after := e.tok.Count("<document name=\"notes.txt\">\nThe rabbit is late.\n</document>\n\n<|assistant|>\n")
	if want := before + 255 + after; len(got) != want {
		t.Fatalf("%d prompt tokens, want %d text + 255 image", len(got), want)
	}
	if n := llm.PromptTokens(e.tok, msgs); n != len(got) {
		t.Fatalf("llm.PromptTokens = %d, PromptIDs gives %d: the gateway's count and the sim's prompt disagree", n, len(got))
	}
	// The image's tokens depend on its bytes, so a different image breaks the prefix.
	other := *img
	other.Data = []byte("other bytes")
	msgs[1].Parts[1].Image = &other
	got2 := llm.PromptIDs(e.tok, msgs)
	if got[before] == got2[before] || len(got) != len(got2) {
		t.Fatal("different images render the same tokens")
	}

	o, _ := generate(t, e, nil, llm.Request{Model: "sim-small", Messages: msgs})
	if o.res.Usage.PromptTokens != len(got2) {
		t.Fatalf("usage reports %d prompt tokens, want %d", o.res.Usage.PromptTokens, len(got2))
	}
}
