package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/attach/attachtest"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/tokenize"
)

func (s *server) attachments(p protocol, c cred) parleyv1connect.AttachmentServiceClient {
	hc := p.client()
	hc.Transport = credTransport{base: hc.Transport, c: c}
	return parleyv1connect.NewAttachmentServiceClient(hc, s.BaseURL, p.opts...)
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// topUp credits a's balance with usd dollars (parley admin topup).
func (s *server) topUp(t *testing.T, a *account, usd string) {
	t.Helper()
	s.admin(t, "topup", "--email", a.Email, "--usd", usd)
}

// createUpload registers data for upload.
func createUpload(t *testing.T, c parleyv1connect.AttachmentServiceClient, name, mime string, data []byte) *parleyv1.CreateUploadResponse {
	t.Helper()
	res, err := c.CreateUpload(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.CreateUploadRequest{
		Filename: name, MimeType: mime, SizeBytes: int64(len(data)), Sha256: sha(data),
	}))
	if err != nil {
		t.Fatalf("CreateUpload(%s): %v", name, err)
	}
	return res.Msg
}

// put sends body to an upload URL with the headers it asks for, changed by
// edit when not nil.
func (s *server) put(t *testing.T, up *parleyv1.CreateUploadResponse, body []byte, edit func(*http.Request)) int {
	t.Helper()
	u := up.GetUploadUrl()
	if strings.HasPrefix(u, "/") {
		u = s.BaseURL + u
	}
	req, err := http.NewRequest(up.GetMethod(), u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range up.GetHeaders() {
		req.Header.Set(k, v)
	}
	if edit != nil {
		edit(req)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Logf("PUT: %s %s", res.Status, msg)
	}
	return res.StatusCode
}

func complete(t *testing.T, c parleyv1connect.AttachmentServiceClient, id string) *parleyv1.Attachment {
	t.Helper()
	res, err := c.CompleteUpload(ctxTimeout(t, 60*time.Second), connect.NewRequest(&parleyv1.CompleteUploadRequest{AttachmentId: id}))
	if err != nil {
		t.Fatalf("CompleteUpload: %v", err)
	}
	return res.Msg.GetAttachment()
}

// upload creates, sends and completes one file.
func (s *server) upload(t *testing.T, c parleyv1connect.AttachmentServiceClient, name, mime string, data []byte) *parleyv1.Attachment {
	t.Helper()
	up := createUpload(t, c, name, mime, data)
	if code := s.put(t, up, data, nil); code != http.StatusOK {
		t.Fatalf("PUT %s: %d", name, code)
	}
	return complete(t, c, up.GetAttachmentId())
}

func attachmentPart(id string) *parleyv1.Part {
	return &parleyv1.Part{Kind: &parleyv1.Part_AttachmentId{AttachmentId: id}}
}

// TestAttachmentReachesTheWorkerFitted uploads a 2000×1000 image and a
// DOCX, uses them on both channels, and checks from the prompt's token
// count that the worker received the image fitted to 1024×512 and the
// document's text.
func TestAttachmentReachesTheWorkerFitted(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "pics@example.com")
	s.topup(t, a, "10")
	s.topUp(t, a, "1") // storing through an API key needs a positive balance
	ac := s.attachments(protocols[0], cred{bearer: a.Key})
	png := attachtest.PNG(2000, 1000)
	img := s.upload(t, ac, "wide.png", "image/png", png)
	if img.GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_READY || img.GetWidth() != 2000 || img.GetHeight() != 1000 || img.GetMimeType() != "image/png" {
		t.Fatalf("completed image: %v", img)
	}
	doc := s.upload(t, ac, "notes.docx", attach.DOCX, attachtest.DOCX("The rabbit is late."))
	if doc.GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_READY {
		t.Fatalf("completed document: %v", doc)
	}

	// What the worker must have counted: the text, the fitted image's
	// tiles, the document's text.
	tok := tokenize.Default()
	want := func(w, h int) int64 {
		return int64(llm.PromptTokens(tok, []llm.ChatMessage{{Role: "user", Parts: []llm.Part{
			{Text: "What is in these?"},
			{Image: &llm.Image{Width: w, Height: h}},
			{Document: &llm.Document{Filename: "notes.docx", Text: "The rabbit is late.\n\n"}},
		}}}))
	}
	if want(1024, 512) == want(2000, 1000) {
		t.Fatal("the test cannot tell a fitted image from the original")
	}
	parts := []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: "What is in these?"}}, attachmentPart(img.GetAttachmentId()), attachmentPart(doc.GetAttachmentId())}

	ctx := ctxTimeout(t, 30*time.Second)
	api := s.api(protocols[0], cred{bearer: a.Key})
	res, err := api.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{
		Model: "sim-small", MaxOutputTokens: 5,
		Messages: []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: parts}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Msg.GetUsage().GetPromptTokens(); got != want(1024, 512) {
		t.Fatalf("API prompt tokens %d, want %d (image fitted to 1024×512; unfitted would be %d)", got, want(1024, 512), want(2000, 1000))
	}

	web := s.api(protocols[0], cred{cookie: a.Cookie})
	stream, err := web.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", Parts: parts, MaxOutputTokens: 5}))
	if err != nil {
		t.Fatal(err)
	}
	var fin *parleyv1.GenerationFinished
	var convID string
	for stream.Receive() {
		if st := stream.Msg().GetEvent().GetStarted(); st != nil {
			convID = st.GetConversationId()
		}
		if f := stream.Msg().GetEvent().GetFinished(); f != nil {
			fin = f
		}
	}
	if stream.Err() != nil || fin == nil {
		t.Fatalf("SendMessage: %v", stream.Err())
	}
	if got := fin.GetUsage().GetPromptTokens(); got != want(1024, 512) {
		t.Fatalf("web prompt tokens %d, want %d", got, want(1024, 512))
	}
	msgs, err := web.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: convID}))
	if err != nil || len(msgs.Msg.GetMessages()) != 2 || msgs.Msg.GetMessages()[0].GetParts()[1].GetAttachmentId() != img.GetAttachmentId() {
		t.Fatalf("stored messages: %v, %v", msgs, err)
	}

	// The download URL returns the original bytes.
	got, err := ac.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: img.GetAttachmentId()}))
	if err != nil {
		t.Fatal(err)
	}
	dl, err := http.Get(s.BaseURL + got.Msg.GetDownloadUrl())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(dl.Body)
	dl.Body.Close()
	if dl.StatusCode != http.StatusOK || !bytes.Equal(body, png) || dl.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("download: %s, %d bytes", dl.Status, len(body))
	}
}

