package compat

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/sse"
)

// Background responses (background: true, with store): POST /v1/responses
// stores the response as queued and returns it at once (or, with stream,
// streams its events from the generation's log); the generation runs
// detached from the request (chat.Core.Detach) at the core's
// BackgroundPriority (--background-priority), and
// its end rewrites the stored response (completed, incomplete, failed or
// cancelled). GET /v1/responses/{id} polls it from any gateway, and with
// stream=true (and starting_after=N) streams, or resumes, its events; POST
// /v1/responses/{id}/cancel stops it from any gateway. A response whose
// gateway died before it ended reads as failed.

// startBackground stores plan's response as queued and starts it.
func (h *openAIHandler) startBackground(w http.ResponseWriter, r *http.Request, userID string, plan *responsePlan, stream bool) {
	if !plan.store {
		h.fail(w, r, apierr.InvalidArgument("background", "requires store: true (a background response is read back from the store)"))
		return
	}
	plan.resp.Background, plan.resp.Status = true, "queued"
	rec, err := plan.record()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := store.Message{ID: plan.outID, Role: "assistant", Model: plan.resp.Model, Status: store.MessageInProgress}
	if err := h.Core.SaveResponse(r.Context(), userID, plan.conv, plan.isNew, plan.inputs, out, rec); err != nil {
		h.fail(w, r, err)
		return
	}
	id := plan.resp.ID
	// The answer to this request is the response as queued: the generation
	// below rewrites plan.resp when it ends, possibly before this handler
	// writes (a short answer), and its output is in the store, not there.
	queued := plan.resp
	ctx := chat.WithPriority(r.Context(), h.Core.BackgroundPriority)
	err = h.Core.Detach(ctx, id, func(ctx context.Context, publish chat.Emit) {
		var all chat.Collector
		res, err := h.Core.Complete(ctx, &plan.chat, func(ev *parleyv1.GenerationEvent) error {
			_ = all.Emit(ev)
			return publish(ev)
		})
		h.endBackground(ctx, userID, plan, res, all.Choice(0), err)
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if stream {
		// Streamed from its log: the generation goes on if this client goes.
		s, err := h.loadResponse(r.Context(), userID, id)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.followResponse(w, r, s, -1)
		return
	}
	writeResponseJSON(w, &queued)
}

// endBackground rewrites the stored response with how it ended.
func (h *openAIHandler) endBackground(ctx context.Context, userID string, plan *responsePlan, out *chat.Outcome, choice *chat.CollectedChoice, err error) {
	cancelled := ctx.Err() != nil    // (Core.Cancel, from any gateway)
	ctx = context.WithoutCancel(ctx) // a cancelled response is still stored as such
	s, lerr := h.loadResponse(ctx, userID, plan.resp.ID)
	if lerr != nil {
		h.Core.Logger.ErrorContext(ctx, "a background response is gone before it ended", "response", plan.resp.ID, "err", lerr)
		return
	}
	r := &plan.resp
	msg := store.Message{Role: "assistant", Model: r.Model}
	if out != nil {
		msg.Parts = responseParts(choice)
		msg.Model, msg.Tokens, msg.FinishReason = out.Model, int64(out.Usage.CompletionTokens), string(out.FinishReason)
		r.Model, r.Usage, r.CompletedAt = out.Model, usageOf(out), nowPtr(h.Core.Now())
	}
	switch {
	case err != nil && cancelled:
		// Cancelled before it ran (while admitted or queued): nothing
		// was generated, nothing is charged.
		r.Status, r.Usage, r.CompletedAt = "cancelled", &responseUsage{}, nowPtr(h.Core.Now())
	case err != nil:
		r.Status, r.Error = "failed", &responseError{Code: "server_error", Message: err.Error()}
	case out.FinishReason == llm.FinishCancelled:
		r.Status = "cancelled"
	case interrupted(out) != nil:
		r.Status, r.Error = "failed", &responseError{Code: "server_error", Message: interrupted(out).Error()}
	case out.FinishReason == llm.FinishLength:
		r.Status, r.IncompleteDetails = "incomplete", &responseIncomplete{Reason: "max_output_tokens"}
	default:
		r.Status = "completed"
	}
	rec, rerr := plan.record()
	if rerr != nil {
		return
	}
	if err := h.Core.UpdateResponse(ctx, s.StoredResponse, msg, rec); err != nil {
		h.Core.Logger.ErrorContext(ctx, "storing a background response's end", "response", plan.resp.ID, "err", err)
		return
	}
	if h.Events != nil {
		h.Events.Emit(ctx, userID, "response."+r.Status, r.ID)
	}
}

func nowPtr(t time.Time) *int64 {
	u := t.Unix()
	return &u
}

func usageOf(out *chat.Outcome) *responseUsage {
	u := &responseUsage{InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens,
		TotalTokens: out.Usage.PromptTokens + out.Usage.CompletionTokens}
	u.InputTokensDetails.CachedTokens = out.Usage.CachedTokens
	return u
}

// record is the response's record to store: its object without output,
// the response it continued and its inputs.
func (p *responsePlan) record() (chat.ResponseRecord, error) {
	created := p.resp
	created.Output = nil
	var rec chat.ResponseRecord
	var err error
	if rec.Response, err = json.Marshal(created); err != nil {
		return rec, apierr.Internal()
	}
	if p.prev != nil {
		rec.Previous = p.prev.Output.ID
	}
	for _, m := range p.inputs {
		rec.Inputs = append(rec.Inputs, m.ID)
	}
	return rec, nil
}

// liveStatus is a stored background response's status as of now: queued
// while its generation runs is in_progress; queued with nothing running
// (its gateway died) is failed.
func (h *openAIHandler) liveStatus(ctx context.Context, s *storedResponse) *responseObject {
	obj := s.object()
	if obj.Status != "queued" {
		return obj
	}
	if h.Core.Generating(ctx, obj.ID) {
		obj.Status = "in_progress"
		obj.Output = []any{}
		return obj
	}
	// Not running: ended meanwhile (read again), or its gateway stopped.
	if again, err := h.loadResponse(ctx, s.Conversation.UserID, obj.ID); err == nil && again.resp.Status != "queued" {
		return again.object()
	}
	obj.Status, obj.Output = "failed", []any{}
	obj.Error = &responseError{Code: "server_error", Message: "the server running the response stopped before it ended; create it again"}
	return obj
}

// CancelResponse serves POST /v1/responses/{id}/cancel: a background
// response is stopped, on whichever gateway runs it, and returned as it
// ended (cancelled, or completed when it had ended first).
func (h *openAIHandler) CancelResponse(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	caller := p.UserID
	id := r.PathValue("id")
	s, err := h.loadResponse(r.Context(), caller, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !s.resp.Background {
		h.fail(w, r, apierr.InvalidArgument("response_id", "only a response created with background: true can be cancelled"))
		return
	}
	if _, err := h.Core.Cancel(r.Context(), id); err != nil {
		h.fail(w, r, err)
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.resp.Status == "queued" && time.Now().Before(deadline) && h.Core.Generating(r.Context(), id) {
		time.Sleep(20 * time.Millisecond)
		if again, err := h.loadResponse(r.Context(), caller, id); err == nil {
			s = again
		}
	}
	if again, err := h.loadResponse(r.Context(), caller, id); err == nil {
		s = again
	}
	writeResponseJSON(w, h.liveStatus(r.Context(), s))
}

// followResponse streams a background response's typed events from its
// generation's log (kept while it runs and for a few minutes after), from
// the start, writing those numbered after startingAfter: a client that
// lost its stream resumes it, on any gateway, with
// GET /v1/responses/{id}?stream=true&starting_after=N.
func (h *openAIHandler) followResponse(w http.ResponseWriter, r *http.Request, s *storedResponse, startingAfter int) {
	plan := &responsePlan{resp: s.resp, outID: s.Output.ID}
	plan.resp.Output = nil
	rs := &responseStream{chunkWriter: chunkWriter{w: w, enc: sse.NewEncoder(w)}, plan: plan, calls: map[int32]*streamItem{},
		writeFrom: startingAfter + 1}
	var started *parleyv1.GenerationStarted
	rs.save = func(out *chat.Outcome, _ []store.Part) error {
		// The runner stores the response; the stream tells how it ended.
		resp := &plan.resp
		resp.Model, resp.Usage, resp.CompletedAt = out.Model, usageOf(out), nowPtr(h.Core.Now())
		switch out.FinishReason {
		case llm.FinishLength:
			resp.Status, resp.IncompleteDetails = "incomplete", &responseIncomplete{Reason: "max_output_tokens"}
		case llm.FinishCancelled:
			resp.Status = "cancelled"
		case llm.FinishError:
			resp.Status = "failed"
		default:
			resp.Status = "completed"
		}
		return nil
	}
	stop := keepAlive(h.PingInterval, rs.ping)
	defer stop()
	err := h.Core.Follow(r.Context(), s.resp.ID, 0, func(ev *parleyv1.GenerationEvent) error {
		switch k := ev.GetKind().(type) {
		case *parleyv1.GenerationEvent_Started:
			started = k.Started
			return rs.start(0, k.Started)
		case *parleyv1.GenerationEvent_Delta:
			return rs.delta(0, k.Delta)
		case *parleyv1.GenerationEvent_Finished:
			rs.finish(0, chat.OutcomeOf(started, k.Finished))
		}
		return nil
	})
	if err != nil && !rs.started() {
		if connect.CodeOf(err) == connect.CodeNotFound {
			err = apierr.FailedPrecondition("the response's events are kept only while it runs and for 5 minutes after; GET it without stream")
		}
		h.fail(w, r, err)
	}
}
