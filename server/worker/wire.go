package worker

import (
	"bytes"
	"errors"
	"image"
	_ "image/gif" // image sizes of attached GIFs
	_ "image/jpeg"
	_ "image/png"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	workerv1 "github.com/parleyhq/parley/gen/parley/worker/v1"
	"github.com/parleyhq/parley/server/llm"
)

// This file converts between the Engine's Go types and WorkerService's wire
// types, both ways, so the server and the remote client agree by construction.

func requestToProto(req *llm.Request, affinityKey string) *workerv1.GenerateRequest {
	out := &workerv1.GenerateRequest{
		RequestId:   req.ID,
		Model:       req.Model,
		MaxTokens:   int64(req.MaxTokens),
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Stop:        req.Stop,
		Seed:        req.Seed,
		AffinityKey: affinityKey,
		Messages:    make([]*workerv1.ChatMessage, len(req.Messages)),

		ToolChoice:         string(req.ToolChoice.Mode),
		ToolChoiceFunction: req.ToolChoice.Function,
		ParallelToolCalls:  req.ParallelToolCalls,
		N:                  int32(req.N),
		Logprobs:           req.Logprobs,
		TopLogprobs:        int32(req.TopLogprobs),
		ReasoningEffort:    req.ReasoningEffort,
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, &workerv1.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict})
	}
	if f := req.ResponseFormat; f.Type != llm.FormatText {
		out.ResponseFormat = &workerv1.ResponseFormat{Type: string(f.Type), Name: f.Name, Schema: f.Schema, Strict: f.Strict}
	}
	for i, m := range req.Messages {
		pm := &workerv1.ChatMessage{Role: m.Role, Parts: make([]*workerv1.ContentPart, len(m.Parts))}
		for j, p := range m.Parts {
			switch {
			case p.Image != nil:
				pm.Parts[j] = &workerv1.ContentPart{Kind: &workerv1.ContentPart_Image{Image: &workerv1.Image{
					Data: p.Image.Data, MimeType: p.Image.MimeType}}}
			case p.ToolCall != nil:
				pm.Parts[j] = &workerv1.ContentPart{Kind: &workerv1.ContentPart_ToolCall{ToolCall: &workerv1.ToolCall{
					Id: p.ToolCall.ID, Name: p.ToolCall.Name, Arguments: p.ToolCall.Arguments}}}
			case p.ToolResult != nil:
				pm.Parts[j] = &workerv1.ContentPart{Kind: &workerv1.ContentPart_ToolResult{ToolResult: &workerv1.ToolResult{
					ToolCallId: p.ToolResult.ToolCallID, Content: p.ToolResult.Content}}}
			case p.Document != nil:
				// The gateway has already extracted the document's text: it travels as
				// text/plain under the original file name.
				pm.Parts[j] = &workerv1.ContentPart{Kind: &workerv1.ContentPart_Document{Document: &workerv1.Document{
					Filename: p.Document.Filename, MimeType: "text/plain", Data: []byte(p.Document.Text)}}}
			default:
				pm.Parts[j] = &workerv1.ContentPart{Kind: &workerv1.ContentPart_Text{Text: p.Text}}
			}
		}
		out.Messages[i] = pm
	}
	return out
}

