package api

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
)

// ChatHandler serves ChatService: the API channel, billed by usage.
type ChatHandler struct {
	Core *chat.Core
}

// Complete runs a generation and answers with the whole completion.
func (h *ChatHandler) Complete(ctx context.Context, req *connect.Request[parleyv1.CompleteRequest]) (*connect.Response[parleyv1.CompleteResponse], error) {
	m := req.Msg
	r, err := h.chatRequest(ctx, m, m.Temperature, m.TopP, m.Seed, m.ParallelToolCalls)
	if err != nil {
		return nil, err
	}
	found, err := h.fileSearch(ctx, &r, m.GetFileSearch())
	if err != nil {
		return nil, err
	}
	var all chat.Collector
	out, err := h.Core.Complete(ctx, &r, all.Emit)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.CompleteResponse{
		RequestId:    out.RequestID,
		Model:        out.Model,
		FinishReason: chat.FinishReasonToProto(out.FinishReason),
		Usage:        chat.UsageToProto(out.Usage),
		CostNanos:    out.CostNanos,
	}
	for i, reason := range out.Choices {
		ch := all.Choice(i)
		res.Choices = append(res.Choices, &parleyv1.Choice{
			Index: int32(i), Message: ch.Message(), FinishReason: chat.FinishReasonToProto(reason), Logprobs: ch.Logprobs})
	}
	res.Message = all.Choice(0).Message()
	if found != nil {
		// The cited passages follow the text of the answer (choice 0).
		parts, _ := citationParts(all.Choice(0).Text.String(), found)
		res.Message.Parts = append(res.Message.Parts, parts...)
	}
	return connect.NewResponse(res), nil
}

// CompleteStream runs a generation and streams its events as they are made.
// A client that goes away cancels the generation at once.
func (h *ChatHandler) CompleteStream(ctx context.Context, req *connect.Request[parleyv1.CompleteStreamRequest], stream *connect.ServerStream[parleyv1.CompleteStreamResponse]) error {
	m := req.Msg
	r, err := h.chatRequest(ctx, m, m.Temperature, m.TopP, m.Seed, m.ParallelToolCalls)
	if err != nil {
		return err
	}
	found, err := h.fileSearch(ctx, &r, m.GetFileSearch())
	if err != nil {
		return err
	}
	_, err = h.Core.Complete(ctx, &r, citingStream(found, func(ev *parleyv1.GenerationEvent) error {
		return stream.Send(&parleyv1.CompleteStreamResponse{Event: ev})
	}))
	return err
}

// completeFields are the fields CompleteRequest and CompleteStreamRequest
// share (the optional scalars are passed on their own).
type completeFields interface {
	GetModel() string
	GetMessages() []*parleyv1.Message
	GetMaxOutputTokens() int64
	GetStop() []string
	GetUser() string
	GetTools() []*parleyv1.Tool
	GetToolChoice() *parleyv1.ToolChoice
	GetResponseFormat() *parleyv1.ResponseFormat
	GetN() int32
	GetLogprobs() bool
	GetTopLogprobs() int32
}

