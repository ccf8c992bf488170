package compat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// The Files API (/v1/files) in OpenAI's wire format, over the core's
// attachment service (server/attach): a file is an attachment with a
// purpose, so its checks, quota, storage and owner are the attachments' own.

// multipartMemory is how much of a multipart upload is held in memory; the
// rest of a file waits in a temporary file, removed when the request ends.
const multipartMemory = 1 << 20

// fileObject is OpenAI's file object.
type fileObject struct {
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

func toFileObject(a store.Attachment) fileObject {
	f := fileObject{ID: a.ID, Object: "file", Bytes: a.SizeBytes, CreatedAt: a.CreatedAt.Unix(), Filename: a.Filename,
		Purpose: a.Purpose, Status: "processed"}
	if !a.DeleteAt.IsZero() {
		at := a.DeleteAt.Unix()
		f.ExpiresAt = &at
	}
	switch a.Status {
	case store.AttachmentUploading:
		f.Status = "uploaded"
	case store.AttachmentFailed:
		f.Status, f.StatusDetails = "error", &a.FailureReason
	}
	return f
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// fileFields are the form fields POST /v1/files reads.
var fileFields = map[string]bool{"purpose": true, "expires_after[anchor]": true, "expires_after[seconds]": true}

// CreateFile serves POST /v1/files: a multipart form with file and purpose,
// and optionally expires_after[anchor] (created_at) and
// expires_after[seconds] (3600 to 2592000).
func (h *openAIHandler) CreateFile(w http.ResponseWriter, r *http.Request) {
	req, part, err := h.parseFileForm(r)
	if r.MultipartForm != nil {
		defer r.MultipartForm.RemoveAll()
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f, err := part.Open()
	if err != nil {
		h.fail(w, r, apierr.InvalidArgument("file", "could not be read"))
		return
	}
	defer f.Close()
	file, err := h.Core.Attachments.PutFile(r.Context(), attach.OwnerFrom(r.Context()), req, f, part.Size)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toFileObject(file))
}

func (h *openAIHandler) parseFileForm(r *http.Request) (attach.UploadRequest, *multipart.FileHeader, error) {
	var req attach.UploadRequest
	if err := r.ParseMultipartForm(multipartMemory); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return req, nil, apierr.InvalidArgument("file", fmt.Sprintf("the body is over the limit of %d bytes", tooBig.Limit))
		}
		return req, nil, apierr.InvalidArgument("body", "is not a multipart/form-data body with file and purpose: "+err.Error())
	}
	form := r.MultipartForm
	for _, name := range slices.Sorted(maps.Keys(form.Value)) {
		if !fileFields[name] {
			if err := h.unsupported(r, name); err != nil {
				return req, nil, err
			}
		} else if len(form.Value[name]) > 1 {
			return req, nil, apierr.InvalidArgument(name, "is given more than once")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(form.File)) {
		if name != "file" {
			if err := h.unsupported(r, name); err != nil {
				return req, nil, err
			}
		}
	}
	parts := form.File["file"]
	switch len(parts) {
	case 0:
		return req, nil, apierr.InvalidArgument("file", "is required: the file's bytes as a multipart file part")
	case 1:
	default:
		return req, nil, apierr.InvalidArgument("file", "is given more than once: upload one file per request")
	}
	value := func(name string) string {
		if v := form.Value[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	req.Filename, req.MIME, req.Purpose = parts[0].Filename, parts[0].Header.Get("Content-Type"), value("purpose")
	if req.Purpose == "" {
		return req, nil, apierr.InvalidArgument("purpose", "is required: one of assistants, batch, fine-tune, vision, user_data, evals")
	}
	anchor, seconds := value("expires_after[anchor]"), value("expires_after[seconds]")
	if anchor != "" || seconds != "" {
		if anchor != "created_at" {
			return req, nil, apierr.InvalidArgument("expires_after.anchor", fmt.Sprintf("must be created_at, got %q", anchor))
		}
		n, err := strconv.ParseInt(seconds, 10, 64)
		if err != nil || n < int64(attach.MinFileExpiry.Seconds()) || n > int64(attach.MaxFileExpiry.Seconds()) {
			return req, nil, apierr.InvalidArgument("expires_after.seconds", fmt.Sprintf("must be a whole number from %d to %d, got %q",
				int(attach.MinFileExpiry.Seconds()), int(attach.MaxFileExpiry.Seconds()), seconds))
		}
		req.ExpiresAfter = time.Duration(n) * time.Second
	}
	return req, parts[0], nil
}

// ListFiles serves GET /v1/files: purpose, limit (1 to 10,000, default
// 10,000), order (asc or desc, default desc) and after (a file id).
func (h *openAIHandler) ListFiles(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	q := r.URL.Query()
	fq := attach.FileQuery{Purpose: q.Get("purpose"), After: q.Get("after"), Limit: attach.MaxFileListLimit}
	for name := range q {
		switch name {
		case "purpose", "after", "limit", "order":
		default:
			if err := h.unsupported(r, name); err != nil {
				h.fail(w, r, err)
				return
			}
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > attach.MaxFileListLimit {
			h.fail(w, r, apierr.InvalidArgument("limit", fmt.Sprintf("must be a whole number from 1 to %d, got %q", attach.MaxFileListLimit, v)))
			return
		}
		fq.Limit = n
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		fq.Ascending = true
	default:
		h.fail(w, r, apierr.InvalidArgument("order", fmt.Sprintf("must be asc or desc, got %q", q.Get("order"))))
		return
	}
	files, more, err := h.Core.Attachments.ListFiles(r.Context(), p.UserID, fq)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	body := struct {
		Object  string       `json:"object"`
		Data    []fileObject `json:"data"`
		FirstID *string      `json:"first_id"`
		LastID  *string      `json:"last_id"`
		HasMore bool         `json:"has_more"`
	}{Object: "list", Data: make([]fileObject, len(files)), HasMore: more}
	for i, f := range files {
		body.Data[i] = toFileObject(f)
	}
	if len(files) > 0 {
		body.FirstID, body.LastID = &files[0].ID, &files[len(files)-1].ID
	}
	writeJSON(w, body)
}

// GetFile serves GET /v1/files/{id}.
func (h *openAIHandler) GetFile(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	f, err := h.Core.Attachments.File(r.Context(), p.UserID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toFileObject(f))
}

// FileContent serves GET /v1/files/{id}/content: the bytes as uploaded.
func (h *openAIHandler) FileContent(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	f, obj, err := h.Core.Attachments.OpenFile(r.Context(), p.UserID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer obj.Close()
	w.Header().Set("Content-Type", f.MimeType)
	w.Header().Set("Content-Length", strconv.FormatInt(obj.Size(), 10))
	_, _ = io.Copy(w, io.NewSectionReader(obj, 0, obj.Size()))
}

// DeleteFile serves DELETE /v1/files/{id}.
func (h *openAIHandler) DeleteFile(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := r.PathValue("id")
	if err := h.Core.Attachments.DeleteFile(r.Context(), p.UserID, id); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "file", true})
}
