package e2e

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// declare registers an upload of size bytes (the quota counts the declared
// size at once; no bytes need to be sent).
func declare(t *testing.T, c parleyv1connect.AttachmentServiceClient, name, mime string, size int64) error {
	t.Helper()
	_, err := c.CreateUpload(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.CreateUploadRequest{
		Filename: name, MimeType: mime, SizeBytes: size, Sha256: strings.Repeat("ab", 32),
	}))
	return err
}

// A free account with a $0 balance stores at most its tier's quota (50 MB
// by default, not the 25 GB every account had), and an API key with a $0
// balance stores nothing until the balance is topped up.
func TestStorageIsBoundedByTierAndBalance(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "free-storage@example.com")
	web := s.attachments(protocols[0], cred{cookie: a.Cookie})
	if err := declare(t, web, "a.pdf", "application/pdf", 40_000_000); err != nil {
		t.Fatalf("40 MB within the free tier's 50 MB: %v", err)
	}
	err := declare(t, web, "b.pdf", "application/pdf", 10_000_001)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "quota of 50000000 bytes (the free tier's)") {
		t.Fatalf("past the free tier's quota: %v", err)
	}
	if err := declare(t, web, "c.pdf", "application/pdf", 10_000_000); err != nil {
		t.Fatalf("exactly up to the quota: %v", err)
	}

	key := s.attachments(protocols[0], cred{bearer: a.Key})
	err = declare(t, key, "k.txt", "text/plain", 10)
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "positive balance") {
		t.Fatalf("an API key with a $0 balance: %v", err)
	}
	b := s.newAccount(t, "paid-storage@example.com")
	s.topUp(t, b, "1")
	if err := declare(t, s.attachments(protocols[0], cred{bearer: b.Key}), "k.txt", "text/plain", 10); err != nil {
		t.Fatalf("an API key with a positive balance: %v", err)
	}
}

// Under the free-space watermark of the data directory's filesystem,
// uploads are refused before anything is registered or written.
func TestUploadsRefusedUnderTheFreeSpaceWatermark(t *testing.T) {
	s := startServer(t, append([]string{"--attachment-min-free-bytes", "4611686018427387904"}, fastAuth...)...)
	a := s.newAccount(t, "full-disk@example.com")
	web := s.attachments(protocols[0], cred{cookie: a.Cookie})
	err := declare(t, web, "a.txt", "text/plain", 10)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "low on storage space") {
		t.Fatalf("with the disk under the watermark: %v", err)
	}
	// Nothing half-written: no blob, and the quota is untouched (the whole
	// free quota can still be declared once space is back).
	entries, _ := os.ReadDir(filepath.Join(s.DataDir, "blobs"))
	for _, e := range entries {
		if sub, _ := os.ReadDir(filepath.Join(s.DataDir, "blobs", e.Name())); len(sub) > 0 {
			t.Errorf("blobs written under the watermark: %s", e.Name())
		}
	}
	// (The log is read from the process's stderr as it comes.)
	waitFor(t, 5*time.Second, "the refusal logged for the operator", func() bool { return strings.Contains(s.Logs(), "free-space watermark") })
}

// An upload no message references within --attachment-unreferenced-ttl is
// deleted, bytes and record, and its quota freed; one a message references
// (a web message, or a stored response's input) stays and still downloads.
func TestUnreferencedUploadsExpire(t *testing.T) { testUnreferencedUploadsExpire(t) }

// The same with the attachment records in PostgreSQL (and the messages in
// Cassandra when scripts/services.sh runs it).
func TestUnreferencedUploadsExpireScaleMode(t *testing.T) {
	scaleMode(t)
	testUnreferencedUploadsExpire(t)
}

