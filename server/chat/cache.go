package chat

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/respcache"
	"github.com/parleyhq/parley/server/store"
)

// cacheTurn is one API request's business with the response cache: the key
// it is answered under, and what its generation emitted, to store.
type cacheTurn struct {
	c      *Core
	key    string
	events []*parleyv1.GenerationEvent
	size   int
	// out is the answer when it came from the cache.
	out *Outcome
}

// cacheable reports whether req may be answered from the cache: the caller
// opted in (the Parley-Cache header, else the API key's setting, else the
// operator's default) and the answer is determined by the request
// (temperature 0 or a seed, no tools, no images, documents or attachments
// to prepare).
func (c *Core) cacheable(ctx context.Context, p auth.Principal, req *Request) (bool, error) {
	if c.Cache == nil {
		return false, nil
	}
	on := c.CacheByDefault
	switch p.ResponseCache {
	case store.ResponseCacheOn:
		on = true
	case store.ResponseCacheOff:
		on = false
	}
	switch asked := respcache.FromContext(ctx); {
	case asked == nil || asked.Asked == "":
	case asked.Asked == "on":
		on = true
	case asked.Asked == "off":
		on = false
	default:
		return false, apierr.InvalidArgument(respcache.RequestHeader+" header", "must be on or off")
	}
	deterministic := (req.Temperature != nil && *req.Temperature == 0) || req.Seed != nil
	return on && deterministic && len(req.Tools) == 0 && len(req.Deferred) == 0, nil
}

// cacheKey is req's key: everything that shapes the answer, in the scope of
// one user.
func cacheKey(userID string, m *models.Model, req *Request, maxOut int64) string {
	normalised, _ := json.Marshal(struct {
		Messages          []llm.ChatMessage
		MaxOut            int64
		Temperature, TopP *float64
		Stop              []string
		Seed              *int64
		ResponseFormat    llm.ResponseFormat
		N, TopLogprobs    int
		Logprobs          bool
		EndUser           string
	}{req.Messages, maxOut, req.Temperature, req.TopP, req.Stop, req.Seed, req.ResponseFormat,
		max(req.N, 1), req.TopLogprobs, req.Logprobs, req.User})
	return respcache.Key(userID, m.ID, m.Version(), normalised)
}

// consultCache answers req from the cache when it can (turn.out set), or
// returns the turn that records this generation for it; a nil turn when the
// request does not use the cache.
func (c *Core) consultCache(ctx context.Context, p auth.Principal, m *models.Model, req *Request, maxOut int64, emit Emit) (*cacheTurn, error) {
	ok, err := c.cacheable(ctx, p, req)
	if !ok || err != nil {
		return nil, err
	}
	t := &cacheTurn{c: c, key: cacheKey(p.UserID, m, req, maxOut)}
	ticket := respcache.FromContext(ctx)
	data, level := c.Cache.Get(ctx, t.key)
	if level == respcache.Miss {
		ticket.SetStatus(respcache.StatusMiss)
		return t, nil
	}
	stored, err := respcache.Decode(data)
	if err != nil {
		c.Logger.WarnContext(ctx, "response cache: unreadable entry, answered as a miss", "err", err)
		ticket.SetStatus(respcache.StatusMiss)
		return t, nil
	}
	ticket.SetStatus(respcache.StatusHit)
	t.out, err = c.replay(ctx, p, m, req, stored, emit)
	return t, err
}

