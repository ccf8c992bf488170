package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/tokenize"
)

// A web user attaches a document eight times the model's window to one
// message: it is neither cut at its start nor refused. The model (an
// upstream that records what it is sent, behind an openai-engine worker)
// receives the passage that answers the question, from near the document's
// end, under a note saying the document was retrieved from, and not the
// passages that do not match; the prompt fits the window; the stored
// message keeps the whole attachment; a follow-up in the conversation
// still fits (the long turn is dropped from its history).
func TestLongDocumentIsRetrievedFrom(t *testing.T) {
	up := startReasoningUpstream(t)
	w := startWorker(t, "--engine", "openai", "--upstream", up.URL)
	file := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(file, []byte(`models:
- id: textonly
  display_name: Narrow
  context_window: 4096
  max_output_tokens: 256
  modalities: [text, document]
  tier_limits:
    free: {requests: 100, input_tokens: 1000000, output_tokens: 100000, window: 1h}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, append(fastAuth, "--workers", w.Addr(), "--models-file", file)...)
	a := s.newAccount(t, "longdoc@example.com")
	waitFor(t, 10*time.Second, "the worker's models", func() bool {
		res, _ := s.getRaw(t, "/v1/models/textonly", map[string]string{"Authorization": "Bearer " + a.Key})
		return res.StatusCode == 200
	})

	words := strings.Fields("river stone garden morning letter window orchard market silver winter bridge meadow harbor lantern candle forest")
	var doc strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&doc, "Entry %d: the %s by the %s was %s and %s. ", i, words[i%16], words[(i*7)%16], words[(i*3)%16], words[(i*5)%16])
		if i == 2800 {
			doc.WriteString("The lighthouse keeper's vault code is 7481, written under the third stair. ")
		}
	}
	text := doc.String()
	whole := tokenize.Default().Count(text)
	if whole < 8*4096 {
		t.Fatalf("the document is only %d tokens", whole)
	}

	ctx := ctxTimeout(t, 60*time.Second)
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	att := s.upload(t, s.attachments(protocols[0], cred{cookie: a.Cookie}), "ledger.txt", "text/plain", []byte(text))
	parts := append(textPart("What is the vault code of the lighthouse keeper?"), attachmentPart(att.GetAttachmentId()))
	st, answer, fin := send(t, ctx, c, &parleyv1.SendMessageRequest{Model: "textonly", Parts: parts})
	if fin.GetErrorMessage() != "" || answer == "" {
		t.Fatalf("the answer: %q, error %v", answer, fin.GetErrorMessage())
	}

	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	raw := up.lastBody()
	if err := json.Unmarshal([]byte(raw), &body); err != nil {
		t.Fatalf("the upstream's request: %v", err)
	}
	sent := ""
	for _, m := range body.Messages {
		sent += string(m.Content)
	}
	switch {
	case !strings.Contains(sent, "vault code is 7481"):
		t.Fatalf("the passage that answers was not sent:\n%.2000s", sent)
	case !strings.Contains(sent, fmt.Sprintf("ledger.txt is %d tokens", whole)):
		t.Fatalf("no note that the document was retrieved from:\n%.1000s", sent)
	case strings.Contains(sent, "Entry 1500:"):
		t.Fatalf("a passage from the middle that does not match was sent")
	}
	if n := tokenize.Default().Count(sent); n > 4096-256 {
		t.Fatalf("the upstream was sent %d tokens of text, over the window less the answer", n)
	}

	// The stored question keeps the whole attachment.
	msgs, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: st.GetConversationId()}))
	if err != nil {
		t.Fatal(err)
	}
	if got := msgs.Msg.GetMessages(); len(got) != 2 || got[0].GetParts()[1].GetAttachmentId() != att.GetAttachmentId() {
		t.Fatalf("the stored conversation: %v", got)
	}
	// A follow-up fits: the long turn is history, dropped.
	_, _, fin = send(t, ctx, c, &parleyv1.SendMessageRequest{Model: "textonly", ConversationId: st.GetConversationId(), Parts: textPart("Thanks. Anything else?")})
	if fin.GetErrorMessage() != "" {
		t.Fatalf("the follow-up: %v", fin.GetErrorMessage())
	}
	if strings.Contains(up.lastBody(), "Entry 1:") {
		t.Fatal("the follow-up was sent the long document")
	}
}