func TestUploadURLRefusals(t *testing.T) {
	s := startServer(t, append([]string{"--blob-url-expiry", "2s"}, fastAuth...)...)
	a := s.newAccount(t, "urls@example.com")
	s.topUp(t, a, "1") // storing through an API key needs a positive balance
	ac := s.attachments(protocols[0], cred{bearer: a.Key})
	data := []byte("a,b\n1,2\n")

	t.Run("tampered", func(t *testing.T) {
		up := createUpload(t, ac, "t.csv", "text/csv", data)
		for name, edit := range map[string]func(*http.Request){
			"size": func(r *http.Request) { r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "n=8", "n=9", 1) },
			"type": func(r *http.Request) {
				r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "t=text%2Fcsv", "t=text%2Fhtml", 1)
			},
			"key":       func(r *http.Request) { r.URL.Path += "x" },
			"signature": func(r *http.Request) { r.URL.RawQuery = r.URL.RawQuery[:len(r.URL.RawQuery)-3] + "AAA" },
		} {
			if code := s.put(t, up, data, edit); code != http.StatusForbidden {
				t.Errorf("%s tampered: %d, want 403", name, code)
			}
		}
		if code := s.put(t, up, data, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }); code != http.StatusBadRequest {
			t.Errorf("another Content-Type: %d, want 400", code)
		}
		if code := s.put(t, up, append(data, 'x'), nil); code != http.StatusBadRequest {
			t.Errorf("another length: %d, want 400", code)
		}
	})
	t.Run("replayed", func(t *testing.T) {
		up := createUpload(t, ac, "r.csv", "text/csv", data)
		if code := s.put(t, up, data, nil); code != http.StatusOK {
			t.Fatalf("first PUT: %d", code)
		}
		if code := s.put(t, up, data, nil); code != http.StatusForbidden {
			t.Fatalf("replayed PUT: %d, want 403", code)
		}
		if at := complete(t, ac, up.GetAttachmentId()); at.GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_READY {
			t.Fatalf("after the refused replay: %v", at)
		}
	})
	t.Run("expired", func(t *testing.T) {
		up := createUpload(t, ac, "e.csv", "text/csv", data)
		if d := time.Until(up.GetExpiresAt().AsTime()); d > 3*time.Second {
			t.Fatalf("upload URL lives %v", d)
		}
		time.Sleep(time.Until(up.GetExpiresAt().AsTime()) + 100*time.Millisecond)
		if code := s.put(t, up, data, nil); code != http.StatusForbidden {
			t.Fatalf("expired PUT: %d, want 403", code)
		}
		_, err := ac.CompleteUpload(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.CompleteUploadRequest{AttachmentId: up.GetAttachmentId()}))
		wantCode(t, "CompleteUpload with nothing uploaded", err, connect.CodeFailedPrecondition)
	})
}