// replay streams a cached answer at full speed as a new generation, charged
// at the model's cache-hit price and recorded as a hit.
func (c *Core) replay(ctx context.Context, p auth.Principal, m *models.Model, req *Request, stored []*parleyv1.GenerationEvent, emit Emit) (*Outcome, error) {
	fin := proto.Clone(stored[len(stored)-1].GetFinished()).(*parleyv1.GenerationFinished)
	u := fin.GetUsage()
	cost := m.CacheHitCost(u.GetPromptTokens(), u.GetCompletionTokens())
	hold, err := c.Billing.ReserveScoped(ctx, "", p.UserID, p.Budgets(), cost)
	if err != nil {
		return nil, err
	}
	requestID := uuid.Must(uuid.NewV7()).String()
	out := &Outcome{
		RequestID: requestID, Model: m.ID, FinishReason: finishFromProto(fin.GetFinishReason()),
		Usage: llm.Usage{PromptTokens: int(u.GetPromptTokens()), CompletionTokens: int(u.GetCompletionTokens()),
			CachedTokens: int(u.GetCachedTokens()), Estimated: u.GetEstimated()},
	}
	for _, ch := range fin.GetChoices() {
		out.Choices = append(out.Choices, finishFromProto(ch.GetFinishReason()))
	}
	ev := &events{emit: emit, started: &parleyv1.GenerationStarted{RequestId: requestID, Model: m.ID, PromptTokens: u.GetPromptTokens()}}
	for _, e := range stored[:len(stored)-1] {
		if e.GetDelta() == nil {
			continue
		}
		if ev.start() != nil || ev.send(&parleyv1.GenerationEvent{Kind: e.Kind}) != nil {
			break // the client went away; the answer was served all the same
		}
	}
	out.CostNanos = cost
	if s, err := c.Billing.Settle(ctx, hold, cost, &store.UsageRecord{
		RequestID: requestID, UserID: p.UserID, APIKeyID: p.KeyID, Channel: "api", Model: m.ID,
		PromptTokens: u.GetPromptTokens(), CompletionTokens: u.GetCompletionTokens(), CachedTokens: u.GetCachedTokens(),
		Estimated: u.GetEstimated(), FinishReason: string(out.FinishReason), CreatedAt: c.Now(), EndUser: req.User, CacheHit: true,
		RequestedModel: requestedAs(req.Model, m),
	}); err == nil {
		out.CostNanos = s.ChargedNanos
	}
	fin.CostNanos = out.CostNanos
	if ev.start() == nil {
		_ = ev.send(&parleyv1.GenerationEvent{Kind: &parleyv1.GenerationEvent_Finished{Finished: fin}})
	}
	return out, nil
}

// record returns emit, also keeping the generation's deltas and finished
// event to store (up to the cache's entry bound).
func (t *cacheTurn) record(emit Emit) Emit {
	if t == nil {
		return emit
	}
	limit := t.c.Cache.MaxEntryBytes()
	return func(ev *parleyv1.GenerationEvent) error {
		if ev.GetStarted() == nil && t.size <= limit {
			t.size += proto.Size(ev)
			t.events = append(t.events, respcache.Clone(ev))
		}
		return emit(ev)
	}
}

// store keeps a generation that ended well (stop or length, on every
// choice) for the next identical request.
func (t *cacheTurn) store(ctx context.Context, out *Outcome) {
	if t == nil || t.size > t.c.Cache.MaxEntryBytes() || len(t.events) == 0 || t.events[len(t.events)-1].GetFinished() == nil {
		return
	}
	for _, r := range append([]llm.FinishReason{out.FinishReason}, out.Choices...) {
		if r != llm.FinishStop && r != llm.FinishLength {
			return
		}
	}
	data, err := respcache.Encode(t.events)
	if err != nil {
		return
	}
	t.c.Cache.Put(ctx, t.key, data)
}

func finishFromProto(r parleyv1.FinishReason) llm.FinishReason {
	for _, w := range []llm.FinishReason{llm.FinishStop, llm.FinishLength, llm.FinishCancelled, llm.FinishError, llm.FinishToolCalls} {
		if FinishReasonToProto(w) == r {
			return w
		}
	}
	return llm.FinishStop
}

// outcome is the cached answer, nil when there is none.
func (t *cacheTurn) outcome() *Outcome {
	if t == nil {
		return nil
	}
	return t.out
}
