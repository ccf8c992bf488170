package api

import (
	"context"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/worker"
)

// ChatHandler serves ChatService: the API channel, billed by usage.
type ChatHandler struct {
	Core *chat.Core
}

// Complete runs a generation and answers with the whole completion.
func (h *ChatHandler) Complete(ctx context.Context, req *connect.Request[parleyv1.CompleteRequest]) (*connect.Response[parleyv1.CompleteResponse], error) {
	m := req.Msg
	r, err := h.chatRequest(ctx, m.GetModel(), m.GetMessages(), m.GetMaxOutputTokens(), m.Temperature, m.TopP, m.GetStop(), m.Seed)
	if err != nil {
		return nil, err
	}
	var text strings.Builder
	out, err := h.Core.Complete(ctx, r, func(ev *parleyv1.GenerationEvent) error {
		if d := ev.GetDelta(); d != nil {
			text.WriteString(d.GetText())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CompleteResponse{
		RequestId: out.RequestID,
		Model:     out.Model,
		Message: &parleyv1.Message{Role: parleyv1.Role_ROLE_ASSISTANT, Parts: []*parleyv1.Part{
			{Kind: &parleyv1.Part_Text{Text: text.String()}},
		}},
		FinishReason: chat.FinishReasonToProto(out.FinishReason),
		Usage:        chat.UsageToProto(out.Usage),
		CostNanos:    out.CostNanos,
	}), nil
}

// CompleteStream runs a generation and streams its events as they are made.
// A client that goes away cancels the generation at once.
func (h *ChatHandler) CompleteStream(ctx context.Context, req *connect.Request[parleyv1.CompleteStreamRequest], stream *connect.ServerStream[parleyv1.CompleteStreamResponse]) error {
	m := req.Msg
	r, err := h.chatRequest(ctx, m.GetModel(), m.GetMessages(), m.GetMaxOutputTokens(), m.Temperature, m.TopP, m.GetStop(), m.Seed)
	if err != nil {
		return err
	}
	_, err = h.Core.Complete(ctx, r, func(ev *parleyv1.GenerationEvent) error {
		return stream.Send(&parleyv1.CompleteStreamResponse{Event: ev})
	})
	return err
}

// chatRequest turns the API's fields into the core's request.
func (h *ChatHandler) chatRequest(ctx context.Context, model string, msgs []*parleyv1.Message, maxOut int64, temperature, topP *float64, stop []string, seed *int64) (chat.Request, error) {
	r := chat.Request{Model: model, MaxOutputTokens: maxOut, Temperature: temperature, TopP: topP, Stop: stop, Seed: seed}
	for i, m := range msgs {
		cm, err := h.chatMessage(ctx, fmt.Sprintf("messages[%d]", i), m)
		if err != nil {
			return chat.Request{}, err
		}
		r.Messages = append(r.Messages, cm)
	}
	return r, nil
}

func (h *ChatHandler) chatMessage(ctx context.Context, field string, m *parleyv1.Message) (worker.ChatMessage, error) {
	cm := worker.ChatMessage{Role: roleName(m.GetRole())}
	if cm.Role == "" {
		return cm, apierr.InvalidArgument(field+".role", "must be ROLE_SYSTEM, ROLE_USER or ROLE_ASSISTANT")
	}
	for j, p := range m.GetParts() {
		pf := fmt.Sprintf("%s.parts[%d]", field, j)
		switch k := p.GetKind().(type) {
		case *parleyv1.Part_Text:
			cm.Parts = append(cm.Parts, worker.Part{Text: k.Text})
		case *parleyv1.Part_Image:
			img, err := h.Core.Attachments.Inline().InlineImage(pf+".image", k.Image.GetData(), k.Image.GetMimeType())
			if err != nil {
				return cm, err
			}
			cm.Parts = append(cm.Parts, worker.Part{Image: img})
		case *parleyv1.Part_Document:
			doc, err := h.Core.Attachments.Inline().InlineDocument(pf+".document", k.Document.GetData(), k.Document.GetMimeType(), k.Document.GetFilename())
			if err != nil {
				return cm, err
			}
			cm.Parts = append(cm.Parts, worker.Part{Document: doc})
		case *parleyv1.Part_AttachmentId:
			p, _ := auth.FromContext(ctx)
			part, err := h.Core.Attachments.Part(ctx, p.UserID, k.AttachmentId)
			if err != nil {
				return cm, err
			}
			cm.Parts = append(cm.Parts, part)
		default:
			return cm, apierr.InvalidArgument(pf, "is empty: set text, attachment_id, image or document")
		}
	}
	return cm, nil
}

func roleName(r parleyv1.Role) string {
	switch r {
	case parleyv1.Role_ROLE_SYSTEM:
		return "system"
	case parleyv1.Role_ROLE_USER:
		return "user"
	case parleyv1.Role_ROLE_ASSISTANT:
		return "assistant"
	}
	return ""
}
