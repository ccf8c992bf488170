package chat

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/attach/attachtest"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/llm"
)

// withInline gives the rig's core the attachment checker of inline parts.
func (r *rig) withInline() *rig {
	r.core.Attachments = &attach.Service{Checker: attach.NewChecker(attach.Limits{})}
	return r
}

// deferredRequest is a request whose one message holds the given inline
// file (deferred, as the surfaces hand it over) after some text.
func deferredRequest(kind attach.Kind, data []byte, mime string) Request {
	req := Request{Request: llm.Request{Model: "sim-small", Messages: []llm.ChatMessage{{Role: "user", Parts: []llm.Part{{Text: "Look:"}}}}}, MaxOutputTokens: 8}
	req.Messages[0].Parts = append(req.Messages[0].Parts, req.Defer(0, 1, Deferred{Field: "messages[0].parts[1].file", Kind: kind, Data: data, MIME: mime, Filename: "f"}))
	return req
}

// TestTheHoldComesBeforeTheWork checks the order of cheapness: a key that
// cannot pay is refused for its balance before its image is decoded or its
// prompt counted — a damaged image or a prompt too long for the window,
// which only that work would find, is refused for balance — while a key
// that can pay gets the work's own refusal, and its hold back.
func TestTheHoldComesBeforeTheWork(t *testing.T) {
	damaged := deferredRequest(attach.KindImage, []byte("\x89PNG\r\n\x1a\nnot really"), "image/png")
	long := Request{Request: llm.Request{Model: "sim-small", Messages: userMsg(strings.Repeat("many different words here ", 5000))}, MaxOutputTokens: 8}
	for _, tc := range []struct {
		name string
		req  Request
		want string // the funded key's refusal
	}{
		{"a damaged image", damaged, "messages[0].parts[1].file.data"},
		{"a prompt over the window, counted only after the hold", long, "context window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broke := newRig(t, 0).withInline()
			_, err := broke.core.Complete(broke.ctx(), &tc.req, func(*parleyv1.GenerationEvent) error { return nil })
			if !apierr.Detail(err, &parleyv1.InsufficientBalance{}) {
				t.Fatalf("no balance: %v, want insufficient balance before the work", err)
			}
			funded := newRig(t, 1e9).withInline()
			_, err = funded.core.Complete(funded.ctx(), &tc.req, func(*parleyv1.GenerationEvent) error { return nil })
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("funded: %v, want invalid_argument about %s", err, tc.want)
			}
			bal, err := funded.core.Billing.Balance(funded.ctx(), funded.user)
			if err != nil || bal.ReservedNanos != 0 || bal.AvailableNanos != 1e9 {
				t.Fatalf("after the refusal: %+v %v, want the hold released", bal, err)
			}
		})
	}
}

// TestHeldBoundCoversTheCount checks that what a deferred request is held
// at bounds what it then counts.
func TestHeldBoundCoversTheCount(t *testing.T) {
	r := newRig(t, 1e9).withInline()
	for _, req := range []Request{
		deferredRequest(attach.KindImage, attachtest.PNG(3000, 1000), "image/png"),
		deferredRequest(attach.KindImage, attachtest.GIF(40, 40), "image/gif"),
		deferredRequest(attach.KindDocument, attachtest.DOCX("Some words", "& more words"), attach.DOCX),
		deferredRequest(attach.KindDocument, attachtest.PDFTextBomb(64<<20), "application/pdf"),
		{Request: llm.Request{Model: "sim-small", Messages: userMsg(strings.Repeat("🐇 lorem ipsum ", 6000))}},
	} {
		bound, exact := r.core.promptBound(&req)
		if err := r.core.prepare(r.ctx(), auth.Principal{UserID: r.user}, &req); err != nil {
			t.Fatal(err)
		}
		wreq := llm.Request{Messages: req.Messages}
		if n := llm.RequestPromptTokens(r.core.Tokens, &wreq); n > bound || exact {
			t.Errorf("counted %d tokens, bound %d (exact %v)", n, bound, exact)
		}
	}
}

func TestPartBudgets(t *testing.T) {
	r := newRig(t, 1e9).withInline()
	r.core.Budgets = Budgets{PartsPerMessage: 4, PartsPerRequest: 6, Attachments: 2, AttachmentBytes: 100}
	text := llm.Part{Text: "x"}
	many := func(n int) llm.ChatMessage {
		return llm.ChatMessage{Role: "user", Parts: slicesRepeat(text, n)}
	}
	files := deferredRequest(attach.KindDocument, []byte("a small note"), "text/plain")
	files.Messages[0].Parts = append(files.Messages[0].Parts, files.Defer(0, 2, Deferred{Field: "f2", Kind: attach.KindDocument, Data: []byte("b"), MIME: "text/plain"}))
	files.Messages[0].Parts = append(files.Messages[0].Parts, files.Defer(0, 3, Deferred{Field: "f3", Kind: attach.KindDocument, Data: []byte("c"), MIME: "text/plain"}))
	big := deferredRequest(attach.KindDocument, []byte(strings.Repeat("a", 101)), "text/plain")
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"parts of a message", Request{Request: llm.Request{Model: "sim-small", Messages: []llm.ChatMessage{many(5)}}}, "5 parts, over the limit of 4 per message"},
		{"parts of a request", Request{Request: llm.Request{Model: "sim-small", Messages: []llm.ChatMessage{many(4), many(3)}}}, "over 6 parts in all"},
		{"attachments", files, "3 images, documents and attachments, over the limit of 2"},
		{"attachment bytes", big, "over 100 bytes in all"},
	} {
		_, err := r.core.Complete(r.ctx(), &tc.req, func(*parleyv1.GenerationEvent) error { return nil })
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func slicesRepeat(p llm.Part, n int) []llm.Part {
	out := make([]llm.Part, n)
	for i := range out {
		out[i] = p
	}
	return out
}
