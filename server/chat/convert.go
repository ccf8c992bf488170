package chat

import (
	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

// FinishReasonToProto maps an engine finish reason to the API's.
func FinishReasonToProto(r llm.FinishReason) parleyv1.FinishReason {
	switch r {
	case llm.FinishStop:
		return parleyv1.FinishReason_FINISH_REASON_STOP
	case llm.FinishLength:
		return parleyv1.FinishReason_FINISH_REASON_LENGTH
	case llm.FinishCancelled:
		return parleyv1.FinishReason_FINISH_REASON_CANCELLED
	case llm.FinishError:
		return parleyv1.FinishReason_FINISH_REASON_ERROR
	case llm.FinishToolCalls:
		return parleyv1.FinishReason_FINISH_REASON_TOOL_CALLS
	}
	return parleyv1.FinishReason_FINISH_REASON_UNSPECIFIED
}

// UsageToProto maps engine usage to the API's.
func UsageToProto(u llm.Usage) *parleyv1.Usage {
	return &parleyv1.Usage{
		PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens),
		CachedTokens: int64(u.CachedTokens), Estimated: u.Estimated,
	}
}

// fillDelta sets out to an engine delta on the wire, replacing what out
// held (its tool calls and log probabilities are new slices: a caller may
// keep those).
func fillDelta(out *parleyv1.GenerationDelta, d llm.Delta) {
	out.Text, out.Reasoning, out.Choice, out.ToolCalls, out.Logprobs = d.Text, d.Reasoning, int32(d.Choice), nil, nil
	for _, c := range d.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, &parleyv1.ToolCallDelta{Index: int32(c.Index), Id: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	for _, lp := range d.Logprobs {
		p := &parleyv1.TokenLogprob{Token: lp.Token, Logprob: lp.Logprob, Bytes: lp.Bytes}
		for _, t := range lp.Top {
			p.TopLogprobs = append(p.TopLogprobs, &parleyv1.TopLogprob{Token: t.Token, Logprob: t.Logprob, Bytes: t.Bytes})
		}
		out.Logprobs = append(out.Logprobs, p)
	}
}

// CitationToProto is a cited passage on the wire.
func CitationToProto(c store.Citation) *parleyv1.Citation {
	return &parleyv1.Citation{Number: int32(c.Number), FileId: c.FileID, Filename: c.Filename, Quote: c.Quote, Score: c.Score}
}

// OutcomeOf is the outcome a generation's started and finished events
// tell (what a follower of its log knows of it).
func OutcomeOf(st *parleyv1.GenerationStarted, fin *parleyv1.GenerationFinished) *Outcome {
	u := fin.GetUsage()
	out := &Outcome{RequestID: st.GetRequestId(), Model: st.GetModel(), FinishReason: finishFromProto(fin.GetFinishReason()),
		Usage: llm.Usage{PromptTokens: int(u.GetPromptTokens()), CompletionTokens: int(u.GetCompletionTokens()),
			CachedTokens: int(u.GetCachedTokens()), Estimated: u.GetEstimated()}, CostNanos: fin.GetCostNanos()}
	for _, c := range fin.GetChoices() {
		out.Choices = append(out.Choices, finishFromProto(c.GetFinishReason()))
	}
	return out
}
