package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// AttachmentHandler serves AttachmentService: uploads by signed URL,
// checked on completion.
type AttachmentHandler struct {
	Attachments *attach.Service
}

// CreateUpload registers an upload and says where to send the bytes.
func (h *AttachmentHandler) CreateUpload(ctx context.Context, req *connect.Request[parleyv1.CreateUploadRequest]) (*connect.Response[parleyv1.CreateUploadResponse], error) {
	m := req.Msg
	a, up, err := h.Attachments.CreateUpload(ctx, attach.OwnerFrom(ctx), attach.UploadRequest{
		Filename: m.GetFilename(), MIME: m.GetMimeType(), Size: m.GetSizeBytes(), SHA256: m.GetSha256(),
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateUploadResponse{
		AttachmentId: a.ID, UploadUrl: up.URL, Method: up.Method, Headers: up.Headers, ExpiresAt: timestamppb.New(up.ExpiresAt),
	}), nil
}

// CompleteUpload checks the uploaded bytes and marks the attachment ready
// or failed.
func (h *AttachmentHandler) CompleteUpload(ctx context.Context, req *connect.Request[parleyv1.CompleteUploadRequest]) (*connect.Response[parleyv1.CompleteUploadResponse], error) {
	p, _ := auth.FromContext(ctx)
	a, err := h.Attachments.Complete(ctx, p.UserID, req.Msg.GetAttachmentId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CompleteUploadResponse{Attachment: attachmentToProto(a)}), nil
}

// GetAttachment returns an attachment and a short-lived download URL.
func (h *AttachmentHandler) GetAttachment(ctx context.Context, req *connect.Request[parleyv1.GetAttachmentRequest]) (*connect.Response[parleyv1.GetAttachmentResponse], error) {
	p, _ := auth.FromContext(ctx)
	a, err := h.Attachments.Get(ctx, p.UserID, req.Msg.GetAttachmentId())
	if err != nil {
		return nil, err
	}
	res := &parleyv1.GetAttachmentResponse{Attachment: attachmentToProto(a)}
	u, exp, err := h.Attachments.DownloadURL(ctx, a)
	if err != nil {
		return nil, err
	}
	if u != "" {
		res.DownloadUrl, res.DownloadExpiresAt = u, timestamppb.New(exp)
	}
	return connect.NewResponse(res), nil
}

// DeleteAttachment deletes an attachment's bytes and record.
func (h *AttachmentHandler) DeleteAttachment(ctx context.Context, req *connect.Request[parleyv1.DeleteAttachmentRequest]) (*connect.Response[parleyv1.DeleteAttachmentResponse], error) {
	p, _ := auth.FromContext(ctx)
	if err := h.Attachments.Delete(ctx, p.UserID, req.Msg.GetAttachmentId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.DeleteAttachmentResponse{}), nil
}

func attachmentToProto(a store.Attachment) *parleyv1.Attachment {
	out := &parleyv1.Attachment{
		AttachmentId: a.ID, Filename: a.Filename, MimeType: a.MimeType, SizeBytes: a.SizeBytes, Sha256: a.SHA256,
		FailureReason: a.FailureReason, Width: int32(a.Width), Height: int32(a.Height), CreatedAt: timestamppb.New(a.CreatedAt),
	}
	switch a.Status {
	case store.AttachmentUploading:
		out.Status = parleyv1.AttachmentStatus_ATTACHMENT_STATUS_UPLOADING
	case store.AttachmentReady:
		out.Status = parleyv1.AttachmentStatus_ATTACHMENT_STATUS_READY
	case store.AttachmentFailed:
		out.Status = parleyv1.AttachmentStatus_ATTACHMENT_STATUS_FAILED
	}
	return out
}