func testUnreferencedUploadsExpire(t *testing.T) {
	const keptText, chainText, lostText = "The kept notes.", "The chain's notes.", "The lost notes."
	s := startServer(t, append([]string{"--attachment-unreferenced-ttl", "5s", "--attachment-sweep-interval", "200ms",
		"--attachment-quota-bytes", strconv.Itoa(len(keptText) + len(chainText) + len(lostText))}, fastAuth...)...)
	a := s.newAccount(t, "expiry@example.com")
	ac := s.attachments(protocols[0], cred{cookie: a.Cookie})
	web := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 60*time.Second)

	// kept is referenced by a message at once, well within its TTL.
	kept := s.upload(t, ac, "kept.txt", "text/plain", []byte(keptText))
	stream, err := web.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", MaxOutputTokens: 5,
		Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: "Summarise this."}}, attachmentPart(kept.GetAttachmentId())}}))
	if err != nil {
		t.Fatal(err)
	}
	for stream.Receive() {
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	// chain is referenced by a stored response (the Responses API).
	s.topup(t, a, "1")
	chain := s.upload(t, s.attachments(protocols[0], cred{bearer: a.Key}), "chain.txt", "text/plain", []byte(chainText))
	createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "max_output_tokens": 5, "input": []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "Read it."},
			map[string]any{"type": "input_file", "file_id": chain.GetAttachmentId()},
		}},
	}})
	lost := s.upload(t, ac, "lost.txt", "text/plain", []byte(lostText))
	got, err := ac.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: lost.GetAttachmentId()}))
	if err != nil {
		t.Fatal(err)
	}
	lostURL := got.Msg.GetDownloadUrl()
	if err := declare(t, ac, "more.txt", "text/plain", 1); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("a byte over the quota before the sweep: %v", err)
	}

	waitMetric(t, s, "parley_attachments_unreferenced_deleted_total", func(v float64) bool { return v >= 1 })
	if v := scrape(t, s, "parley_attachments_unreferenced_deleted_bytes_total"); v != float64(len(lostText)) {
		t.Errorf("deleted bytes metric %v, want %d", v, len(lostText))
	}

	// lost is gone: its record, its bytes on disk, its download URL, and a
	// message naming it is refused.
	_, err = ac.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: lost.GetAttachmentId()}))
	if connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "attachment not found") {
		t.Fatalf("GetAttachment of the expired upload: %v, want not_found", err)
	}
	// (The embedded blob store answers "no such blob"; S3 "NoSuchKey".)
	if res := httpGet(t, s.url(lostURL)); res.code != http.StatusNotFound || !(strings.Contains(res.body, "no such blob") || strings.Contains(res.body, "NoSuchKey")) {
		t.Errorf("download of the expired upload: %d %s, want 404 no such blob", res.code, res.body)
	}
	// (With S3 the bytes are not on disk; the presigned URL's 404 above
	// checked the object is gone.)
	userDir := filepath.Join(s.DataDir, "blobs", "attachments")
	for _, f := range blobFiles(t, userDir) {
		if strings.Contains(f, lost.GetAttachmentId()) {
			t.Errorf("blob of the expired upload left on disk: %s", f)
		}
	}
	stream, err = web.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", MaxOutputTokens: 5,
		Parts: []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: "And this?"}}, attachmentPart(lost.GetAttachmentId())}}))
	if err == nil {
		for stream.Receive() {
		}
		err = stream.Err()
	}
	if connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "attachment not found") {
		t.Fatalf("a message naming the expired upload: %v, want not_found", err)
	}

	// kept stays, long past its TTL, and downloads whole.
	time.Sleep(time.Second)
	got, err = ac.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: kept.GetAttachmentId()}))
	if err != nil {
		t.Fatalf("GetAttachment of the referenced upload: %v", err)
	}
	if res := httpGet(t, s.url(got.Msg.GetDownloadUrl())); res.code != http.StatusOK || res.body != keptText {
		t.Fatalf("download of the referenced upload: %d %q", res.code, res.body)
	}
	if _, err := ac.GetAttachment(ctx, connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: chain.GetAttachmentId()})); err != nil {
		t.Fatalf("GetAttachment of the upload a stored response references: %v", err)
	}
	// The expired upload's bytes left the quota.
	if err := declare(t, ac, "more.txt", "text/plain", int64(len(lostText))); err != nil {
		t.Fatalf("the freed quota: %v", err)
	}
}

// url resolves a download URL: the embedded blob store's are relative to
// the gateway, S3's presigned ones are absolute.
func (s *server) url(u string) string {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u
	}
	return s.BaseURL + u
}

type httpResult struct {
	code int
	body string
}

func httpGet(t *testing.T, url string) httpResult {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return httpResult{res.StatusCode, string(b)}
}

// blobFiles lists the files under dir.
func blobFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && os.Getenv("PARLEY_S3_ENDPOINT") != "") {
		t.Fatal(err)
	}
	return out
}