// blobPath is where the embedded store keeps an attachment's bytes.
func (s *server) blobPath(a *account, id string) string {
	return filepath.Join(s.DataDir, "blobs", "attachments", a.User.GetUserId(), id)
}

func TestUploadsRefusedWithAReason(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "bad@example.com")
	s.topUp(t, a, "1") // storing through an API key needs a positive balance
	ac := s.attachments(protocols[1], cred{bearer: a.Key})
	pdf := attachtest.PDF("Hello PDF")

	t.Run("wrong hash", func(t *testing.T) {
		data := []byte("hello")
		up := createUpload(t, ac, "h.txt", "text/plain", []byte("hellO"))
		if code := s.put(t, up, data, nil); code != http.StatusOK {
			t.Fatalf("PUT: %d", code)
		}
		at := complete(t, ac, up.GetAttachmentId())
		if at.GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_FAILED || !strings.Contains(at.GetFailureReason(), "SHA-256 is "+sha(data)) {
			t.Fatalf("%v", at)
		}
		if _, err := os.Stat(s.blobPath(a, at.GetAttachmentId())); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a failed upload's bytes are kept: %v", err)
		}
	})
	t.Run("wrong size", func(t *testing.T) {
		// An object store that took a body of another length (the
		// embedded one refuses it at the PUT) is caught on completion.
		up := createUpload(t, ac, "s.txt", "text/plain", []byte("hello"))
		path := s.blobPath(a, up.GetAttachmentId())
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("hello!"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := complete(t, ac, up.GetAttachmentId())
		if at.GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_FAILED || at.GetFailureReason() != "the upload is 6 bytes, not the declared 5" {
			t.Fatalf("%v", at)
		}
	})
	for _, tt := range []struct {
		name, file, mime string
		data             []byte
		reason           string
	}{
		{"png claiming 100,000×100,000", "huge.png", "image/png", attachtest.HugePNG(100_000, 100_000), "the image is 100000×100000 pixels, over the limit of 50000000 pixels"},
		{"docx zip bomb", "bomb.docx", attach.DOCX, attachtest.DOCXBomb(64 << 20), "over the limit of 100 times (a zip bomb?)"},
		{"truncated pdf", "cut.pdf", "application/pdf", pdf[:len(pdf)/2], "the PDF is damaged or unreadable"},
		{"magic bytes contradict the type", "fake.jpg", "image/jpeg", pdf, "the content is a PDF document (application/pdf), not a JPEG image (image/jpeg) as declared"},
		{"unaccepted content", "prog.txt", "text/plain", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00"), "the content is application/octet-stream, which is not accepted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at := s.upload(t, ac, tt.file, tt.mime, tt.data)
			if at.GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_FAILED || !strings.Contains(at.GetFailureReason(), tt.reason) {
				t.Fatalf("got %v, want failed: %q", at, tt.reason)
			}
			// Completing again returns it as it is; using it is refused.
			if again := complete(t, ac, at.GetAttachmentId()); again.GetFailureReason() != at.GetFailureReason() {
				t.Fatalf("second CompleteUpload: %v", again)
			}
			_, err := s.api(protocols[1], cred{bearer: a.Key}).Chat.Complete(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.CompleteRequest{
				Model: "sim-small", Messages: []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{attachmentPart(at.GetAttachmentId())}}},
			}))
			wantCode(t, "a failed attachment in a message", err, connect.CodeFailedPrecondition)
		})
	}
	t.Run("unaccepted declared type", func(t *testing.T) {
		_, err := ac.CreateUpload(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.CreateUploadRequest{
			Filename: "a.zip", MimeType: "application/zip", SizeBytes: 10, Sha256: sha([]byte("x")),
		}))
		wantCode(t, "CreateUpload of a zip", err, connect.CodeInvalidArgument)
		if !strings.Contains(err.Error(), `"application/zip" is not accepted`) {
			t.Fatalf("error %v does not name the type", err)
		}
	})
	t.Run("over the size limit", func(t *testing.T) {
		_, err := ac.CreateUpload(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.CreateUploadRequest{
			Filename: "big.png", MimeType: "image/png", SizeBytes: 20_000_001, Sha256: sha([]byte("x")),
		}))
		wantCode(t, "CreateUpload of a 20 MB + 1 image", err, connect.CodeInvalidArgument)
	})
}

