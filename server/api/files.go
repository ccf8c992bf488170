package api

import (
	"bytes"
	"context"
	"io"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// MaxInlineFileBytes is the largest file GetFileContent returns in its
// response; larger ones come by their download URL only.
const MaxInlineFileBytes = 8 << 20

// FileHandler serves FileService: files are attachments with a purpose,
// kept by server/attach.
type FileHandler struct {
	Attachments *attach.Service
	Pages       PageTokens
}

// CreateFile stores a file sent with the request, or registers one to be
// uploaded by URL.
func (h *FileHandler) CreateFile(ctx context.Context, req *connect.Request[parleyv1.CreateFileRequest]) (*connect.Response[parleyv1.CreateFileResponse], error) {
	m := req.Msg
	up := attach.UploadRequest{Filename: m.GetFilename(), MIME: m.GetMimeType(), Purpose: m.GetPurpose(),
		Size: m.GetSizeBytes(), SHA256: m.GetSha256()}
	if d := m.GetExpiresAfter(); d != nil {
		if up.ExpiresAfter = d.AsDuration(); up.ExpiresAfter <= 0 {
			return nil, apierr.InvalidArgument("expires_after", "must be positive")
		}
	}
	if len(m.GetContent()) > 0 {
		if up.Size != 0 || up.SHA256 != "" {
			return nil, apierr.InvalidArgument("size_bytes", "is for an upload by URL: with content, leave size_bytes and sha256 unset")
		}
		f, err := h.Attachments.PutFile(ctx, attach.OwnerFrom(ctx), up, bytes.NewReader(m.GetContent()), int64(len(m.GetContent())))
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(&parleyv1.CreateFileResponse{File: fileToProto(f)}), nil
	}
	if up.Purpose == "" {
		return nil, apierr.InvalidArgument("purpose", "is required: one of assistants, batch, fine-tune, vision, user_data, evals")
	}
	f, u, err := h.Attachments.CreateUpload(ctx, attach.OwnerFrom(ctx), up)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateFileResponse{File: fileToProto(f), UploadUrl: u.URL, Method: u.Method,
		Headers: u.Headers, UploadExpiresAt: timestamppb.New(u.ExpiresAt)}), nil
}

// ListFiles lists the caller's files, newest first.
func (h *FileHandler) ListFiles(ctx context.Context, req *connect.Request[parleyv1.ListFilesRequest]) (*connect.Response[parleyv1.ListFilesResponse], error) {
	p, _ := auth.FromContext(ctx)
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	after, err := h.Pages.Open(p.UserID, "files", req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	files, more, err := h.Attachments.ListFiles(ctx, p.UserID, attach.FileQuery{Purpose: req.Msg.GetPurpose(), After: after, Limit: size})
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListFilesResponse{}
	for _, f := range files {
		res.Files = append(res.Files, fileToProto(f))
	}
	if more {
		res.NextPageToken = h.Pages.Seal(p.UserID, "files", files[len(files)-1].ID)
	}
	return connect.NewResponse(res), nil
}

// GetFile returns a file's metadata.
func (h *FileHandler) GetFile(ctx context.Context, req *connect.Request[parleyv1.GetFileRequest]) (*connect.Response[parleyv1.GetFileResponse], error) {
	p, _ := auth.FromContext(ctx)
	f, err := h.Attachments.File(ctx, p.UserID, req.Msg.GetFileId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetFileResponse{File: fileToProto(f)}), nil
}

// GetFileContent returns a ready file's bytes (up to MaxInlineFileBytes)
// and a download URL.
func (h *FileHandler) GetFileContent(ctx context.Context, req *connect.Request[parleyv1.GetFileContentRequest]) (*connect.Response[parleyv1.GetFileContentResponse], error) {
	p, _ := auth.FromContext(ctx)
	f, obj, err := h.Attachments.OpenFile(ctx, p.UserID, req.Msg.GetFileId())
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	res := &parleyv1.GetFileContentResponse{File: fileToProto(f)}
	if obj.Size() <= MaxInlineFileBytes {
		res.Content = make([]byte, obj.Size())
		if _, err := obj.ReadAt(res.Content, 0); err != nil && err != io.EOF {
			return nil, apierr.Store(err)
		}
	}
	u, exp, err := h.Attachments.DownloadURL(ctx, f)
	if err != nil {
		return nil, err
	}
	res.DownloadUrl, res.DownloadExpiresAt = u, timestamppb.New(exp)
	return connect.NewResponse(res), nil
}

// DeleteFile deletes a file's bytes and record.
func (h *FileHandler) DeleteFile(ctx context.Context, req *connect.Request[parleyv1.DeleteFileRequest]) (*connect.Response[parleyv1.DeleteFileResponse], error) {
	p, _ := auth.FromContext(ctx)
	if err := h.Attachments.DeleteFile(ctx, p.UserID, req.Msg.GetFileId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.DeleteFileResponse{}), nil
}

func fileToProto(a store.Attachment) *parleyv1.File {
	att := attachmentToProto(a)
	out := &parleyv1.File{
		FileId: a.ID, Filename: a.Filename, Purpose: a.Purpose, MimeType: a.MimeType, SizeBytes: a.SizeBytes,
		Sha256: a.SHA256, Status: att.GetStatus(), FailureReason: a.FailureReason, CreatedAt: att.GetCreatedAt(),
	}
	if !a.DeleteAt.IsZero() {
		out.ExpiresAt = timestamppb.New(a.DeleteAt)
	}
	return out
}
