package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// fileJSON is OpenAI's file object as /v1/files answers it.
type fileJSON struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int64   `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

// filesCall sends one request to /v1/files… with key; form, when set, is the
// multipart body's fields (the "file" part from file, named name, with
// mime as its Content-Type).
func filesCall(t *testing.T, s *server, key, method, path string, form map[string]string, name, mime string, file []byte) (int, []byte) {
	t.Helper()
	var body io.Reader
	var ctype string
	if form != nil || file != nil {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for k, v := range form {
			_ = w.WriteField(k, v)
		}
		if file != nil {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
			h.Set("Content-Type", mime)
			part, _ := w.CreatePart(h)
			_, _ = part.Write(file)
		}
		_ = w.Close()
		body, ctype = &buf, w.FormDataContentType()
	}
	req, err := http.NewRequestWithContext(ctxTimeout(t, 20*time.Second), method, s.BaseURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

// uploadFile creates a file through POST /v1/files and fails the test
// unless it is 200.
func uploadFile(t *testing.T, s *server, key string, form map[string]string, name string, data []byte) fileJSON {
	t.Helper()
	status, body := filesCall(t, s, key, "POST", "/v1/files", form, name, "application/octet-stream", data)
	if status != http.StatusOK {
		t.Fatalf("POST /v1/files %s: %d %s", name, status, body)
	}
	var f fileJSON
	if err := json.Unmarshal(body, &f); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return f
}

// victimFile gives B a file.
func victimFile(t *testing.T, s *server, b *account) string {
	t.Helper()
	res, err := s.clients(protocols[0], cred{cookie: b.Cookie}).Files.CreateFile(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.CreateFileRequest{
		Filename: "secret.md", Purpose: "assistants", Content: []byte("# B's secret file"),
	}))
	if err != nil {
		t.Fatalf("CreateFile: %v", err)
	}
	return res.Msg.GetFile().GetFileId()
}

// The Files API over /v1/files: create (multipart), list (purpose, limit,
// order, after), retrieve, content, delete, in OpenAI's wire format; a file
// is used by id in /v1/responses and ChatService; bad input is refused
// naming the field and leaves nothing; the quota is exact; the sweep keeps
// files while it deletes an unreferenced upload; another user sees nothing.
func TestFilesAPI(t *testing.T) { testFilesAPI(t) }

// The same with the records in PostgreSQL and the bytes in S3 when
// scripts/services.sh runs them.
func TestFilesAPIScaleMode(t *testing.T) {
	scaleMode(t)
	testFilesAPI(t)
}

func testFilesAPI(t *testing.T) {
	const notes, brief = "# Notes\nThe launch is on Tuesday.\n", "A brief that expires."
	const quota = 2 * (len(notes) + len(brief))
	s := startServer(t, append([]string{"--attachment-unreferenced-ttl", "2s", "--attachment-sweep-interval", "200ms",
		"--attachment-quota-bytes", strconv.Itoa(quota)}, fastAuth...)...)
	a := s.newAccount(t, "files@example.com")
	s.topup(t, a, "1") // storing through an API key needs a positive balance
	b := s.newAccount(t, "files-b@example.com")
	s.topup(t, b, "1")

	// Create: OpenAI's file object; the type comes from the name.
	f := uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "notes.md", []byte(notes))
	if f.Object != "file" || f.ID == "" || f.Bytes != int64(len(notes)) || f.Filename != "notes.md" || f.Purpose != "assistants" ||
		f.Status != "processed" || f.StatusDetails != nil || f.ExpiresAt != nil || time.Since(time.Unix(f.CreatedAt, 0)) > time.Minute {
		t.Fatalf("file object %+v", f)
	}
	e := uploadFile(t, s, a.Key, map[string]string{"purpose": "user_data", "expires_after[anchor]": "created_at",
		"expires_after[seconds]": "3600"}, "brief.txt", []byte(brief))
	if e.ExpiresAt == nil || *e.ExpiresAt != e.CreatedAt+3600 {
		t.Fatalf("expires_at of a file with expires_after: %+v", e)
	}

	t.Run("Refusals", func(t *testing.T) {
		for _, c := range []struct {
			what  string
			form  map[string]string
			name  string
			data  []byte
			param string
		}{
			{"no purpose", map[string]string{}, "a.txt", []byte("hi"), "purpose"},
			{"unknown purpose", map[string]string{"purpose": "training"}, "a.txt", []byte("hi"), "purpose"},
			{"no file", map[string]string{"purpose": "assistants"}, "", nil, "file"},
			{"empty file", map[string]string{"purpose": "assistants"}, "a.txt", []byte{}, "file"},
			{"a PDF that is not one", map[string]string{"purpose": "assistants"}, "a.pdf", []byte("plain words"), "file"},
			{"expiry too short", map[string]string{"purpose": "assistants", "expires_after[anchor]": "created_at", "expires_after[seconds]": "60"}, "a.txt", []byte("hi"), "expires_after.seconds"},
			{"unknown anchor", map[string]string{"purpose": "assistants", "expires_after[anchor]": "last_active_at", "expires_after[seconds]": "3600"}, "a.txt", []byte("hi"), "expires_after.anchor"},
			{"unknown field", map[string]string{"purpose": "assistants", "colour": "blue"}, "a.txt", []byte("hi"), "colour"},
		} {
			if c.what == "no purpose" {
				c.form = nil // a form with the file only
			}
			status, body := filesCall(t, s, a.Key, "POST", "/v1/files", c.form, c.name, "application/octet-stream", c.data)
			wantOpenAIError(t, c.what, status, body, http.StatusBadRequest, c.param)
		}
		status, body := filesCall(t, s, a.Key, "GET", "/v1/files?order=sideways", nil, "", "", nil)
		wantOpenAIError(t, "order=sideways", status, body, http.StatusBadRequest, "order")
		status, body = filesCall(t, s, a.Key, "GET", "/v1/files?limit=0", nil, "", "", nil)
		wantOpenAIError(t, "limit=0", status, body, http.StatusBadRequest, "limit")
	})

	// Exact quota: what is left is the quota less the two files; refused
	// uploads above took none of it.
	left := quota - len(notes) - len(brief)
	status, body := filesCall(t, s, a.Key, "POST", "/v1/files", map[string]string{"purpose": "assistants"}, "over.txt", "text/plain", bytes.Repeat([]byte("x"), left+1))
	if status != http.StatusTooManyRequests {
		t.Fatalf("a file one byte over the quota: %d %s, want 429", status, body)
	}

	// Connect and gRPC: the same files, and one made with content.
	for _, p := range protocols {
		fc := s.clients(p, cred{bearer: a.Key}).Files
		ctx := ctxTimeout(t, 20*time.Second)
		got, err := fc.GetFile(ctx, connect.NewRequest(&parleyv1.GetFileRequest{FileId: f.ID}))
		if err != nil || got.Msg.GetFile().GetPurpose() != "assistants" || got.Msg.GetFile().GetMimeType() != "text/markdown" ||
			got.Msg.GetFile().GetStatus() != parleyv1.AttachmentStatus_ATTACHMENT_STATUS_READY {
			t.Fatalf("%s GetFile: %v %v", p.name, got, err)
		}
		content, err := fc.GetFileContent(ctx, connect.NewRequest(&parleyv1.GetFileContentRequest{FileId: f.ID}))
		if err != nil || string(content.Msg.GetContent()) != notes || content.Msg.GetDownloadUrl() == "" {
			t.Fatalf("%s GetFileContent: %v %v", p.name, content, err)
		}
		made, err := fc.CreateFile(ctx, connect.NewRequest(&parleyv1.CreateFileRequest{Filename: p.name + ".txt", Purpose: "vision",
			Content: []byte("x"), ExpiresAfter: durationpb.New(2 * time.Hour)}))
		if err != nil || made.Msg.GetFile().GetExpiresAt().AsTime().Sub(made.Msg.GetFile().GetCreatedAt().AsTime()) != 2*time.Hour {
			t.Fatalf("%s CreateFile: %v %v", p.name, made, err)
		}
		page, err := fc.ListFiles(ctx, connect.NewRequest(&parleyv1.ListFilesRequest{PageSize: 1}))
		if err != nil || len(page.Msg.GetFiles()) != 1 || page.Msg.GetFiles()[0].GetFileId() != made.Msg.GetFile().GetFileId() || page.Msg.GetNextPageToken() == "" {
			t.Fatalf("%s ListFiles first page: %v %v", p.name, page, err)
		}
		next, err := fc.ListFiles(ctx, connect.NewRequest(&parleyv1.ListFilesRequest{PageSize: 1, PageToken: page.Msg.GetNextPageToken()}))
		if err != nil || len(next.Msg.GetFiles()) != 1 || next.Msg.GetFiles()[0].GetFileId() == made.Msg.GetFile().GetFileId() {
			t.Fatalf("%s ListFiles second page: %v %v", p.name, next, err)
		}
		if _, err := fc.DeleteFile(ctx, connect.NewRequest(&parleyv1.DeleteFileRequest{FileId: made.Msg.GetFile().GetFileId()})); err != nil {
			t.Fatalf("%s DeleteFile: %v", p.name, err)
		}
		_, err = fc.CreateFile(ctx, connect.NewRequest(&parleyv1.CreateFileRequest{Filename: "x.txt", Purpose: "batch_output", Content: []byte("x")}))
		wantCode(t, p.name+" CreateFile batch_output", err, connect.CodeInvalidArgument)
	}

	// List: newest first by default, purpose filter, paging with after.
	var list struct {
		Object  string     `json:"object"`
		Data    []fileJSON `json:"data"`
		FirstID *string    `json:"first_id"`
		LastID  *string    `json:"last_id"`
		HasMore bool       `json:"has_more"`
	}
	listFiles := func(query string) {
		t.Helper()
		list.Data, list.FirstID, list.LastID = nil, nil, nil
		status, body := filesCall(t, s, a.Key, "GET", "/v1/files"+query, nil, "", "", nil)
		if status != http.StatusOK || json.Unmarshal(body, &list) != nil || list.Object != "list" {
			t.Fatalf("GET /v1/files%s: %d %s", query, status, body)
		}
	}
	listFiles("")
	if len(list.Data) != 2 || list.Data[0].ID != e.ID || list.Data[1].ID != f.ID || list.HasMore || *list.FirstID != e.ID || *list.LastID != f.ID {
		t.Fatalf("list: %+v", list)
	}
	listFiles("?limit=1&order=asc")
	if len(list.Data) != 1 || list.Data[0].ID != f.ID || !list.HasMore {
		t.Fatalf("list limit=1 order=asc: %+v", list)
	}
	listFiles("?limit=1&order=asc&after=" + f.ID)
	if len(list.Data) != 1 || list.Data[0].ID != e.ID || list.HasMore {
		t.Fatalf("list after the first: %+v", list)
	}
	listFiles("?purpose=user_data")
	if len(list.Data) != 1 || list.Data[0].ID != e.ID {
		t.Fatalf("list purpose=user_data: %+v", list)
	}

	// Retrieve and content.
	status, body = filesCall(t, s, a.Key, "GET", "/v1/files/"+f.ID, nil, "", "", nil)
	var got fileJSON
	if status != http.StatusOK || json.Unmarshal(body, &got) != nil || got != f {
		t.Fatalf("GET /v1/files/{id}: %d %s, want %+v", status, body, f)
	}
	status, body = filesCall(t, s, a.Key, "GET", "/v1/files/"+f.ID+"/content", nil, "", "", nil)
	if status != http.StatusOK || string(body) != notes {
		t.Fatalf("GET /v1/files/{id}/content: %d %q", status, body)
	}

	// The file id as input_file.file_id on /v1/responses and as an
	// attachment on ChatService.
	r, _ := createResponse(t, s, a.Key, map[string]any{"model": "sim-small", "max_output_tokens": 5, "input": []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "When is the launch?"},
			map[string]any{"type": "input_file", "file_id": f.ID},
		}},
	}})
	if r.Usage.InputTokens < 10 {
		t.Fatalf("the response's input did not include the file: %d tokens", r.Usage.InputTokens)
	}
	chat := s.api(protocols[0], cred{bearer: a.Key}).Chat
	msgs := userText("Summarise the file.")
	msgs[0].Parts = append(msgs[0].Parts, attachmentPart(f.ID))
	if _, err := chat.Complete(ctxTimeout(t, 20*time.Second), connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", MaxOutputTokens: 5, Messages: msgs})); err != nil {
		t.Fatalf("ChatService.Complete with the file as an attachment: %v", err)
	}

	t.Run("OtherUser", func(t *testing.T) {
		for _, path := range []string{"/v1/files/" + f.ID, "/v1/files/" + f.ID + "/content"} {
			status, body := filesCall(t, s, b.Key, "GET", path, nil, "", "", nil)
			wantOpenAIError(t, "B GET "+path, status, body, http.StatusNotFound, "")
		}
		status, body := filesCall(t, s, b.Key, "DELETE", "/v1/files/"+f.ID, nil, "", "", nil)
		wantOpenAIError(t, "B DELETE", status, body, http.StatusNotFound, "")
		status, body = filesCall(t, s, b.Key, "GET", "/v1/files", nil, "", "", nil)
		if status != http.StatusOK || !bytes.Contains(body, []byte(`"data":[]`)) {
			t.Fatalf("B's list: %d %s", status, body)
		}
		status, body = respCall(t, s, b.Key, "POST", "/v1/responses", map[string]any{"model": "sim-small", "max_output_tokens": 5, "input": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_file", "file_id": f.ID}}},
		}})
		wantOpenAIError(t, "B's response with A's file", status, body, http.StatusNotFound, "")
	})

	// The sweep deletes an upload no message references after the TTL, and
	// keeps the files.
	ac := s.attachments(protocols[0], cred{bearer: a.Key})
	plain := s.upload(t, ac, "plain.txt", "text/plain", []byte("p"))
	waitMetric(t, s, "parley_attachments_unreferenced_deleted_total", func(v float64) bool { return v >= 1 })
	_, err := ac.GetAttachment(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.GetAttachmentRequest{AttachmentId: plain.GetAttachmentId()}))
	wantCode(t, "the unreferenced upload after the sweep", err, connect.CodeNotFound)
	listFiles("")
	if len(list.Data) != 2 {
		t.Fatalf("files after the sweep: %+v", list)
	}

	// Delete.
	status, body = filesCall(t, s, a.Key, "DELETE", "/v1/files/"+f.ID, nil, "", "", nil)
	if status != http.StatusOK || string(bytes.TrimSpace(body)) != `{"id":"`+f.ID+`","object":"file","deleted":true}` {
		t.Fatalf("DELETE /v1/files/{id}: %d %s", status, body)
	}
	status, body = filesCall(t, s, a.Key, "GET", "/v1/files/"+f.ID, nil, "", "", nil)
	wantOpenAIError(t, "GET after DELETE", status, body, http.StatusNotFound, "")
	status, body = filesCall(t, s, a.Key, "DELETE", "/v1/files/"+f.ID, nil, "", "", nil)
	wantOpenAIError(t, "DELETE twice", status, body, http.StatusNotFound, "")
	// The deleted file's bytes are free again: exactly the rest fits.
	uploadFile(t, s, a.Key, map[string]string{"purpose": "assistants"}, "fill.txt", bytes.Repeat([]byte("y"), left+len(notes)))
}

func init() {
	idorCases = append(idorCases,
		idorCase{
			name: "FileService.GetFile of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Files.GetFile(ctx, connect.NewRequest(&parleyv1.GetFileRequest{FileId: b.FileID}))
				return notFound(err, "read B's file")
			},
		},
		idorCase{
			name: "FileService.GetFileContent of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Files.GetFileContent(ctx, connect.NewRequest(&parleyv1.GetFileContentRequest{FileId: b.FileID}))
				return notFound(err, "read B's file's bytes")
			},
		},
		idorCase{
			name: "FileService.DeleteFile of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Files.DeleteFile(ctx, connect.NewRequest(&parleyv1.DeleteFileRequest{FileId: b.FileID}))
				return notFound(err, "delete B's file")
			},
			intact: func(ctx context.Context, b clients, victim *account) error {
				_, err := b.Files.GetFile(ctx, connect.NewRequest(&parleyv1.GetFileRequest{FileId: victim.FileID}))
				return err
			},
		},
		idorCase{
			name: "FileService.ListFiles sees none of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				res, err := a.Files.ListFiles(ctx, connect.NewRequest(&parleyv1.ListFilesRequest{}))
				if err != nil {
					return err
				}
				for _, f := range res.Msg.GetFiles() {
					if f.GetFileId() == b.FileID {
						return errLeak("listed B's file")
					}
				}
				return connect.NewError(connect.CodeNotFound, nil) // nothing of B's: refused as it should be
			},
		},
	)
}