func TestAttachmentQuotaIsExact(t *testing.T) {
	s := startServer(t, append([]string{"--attachment-quota-bytes", "1000"}, fastAuth...)...)
	a := s.newAccount(t, "quota@example.com")
	s.topUp(t, a, "1") // storing through an API key needs a positive balance
	ac := s.attachments(protocols[0], cred{bearer: a.Key})
	create := func(size int) (*parleyv1.CreateUploadResponse, error) {
		res, err := ac.CreateUpload(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.CreateUploadRequest{
			Filename: "q.txt", MimeType: "text/plain", SizeBytes: int64(size), Sha256: sha(bytes.Repeat([]byte("q"), size)),
		}))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	first, err := create(600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := create(401); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("600 + 401 of 1000: %v, want resource_exhausted", err)
	}
	second, err := create(400)
	if err != nil {
		t.Fatalf("600 + 400 of 1000: %v", err)
	}
	if _, err := create(1); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("1000 + 1 of 1000: %v, want resource_exhausted", err)
	}
	// A failed upload frees its share; so does a deletion.
	if code := s.put(t, second, bytes.Repeat([]byte("x"), 400), nil); code != http.StatusOK {
		t.Fatal(code)
	}
	if at := complete(t, ac, second.GetAttachmentId()); at.GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_FAILED {
		t.Fatalf("%v", at)
	}
	if _, err := create(400); err != nil {
		t.Fatalf("after a failure freed 400: %v", err)
	}
	if _, err := ac.DeleteAttachment(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.DeleteAttachmentRequest{AttachmentId: first.GetAttachmentId()})); err != nil {
		t.Fatal(err)
	}
	if _, err := create(600); err != nil {
		t.Fatalf("after a deletion freed 600: %v", err)
	}
	// The deleted upload's URL, still unexpired, stores nothing outside
	// the quota.
	if code := s.put(t, first, bytes.Repeat([]byte("q"), 600), nil); code != http.StatusForbidden {
		t.Fatalf("PUT to a deleted upload's URL: %d, want 403", code)
	}
}