// chatRequest turns the API's fields into the core's request.
func (h *ChatHandler) chatRequest(ctx context.Context, m completeFields, temperature, topP *float64, seed *int64, parallel *bool) (chat.Request, error) {
	r := chat.Request{Request: llm.Request{
		Model: m.GetModel(), Temperature: temperature, TopP: topP, Stop: m.GetStop(), Seed: seed,
		ParallelToolCalls: parallel, N: int(m.GetN()), Logprobs: m.GetLogprobs(), TopLogprobs: int(m.GetTopLogprobs()),
	}, MaxOutputTokens: m.GetMaxOutputTokens(), User: m.GetUser()}
	for i, t := range m.GetTools() {
		tool := llm.Tool{Name: t.GetName(), Description: t.GetDescription(), Strict: t.GetStrict()}
		if t.GetParameters() != nil {
			b, err := protojson.Marshal(t.GetParameters())
			if err != nil {
				return r, apierr.InvalidArgument(fmt.Sprintf("tools[%d].parameters", i), "is not a JSON object")
			}
			tool.Parameters = b
		}
		r.Tools = append(r.Tools, tool)
	}
	switch tc := m.GetToolChoice(); tc.GetMode() {
	case parleyv1.ToolChoiceMode_TOOL_CHOICE_MODE_UNSPECIFIED, parleyv1.ToolChoiceMode_TOOL_CHOICE_MODE_AUTO:
	case parleyv1.ToolChoiceMode_TOOL_CHOICE_MODE_NONE:
		r.ToolChoice.Mode = llm.ToolChoiceNone
	case parleyv1.ToolChoiceMode_TOOL_CHOICE_MODE_REQUIRED:
		r.ToolChoice.Mode = llm.ToolChoiceRequired
	case parleyv1.ToolChoiceMode_TOOL_CHOICE_MODE_FUNCTION:
		r.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceFunction, Function: tc.GetFunctionName()}
	default:
		return r, apierr.InvalidArgument("tool_choice.mode", "is not a known mode")
	}
	switch f := m.GetResponseFormat(); f.GetType() {
	case parleyv1.ResponseFormatType_RESPONSE_FORMAT_TYPE_UNSPECIFIED, parleyv1.ResponseFormatType_RESPONSE_FORMAT_TYPE_TEXT:
	case parleyv1.ResponseFormatType_RESPONSE_FORMAT_TYPE_JSON_OBJECT:
		r.ResponseFormat.Type = llm.FormatJSONObject
	case parleyv1.ResponseFormatType_RESPONSE_FORMAT_TYPE_JSON_SCHEMA:
		r.ResponseFormat = llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: f.GetName(), Strict: f.GetStrict()}
		if f.GetSchema() != nil {
			b, err := protojson.Marshal(f.GetSchema())
			if err != nil {
				return r, apierr.InvalidArgument("response_format.schema", "is not a JSON object")
			}
			r.ResponseFormat.Schema = b
		}
	default:
		return r, apierr.InvalidArgument("response_format.type", "is not a known type")
	}
	for i, m := range m.GetMessages() {
		cm, err := h.chatMessage(&r, i, fmt.Sprintf("messages[%d]", i), m)
		if err != nil {
			return chat.Request{}, err
		}
		r.Messages = append(r.Messages, cm)
	}
	return r, nil
}

// chatMessage maps message i. Images, documents and attachments are
// deferred: the core prepares them once the request is admitted.
func (h *ChatHandler) chatMessage(r *chat.Request, i int, field string, m *parleyv1.Message) (llm.ChatMessage, error) {
	cm := llm.ChatMessage{Role: roleName(m.GetRole())}
	if cm.Role == "" {
		return cm, apierr.InvalidArgument(field+".role", "must be ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT or ROLE_TOOL")
	}
	for j, p := range m.GetParts() {
		pf := fmt.Sprintf("%s.parts[%d]", field, j)
		switch k := p.GetKind().(type) {
		case *parleyv1.Part_Text:
			cm.Parts = append(cm.Parts, llm.Part{Text: k.Text})
		case *parleyv1.Part_Image:
			cm.Parts = append(cm.Parts, r.Defer(i, len(cm.Parts), chat.Deferred{
				Field: pf + ".image", Kind: attach.KindImage, Data: k.Image.GetData(), MIME: k.Image.GetMimeType()}))
		case *parleyv1.Part_Document:
			cm.Parts = append(cm.Parts, r.Defer(i, len(cm.Parts), chat.Deferred{
				Field: pf + ".document", Kind: attach.KindDocument, Data: k.Document.GetData(), MIME: k.Document.GetMimeType(), Filename: k.Document.GetFilename()}))
		case *parleyv1.Part_ToolCall:
			c := k.ToolCall
			cm.Parts = append(cm.Parts, llm.Part{ToolCall: &llm.ToolCall{ID: c.GetId(), Name: c.GetName(), Arguments: c.GetArguments()}})
		case *parleyv1.Part_ToolResult:
			cm.Parts = append(cm.Parts, llm.Part{ToolResult: &llm.ToolResult{ToolCallID: k.ToolResult.GetToolCallId(), Content: k.ToolResult.GetContent()}})
		case *parleyv1.Part_AttachmentId:
			cm.Parts = append(cm.Parts, r.Defer(i, len(cm.Parts), chat.Deferred{Field: pf + ".attachment_id", AttachmentID: k.AttachmentId}))
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
	case parleyv1.Role_ROLE_TOOL:
		return "tool"
	}
	return ""
}