func requestFromProto(in *workerv1.GenerateRequest) *llm.Request {
	req := &llm.Request{
		ID:          in.GetRequestId(),
		Model:       in.GetModel(),
		MaxTokens:   int(in.GetMaxTokens()),
		Temperature: in.Temperature,
		TopP:        in.TopP,
		Stop:        in.GetStop(),
		Seed:        in.Seed,
		Messages:    make([]llm.ChatMessage, len(in.GetMessages())),

		ToolChoice:        llm.ToolChoice{Mode: llm.ToolChoiceMode(in.GetToolChoice()), Function: in.GetToolChoiceFunction()},
		ParallelToolCalls: in.ParallelToolCalls,
		N:                 int(in.GetN()),
		Logprobs:          in.GetLogprobs(),
		TopLogprobs:       int(in.GetTopLogprobs()),
		ReasoningEffort:   in.GetReasoningEffort(),
	}
	for _, t := range in.GetTools() {
		req.Tools = append(req.Tools, llm.Tool{Name: t.GetName(), Description: t.GetDescription(), Parameters: t.GetParameters(), Strict: t.GetStrict()})
	}
	if f := in.GetResponseFormat(); f != nil {
		req.ResponseFormat = llm.ResponseFormat{Type: llm.ResponseFormatType(f.GetType()), Name: f.GetName(), Schema: f.GetSchema(), Strict: f.GetStrict()}
	}
	for i, m := range in.GetMessages() {
		cm := llm.ChatMessage{Role: m.GetRole(), Parts: make([]llm.Part, 0, len(m.GetParts()))}
		for _, p := range m.GetParts() {
			switch k := p.GetKind().(type) {
			case *workerv1.ContentPart_Text:
				cm.Parts = append(cm.Parts, llm.Part{Text: k.Text})
			case *workerv1.ContentPart_Image:
				img := &llm.Image{Data: k.Image.GetData(), MimeType: k.Image.GetMimeType()}
				if cfg, _, err := image.DecodeConfig(bytes.NewReader(img.Data)); err == nil {
					img.Width, img.Height = cfg.Width, cfg.Height
				}
				cm.Parts = append(cm.Parts, llm.Part{Image: img})
			case *workerv1.ContentPart_Document:
				cm.Parts = append(cm.Parts, llm.Part{Document: &llm.Document{
					Filename: k.Document.GetFilename(), MimeType: k.Document.GetMimeType(),
					Text: string(k.Document.GetData())}})
			case *workerv1.ContentPart_ToolCall:
				cm.Parts = append(cm.Parts, llm.Part{ToolCall: &llm.ToolCall{
					ID: k.ToolCall.GetId(), Name: k.ToolCall.GetName(), Arguments: k.ToolCall.GetArguments()}})
			case *workerv1.ContentPart_ToolResult:
				cm.Parts = append(cm.Parts, llm.Part{ToolResult: &llm.ToolResult{
					ToolCallID: k.ToolResult.GetToolCallId(), Content: k.ToolResult.GetContent()}})
			}
		}
		req.Messages[i] = cm
	}
	return req
}