func TestDeleteRemovesTheBlob(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "del@example.com")
	ac := s.attachments(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 20*time.Second)
	at := s.upload(t, ac, "d.md", "text/markdown", []byte("# Gone soon"))
	got, err := ac.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: at.GetAttachmentId()}))
	if err != nil {
		t.Fatal(err)
	}
	path := s.blobPath(a, at.GetAttachmentId())
	for _, p := range []string{path, path + ".prepared"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("before deletion: %v", err)
		}
	}
	if _, err := ac.DeleteAttachment(ctx, connect.NewRequest(&parleyv1.DeleteAttachmentRequest{AttachmentId: at.GetAttachmentId()})); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + ".prepared"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after deletion %s: %v", p, err)
		}
	}
	if res, err := http.Get(s.BaseURL + got.Msg.GetDownloadUrl()); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("download after deletion: %v %v", res.Status, err)
	}
	_, err = ac.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: at.GetAttachmentId()}))
	wantCode(t, "GetAttachment after deletion", err, connect.CodeNotFound)
	_, err = ac.DeleteAttachment(ctx, connect.NewRequest(&parleyv1.DeleteAttachmentRequest{AttachmentId: at.GetAttachmentId()}))
	wantCode(t, "DeleteAttachment twice", err, connect.CodeNotFound)
	err = refusedStream(s.api(protocols[0], cred{cookie: a.Cookie}).Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{
		Parts: []*parleyv1.Part{attachmentPart(at.GetAttachmentId())},
	})))
	wantCode(t, "SendMessage with a deleted attachment", err, connect.CodeNotFound)
}

// victimAttachment gives B a ready attachment.
func victimAttachment(t *testing.T, s *server, b *account) string {
	t.Helper()
	return s.upload(t, s.attachments(protocols[0], cred{cookie: b.Cookie}), "secret.txt", "text/plain", []byte("B's secret")).GetAttachmentId()
}

func attachmentIntact(ctx context.Context, b clients, victim *account) error {
	res, err := b.Attach.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: victim.AttachmentID}))
	if err != nil {
		return err
	}
	if res.Msg.GetAttachment().GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_READY {
		return errLeak("B's attachment changed")
	}
	return nil
}

// notFound passes a not_found refusal on and calls anything else a leak:
// another user's attachment must look like no attachment at all.
func notFound(err error, what string) error {
	if connect.CodeOf(err) == connect.CodeNotFound {
		return err
	}
	return errLeak(what + ": " + errString(err))
}

func errString(err error) string {
	if err == nil {
		return "succeeded"
	}
	return err.Error()
}

func init() {
	idorCases = append(idorCases,
		idorCase{
			name: "AttachmentService.GetAttachment of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Attach.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: b.AttachmentID}))
				return notFound(err, "read B's attachment")
			},
		},
		idorCase{
			name: "AttachmentService.CompleteUpload of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Attach.CompleteUpload(ctx, connect.NewRequest(&parleyv1.CompleteUploadRequest{AttachmentId: b.AttachmentID}))
				return notFound(err, "completed B's attachment")
			},
			intact: attachmentIntact,
		},
		idorCase{
			name: "AttachmentService.DeleteAttachment of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Attach.DeleteAttachment(ctx, connect.NewRequest(&parleyv1.DeleteAttachmentRequest{AttachmentId: b.AttachmentID}))
				return notFound(err, "deleted B's attachment")
			},
			intact: attachmentIntact,
		},
		idorCase{
			name: "ConversationService.SendMessage with B's attachment",
			attempt: func(ctx context.Context, a clients, b *account) error {
				err := refusedStream(a.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Parts: []*parleyv1.Part{attachmentPart(b.AttachmentID)}})))
				return notFound(err, "sent B's attachment")
			},
		},
		idorCase{
			name: "ChatService.Complete with B's attachment",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", MaxOutputTokens: 5,
					Messages: []*parleyv1.Message{{Role: parleyv1.Role_ROLE_USER, Parts: []*parleyv1.Part{attachmentPart(b.AttachmentID)}}}}))
				return notFound(err, "used B's attachment")
			},
		},
	)
}
