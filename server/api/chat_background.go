package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

// Background generations over Connect: stored as the Responses API stores
// its responses (chat.Core.SaveResponse, in an archived conversation of the
// caller's), run detached from the request (chat.Core.Detach) at the
// lowest interactive priority, read, followed and cancelled from any
// gateway. A generation's id names its conversation and its output message
// ("gen_" and both UUIDs in hex), so reading it is one LoadResponse; the
// record holds its status and, once it has ended, its whole answer.

// backgroundRecord is a background generation's stored state.
type backgroundRecord struct {
	Status   string          `json:"status"`
	Error    string          `json:"error,omitempty"`
	Response json.RawMessage `json:"response,omitempty"` // a CompleteResponse, in protojson
}

// StartBackground starts a generation that outlives the call.
func (h *ChatHandler) StartBackground(ctx context.Context, req *connect.Request[parleyv1.StartBackgroundRequest]) (*connect.Response[parleyv1.StartBackgroundResponse], error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, apierr.Unauthenticated("no credentials")
	}
	m := req.Msg.GetRequest()
	if m == nil {
		return nil, apierr.InvalidArgument("request", "is required")
	}
	if m.GetFileSearch() != nil {
		return nil, apierr.InvalidArgument("request.file_search", "is not supported in the background yet")
	}
	r, err := h.chatRequest(ctx, m, m.Temperature, m.TopP, m.Seed, m.ParallelToolCalls)
	if err != nil {
		return nil, err
	}
	conv := store.Conversation{ID: uuid.Must(uuid.NewV7()).String(), UserID: p.UserID, Model: m.GetModel()}
	out := store.Message{ID: uuid.Must(uuid.NewV7()).String(), Role: "assistant", Model: m.GetModel(), Status: store.MessageInProgress}
	rec, _ := json.Marshal(backgroundRecord{Status: "queued"})
	if err := h.Core.SaveResponse(ctx, p.UserID, conv, true, nil, out, chat.ResponseRecord{Response: rec}); err != nil {
		return nil, err
	}
	id := chat.StoredID("gen_", conv.ID, out.ID)
	err = h.Core.Detach(chat.WithPriority(ctx, h.Core.BackgroundPriority), id, func(ctx context.Context, publish chat.Emit) {
		var all chat.Collector
		res, err := h.Core.Complete(ctx, &r, func(ev *parleyv1.GenerationEvent) error {
			_ = all.Emit(ev)
			return publish(ev)
		})
		h.endBackground(context.WithoutCancel(ctx), p.UserID, conv.ID, out.ID, res, &all, err)
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.StartBackgroundResponse{Generation: &parleyv1.BackgroundGeneration{
		Id: id, Status: parleyv1.BackgroundStatus_BACKGROUND_STATUS_QUEUED}}), nil
}

// endBackground stores how a background generation ended.
func (h *ChatHandler) endBackground(ctx context.Context, userID, convID, msgID string, out *chat.Outcome, all *chat.Collector, err error) {
	s, lerr := h.Core.LoadResponse(ctx, userID, convID, msgID)
	if lerr != nil {
		h.Core.Logger.ErrorContext(ctx, "a background generation is gone before it ended", "conversation", convID, "err", lerr)
		return
	}
	rec := backgroundRecord{Status: "completed"}
	msg := store.Message{Role: "assistant"}
	switch {
	case err != nil:
		rec.Status, rec.Error = "failed", err.Error()
	case out.FinishReason == llm.FinishCancelled:
		rec.Status = "cancelled"
	case out.FinishReason == llm.FinishError:
		rec.Status, rec.Error = "failed", "the generation failed on its worker"
	}
	if out != nil {
		res := &parleyv1.CompleteResponse{RequestId: out.RequestID, Model: out.Model, FinishReason: chat.FinishReasonToProto(out.FinishReason),
			Usage: chat.UsageToProto(out.Usage), CostNanos: out.CostNanos, Message: all.Choice(0).Message()}
		for i, reason := range out.Choices {
			ch := all.Choice(i)
			res.Choices = append(res.Choices, &parleyv1.Choice{Index: int32(i), Message: ch.Message(), FinishReason: chat.FinishReasonToProto(reason), Logprobs: ch.Logprobs})
		}
		rec.Response, _ = protojson.Marshal(res)
		msg.Model, msg.Tokens, msg.FinishReason = out.Model, int64(out.Usage.CompletionTokens), string(out.FinishReason)
	}
	data, _ := json.Marshal(rec)
	if err := h.Core.UpdateResponse(ctx, s, msg, chat.ResponseRecord{Response: data}); err != nil {
		h.Core.Logger.ErrorContext(ctx, "storing a background generation's end", "conversation", convID, "err", err)
	}
}

