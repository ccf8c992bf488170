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
	"google.golang.org/protobuf/types/known/timestamppb"

	workerv1 "github.com/parleyhq/parley/gen/parley/worker/v1"
)

// This file converts between the Engine's Go types and WorkerService's wire
// types, both ways, so the server and the remote client agree by construction.

func requestToProto(req Request, affinityKey string) *workerv1.GenerateRequest {
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
	}
	for i, m := range req.Messages {
		pm := &workerv1.ChatMessage{Role: m.Role, Parts: make([]*workerv1.ContentPart, len(m.Parts))}
		for j, p := range m.Parts {
			switch {
			case p.Image != nil:
				pm.Parts[j] = &workerv1.ContentPart{Kind: &workerv1.ContentPart_Image{Image: &workerv1.Image{
					Data: p.Image.Data, MimeType: p.Image.MimeType}}}
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

func requestFromProto(in *workerv1.GenerateRequest) Request {
	req := Request{
		ID:          in.GetRequestId(),
		Model:       in.GetModel(),
		MaxTokens:   int(in.GetMaxTokens()),
		Temperature: in.Temperature,
		TopP:        in.TopP,
		Stop:        in.GetStop(),
		Seed:        in.Seed,
		Messages:    make([]ChatMessage, len(in.GetMessages())),
	}
	for i, m := range in.GetMessages() {
		cm := ChatMessage{Role: m.GetRole(), Parts: make([]Part, 0, len(m.GetParts()))}
		for _, p := range m.GetParts() {
			switch k := p.GetKind().(type) {
			case *workerv1.ContentPart_Text:
				cm.Parts = append(cm.Parts, Part{Text: k.Text})
			case *workerv1.ContentPart_Image:
				img := &Image{Data: k.Image.GetData(), MimeType: k.Image.GetMimeType()}
				if cfg, _, err := image.DecodeConfig(bytes.NewReader(img.Data)); err == nil {
					img.Width, img.Height = cfg.Width, cfg.Height
				}
				cm.Parts = append(cm.Parts, Part{Image: img})
			case *workerv1.ContentPart_Document:
				cm.Parts = append(cm.Parts, Part{Document: &Document{
					Filename: k.Document.GetFilename(), MimeType: k.Document.GetMimeType(),
					Text: string(k.Document.GetData())}})
			}
		}
		req.Messages[i] = cm
	}
	return req
}

func usageToProto(u Usage) *workerv1.Usage {
	return &workerv1.Usage{
		PromptTokens:     int64(u.PromptTokens),
		CompletionTokens: int64(u.CompletionTokens),
		CachedTokens:     int64(u.CachedTokens),
		Estimated:        u.Estimated,
	}
}

func usageFromProto(u *workerv1.Usage) Usage {
	return Usage{
		PromptTokens:     int(u.GetPromptTokens()),
		CompletionTokens: int(u.GetCompletionTokens()),
		CachedTokens:     int(u.GetCachedTokens()),
		Estimated:        u.GetEstimated(),
	}
}

func finishToProto(r FinishReason) workerv1.FinishReason {
	switch r {
	case FinishStop:
		return workerv1.FinishReason_FINISH_REASON_STOP
	case FinishLength:
		return workerv1.FinishReason_FINISH_REASON_LENGTH
	case FinishCancelled:
		return workerv1.FinishReason_FINISH_REASON_CANCELLED
	default:
		return workerv1.FinishReason_FINISH_REASON_ERROR
	}
}

func finishFromProto(r workerv1.FinishReason) FinishReason {
	switch r {
	case workerv1.FinishReason_FINISH_REASON_STOP:
		return FinishStop
	case workerv1.FinishReason_FINISH_REASON_LENGTH:
		return FinishLength
	case workerv1.FinishReason_FINISH_REASON_CANCELLED:
		return FinishCancelled
	default:
		return FinishError
	}
}

func loadToProto(id string, r LoadReport, at time.Time) *workerv1.LoadReport {
	return &workerv1.LoadReport{
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
	case errors.Is(err, ErrUnknownModel):
		return connect.NewError(connect.CodeNotFound, err)
	case errors.Is(err, ErrInvalidRequest):
		return connect.NewError(connect.CodeInvalidArgument, err)
	case errors.Is(err, ErrOverloaded):
		return connect.NewError(connect.CodeResourceExhausted, err)
	case errors.Is(err, ErrUpstreamTimeout):
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
		sentinel = ErrUnknownModel
	case connect.CodeInvalidArgument:
		sentinel = ErrInvalidRequest
	case connect.CodeResourceExhausted:
		sentinel = ErrOverloaded
	case connect.CodeDeadlineExceeded:
		sentinel = ErrUpstreamTimeout
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