// fillDelta sets out to d on the wire, replacing all it held.
func fillDelta(out *workerv1.Delta, d llm.Delta) {
	out.Text, out.Reasoning, out.Tokens, out.Choice = d.Text, d.Reasoning, int32(d.Tokens), int32(d.Choice)
	out.Finish, out.ToolCalls, out.Logprobs = workerv1.FinishReason_FINISH_REASON_UNSPECIFIED, nil, nil
	if d.Finish != "" {
		out.Finish = finishToProto(d.Finish)
	}
	for _, c := range d.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, &workerv1.ToolCallDelta{Index: int32(c.Index), Id: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	for _, lp := range d.Logprobs {
		p := &workerv1.TokenLogprob{Token: lp.Token, Logprob: lp.Logprob, Bytes: lp.Bytes}
		for _, t := range lp.Top {
			p.Top = append(p.Top, &workerv1.TopLogprob{Token: t.Token, Logprob: t.Logprob, Bytes: t.Bytes})
		}
		out.Logprobs = append(out.Logprobs, p)
	}
}

func deltaFromProto(in *workerv1.Delta) llm.Delta {
	d := llm.Delta{Text: in.GetText(), Reasoning: in.GetReasoning(), Tokens: int(in.GetTokens()), Choice: int(in.GetChoice())}
	if in.GetFinish() != workerv1.FinishReason_FINISH_REASON_UNSPECIFIED {
		d.Finish = finishFromProto(in.GetFinish())
	}
	for _, c := range in.GetToolCalls() {
		d.ToolCalls = append(d.ToolCalls, llm.ToolCallDelta{Index: int(c.GetIndex()), ID: c.GetId(), Name: c.GetName(), Arguments: c.GetArguments()})
	}
	for _, lp := range in.GetLogprobs() {
		p := llm.TokenLogprob{Token: lp.GetToken(), Logprob: lp.GetLogprob(), Bytes: lp.GetBytes()}
		for _, t := range lp.GetTop() {
			p.Top = append(p.Top, llm.TopLogprob{Token: t.GetToken(), Logprob: t.GetLogprob(), Bytes: t.GetBytes()})
		}
		d.Logprobs = append(d.Logprobs, p)
	}
	return d
}

func usageToProto(u llm.Usage) *workerv1.Usage {
	return &workerv1.Usage{
		PromptTokens:     int64(u.PromptTokens),
		CompletionTokens: int64(u.CompletionTokens),
		CachedTokens:     int64(u.CachedTokens),
		Estimated:        u.Estimated,
	}
}

func usageFromProto(u *workerv1.Usage) llm.Usage {
	return llm.Usage{
		PromptTokens:     int(u.GetPromptTokens()),
		CompletionTokens: int(u.GetCompletionTokens()),
		CachedTokens:     int(u.GetCachedTokens()),
		Estimated:        u.GetEstimated(),
	}
}

func finishToProto(r llm.FinishReason) workerv1.FinishReason {
	switch r {
	case llm.FinishStop:
		return workerv1.FinishReason_FINISH_REASON_STOP
	case llm.FinishLength:
		return workerv1.FinishReason_FINISH_REASON_LENGTH
	case llm.FinishCancelled:
		return workerv1.FinishReason_FINISH_REASON_CANCELLED
	case llm.FinishToolCalls:
		return workerv1.FinishReason_FINISH_REASON_TOOL_CALLS
	default:
		return workerv1.FinishReason_FINISH_REASON_ERROR
	}
}

func finishFromProto(r workerv1.FinishReason) llm.FinishReason {
	switch r {
	case workerv1.FinishReason_FINISH_REASON_STOP:
		return llm.FinishStop
	case workerv1.FinishReason_FINISH_REASON_LENGTH:
		return llm.FinishLength
	case workerv1.FinishReason_FINISH_REASON_CANCELLED:
		return llm.FinishCancelled
	case workerv1.FinishReason_FINISH_REASON_TOOL_CALLS:
		return llm.FinishToolCalls
	default:
		return llm.FinishError
	}
}

func loadToProto(id string, r LoadReport, at time.Time) *workerv1.LoadReport {
	p := &workerv1.LoadReport{
		WorkerId:         id,
		Models:           r.Models,
		Running:          int32(r.Running),
		Waiting:          int32(r.Waiting),
		MaxBatch:         int32(r.MaxBatch),
		KvUsedTokens:     r.KVUsedTokens,
		KvCapacityTokens: r.KVCapacityTokens,
		InFlight:         int32(r.InFlight),
		At:               timestamppb.New(at),
	}
	if r.Lag > 0 {
		p.Lag = durationpb.New(r.Lag)
	}
	return p
}

func loadFromProto(r *workerv1.LoadReport) LoadReport {
	return LoadReport{
		Models:           r.GetModels(),
		Running:          int(r.GetRunning()),
		Waiting:          int(r.GetWaiting()),
		MaxBatch:         int(r.GetMaxBatch()),
		InFlight:         int(r.GetInFlight()),
		KVUsedTokens:     r.GetKvUsedTokens(),
		KVCapacityTokens: r.GetKvCapacityTokens(),
		Lag:              r.GetLag().AsDuration(),
	}
}

func modelToProto(m ModelInfo) *workerv1.ModelInfo {
	return &workerv1.ModelInfo{
		Id: m.ID, DisplayName: m.DisplayName, Description: m.Description, Simulated: m.Simulated,
		ContextWindow: int64(m.ContextWindow), MaxOutputTokens: int64(m.MaxOutputTokens),
	}
}

func modelFromProto(m *workerv1.ModelInfo) ModelInfo {
	return ModelInfo{
		ID: m.GetId(), DisplayName: m.GetDisplayName(), Description: m.GetDescription(), Simulated: m.GetSimulated(),
		ContextWindow: int(m.GetContextWindow()), MaxOutputTokens: int(m.GetMaxOutputTokens()),
	}
}

// errorToConnect gives a Generate error that happened before generation began
// the code the remote client turns back into the same sentinel.
func errorToConnect(err error) *connect.Error {
	var ce *connect.Error
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, llm.ErrUnknownModel):
		return connect.NewError(connect.CodeNotFound, err)
	case errors.Is(err, llm.ErrInvalidRequest):
		return connect.NewError(connect.CodeInvalidArgument, err)
	case errors.Is(err, llm.ErrOverloaded):
		return connect.NewError(connect.CodeResourceExhausted, err)
	case errors.Is(err, llm.ErrUpstreamTimeout):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	default:
		return connect.NewError(connect.CodeUnavailable, err)
	}
}

// errorFromConnect is errorToConnect's inverse: the sentinel the code stands
// for, wrapping the worker's message; other codes (a dead connection, an
// internal fault) come back as they are.
func errorFromConnect(err error) error {
	var sentinel error
	switch connect.CodeOf(err) {
	case connect.CodeNotFound:
		sentinel = llm.ErrUnknownModel
	case connect.CodeInvalidArgument:
		sentinel = llm.ErrInvalidRequest
	case connect.CodeResourceExhausted:
		sentinel = llm.ErrOverloaded
	case connect.CodeDeadlineExceeded:
		sentinel = llm.ErrUpstreamTimeout
	default:
		return err
	}
	return &remoteError{sentinel: sentinel, err: err}
}

// remoteError is an error a worker returned, matching the sentinel its code
// stands for.
type remoteError struct {
	sentinel error
	err      error
}

func (e *remoteError) Error() string   { return e.err.Error() }
func (e *remoteError) Unwrap() []error { return []error{e.sentinel, e.err} }