var backgroundStatuses = map[string]parleyv1.BackgroundStatus{
	"queued": parleyv1.BackgroundStatus_BACKGROUND_STATUS_QUEUED, "completed": parleyv1.BackgroundStatus_BACKGROUND_STATUS_COMPLETED,
	"cancelled": parleyv1.BackgroundStatus_BACKGROUND_STATUS_CANCELLED, "failed": parleyv1.BackgroundStatus_BACKGROUND_STATUS_FAILED,
}

// background reads the caller's background generation as of now.
func (h *ChatHandler) background(ctx context.Context, id string) (*parleyv1.BackgroundGeneration, error) {
	p, _ := auth.FromContext(ctx)
	convID, msgID, ok := chat.ParseStoredID("gen_", id)
	if !ok {
		return nil, apierr.NotFound("background generation")
	}
	s, err := h.Core.LoadResponse(ctx, p.UserID, convID, msgID)
	if errors.Is(err, chat.ErrNoResponse) {
		return nil, apierr.NotFound("background generation")
	} else if err != nil {
		return nil, err
	}
	var rec backgroundRecord
	if json.Unmarshal(s.Record.Response, &rec) != nil || rec.Status == "" {
		return nil, apierr.NotFound("background generation")
	}
	g := &parleyv1.BackgroundGeneration{Id: id, Status: backgroundStatuses[rec.Status], Error: rec.Error}
	if len(rec.Response) > 0 {
		g.Response = &parleyv1.CompleteResponse{}
		if err := protojson.Unmarshal(rec.Response, g.Response); err != nil {
			return nil, apierr.Internal()
		}
	}
	if rec.Status == "queued" {
		if h.Core.Generating(ctx, id) {
			g.Status = parleyv1.BackgroundStatus_BACKGROUND_STATUS_IN_PROGRESS
		} else {
			g.Status, g.Error = parleyv1.BackgroundStatus_BACKGROUND_STATUS_FAILED, "the server running it stopped before it ended; start it again"
		}
	}
	return g, nil
}

// GetBackground returns one of the caller's background generations.
func (h *ChatHandler) GetBackground(ctx context.Context, req *connect.Request[parleyv1.GetBackgroundRequest]) (*connect.Response[parleyv1.GetBackgroundResponse], error) {
	g, err := h.background(ctx, req.Msg.GetId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetBackgroundResponse{Generation: g}), nil
}

// CancelBackground stops one of the caller's background generations.
func (h *ChatHandler) CancelBackground(ctx context.Context, req *connect.Request[parleyv1.CancelBackgroundRequest]) (*connect.Response[parleyv1.CancelBackgroundResponse], error) {
	id := req.Msg.GetId()
	g, err := h.background(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, err := h.Core.Cancel(ctx, id); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && g.GetStatus() == parleyv1.BackgroundStatus_BACKGROUND_STATUS_IN_PROGRESS; {
		time.Sleep(20 * time.Millisecond)
		if g, err = h.background(ctx, id); err != nil {
			return nil, err
		}
	}
	return connect.NewResponse(&parleyv1.CancelBackgroundResponse{Generation: g}), nil
}

// FollowBackground streams a background generation's events after
// after_seq.
func (h *ChatHandler) FollowBackground(ctx context.Context, req *connect.Request[parleyv1.FollowBackgroundRequest], stream *connect.ServerStream[parleyv1.FollowBackgroundResponse]) error {
	id := req.Msg.GetId()
	if _, err := h.background(ctx, id); err != nil {
		return err
	}
	err := h.Core.Follow(ctx, id, req.Msg.GetAfterSeq(), func(ev *parleyv1.GenerationEvent) error {
		return stream.Send(&parleyv1.FollowBackgroundResponse{Event: ev})
	})
	if connect.CodeOf(err) == connect.CodeNotFound {
		return apierr.FailedPrecondition("the generation's events are kept only while it runs and for 5 minutes after; GetBackground returns its answer")
	}
	return err
}
