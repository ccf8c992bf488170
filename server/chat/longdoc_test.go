package chat

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
)

// filler is n sentences of ordinary words, none of them the needle's.
func filler(rng *rand.Rand, n int) string {
	words := strings.Fields("river stone garden morning letter window orchard market silver winter bridge meadow harbor lantern " +
		"candle forest ribbon pebble quiet gentle yellow narrow distant sudden careful wooden golden")
	var b strings.Builder
	for range n {
		for j := range 12 {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		b.WriteString(". ")
	}
	return b.String()
}

const needle = "The lighthouse keeper's vault code is 7481, written under the third stair."

// A document many times the room keeps the passage that answers the
// message (near its end) and not the passages that do not match; the cut document
// fits the room and says what it is; the message given is left whole.
func TestRetrieveFromDocumentsKeepsTheAnswer(t *testing.T) {
	tok := tokenize.Default()
	rng := rand.New(rand.NewPCG(1, 2))
	text := filler(rng, 3000) + needle + " " + filler(rng, 300)
	msg := llm.ChatMessage{Role: "user", Parts: []llm.Part{
		{Text: "What is the vault code of the lighthouse keeper?"},
		{Document: &llm.Document{Filename: "notes.txt", MimeType: "text/plain", Text: text}},
	}}
	whole := tok.Count(text)
	if whole < 30_000 {
		t.Fatalf("the document is only %d tokens", whole)
	}
	cut, ok := retrieveFromDocuments(tok, msg, 1200)
	if !ok {
		t.Fatal("nothing fits 1,200 tokens")
	}
	got := cut.Parts[1].Document.Text
	if n := tok.Count(got); n > 1200 {
		t.Fatalf("the cut document is %d tokens, over the room of 1200", n)
	}
	if !strings.Contains(got, "vault code is 7481") {
		t.Fatalf("the answer's passage was not kept:\n%.600s", got)
	}
	if !strings.HasPrefix(got, fmt.Sprintf("[notes.txt is %d tokens", whole)) || !strings.Contains(got, "[…]") {
		t.Fatalf("no note or no gap marks:\n%.300s", got)
	}
	if middle := text[len(text)/2 : len(text)/2+200]; strings.Contains(got, middle) {
		t.Fatal("a passage that does not match was kept")
	}
	if cut.Parts[0].Text != msg.Parts[0].Text || cut.Parts[1].Document.Filename != "notes.txt" {
		t.Fatalf("the message's other parts changed: %+v", cut.Parts[0])
	}
	if msg.Parts[1].Document.Text != text {
		t.Fatal("the message given was changed")
	}
}

// With nothing to match (a document sent alone), the beginning is kept,
// in order; two documents share the room; a room no passage fits is
// refused.
func TestRetrieveFromDocumentsWithoutAQuestion(t *testing.T) {
	tok := tokenize.Default()
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := filler(rng, 800), filler(rng, 800)
	msg := llm.ChatMessage{Role: "user", Parts: []llm.Part{
		{Document: &llm.Document{Filename: "a.txt", Text: a}},
		{Document: &llm.Document{Filename: "b.txt", Text: b}},
	}}
	cut, ok := retrieveFromDocuments(tok, msg, 2000)
	if !ok {
		t.Fatal("nothing fits 2,000 tokens")
	}
	first := cut.Parts[0].Document.Text
	body := strings.SplitN(first, "]\n", 2)[1]
	if !strings.HasPrefix(body, a[:500]) {
		t.Fatalf("a.txt's beginning was not kept: %.200s", body)
	}
	total := tok.Count(first) + tok.Count(cut.Parts[1].Document.Text)
	if total > 2000 {
		t.Fatalf("the documents take %d tokens, over 2000", total)
	}
	if _, ok := retrieveFromDocuments(tok, msg, 100); ok {
		t.Fatal("a room of 100 tokens took passages of 200")
	}
	if _, ok := retrieveFromDocuments(tok, llm.ChatMessage{Role: "user", Parts: []llm.Part{{Text: "hi"}}}, 1000); ok {
		t.Fatal("a message with no document was retrieved from")
	}
}
