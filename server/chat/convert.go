package chat

import (
	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/worker"
)

// FinishReasonToProto maps an engine finish reason to the API's.
func FinishReasonToProto(r worker.FinishReason) parleyv1.FinishReason {
	switch r {
	case worker.FinishStop:
		return parleyv1.FinishReason_FINISH_REASON_STOP
	case worker.FinishLength:
		return parleyv1.FinishReason_FINISH_REASON_LENGTH
	case worker.FinishCancelled:
		return parleyv1.FinishReason_FINISH_REASON_CANCELLED
	case worker.FinishError:
		return parleyv1.FinishReason_FINISH_REASON_ERROR
	}
	return parleyv1.FinishReason_FINISH_REASON_UNSPECIFIED
}

// UsageToProto maps engine usage to the API's.
func UsageToProto(u worker.Usage) *parleyv1.Usage {
	return &parleyv1.Usage{
		PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens),
		CachedTokens: int64(u.CachedTokens), Estimated: u.Estimated,
	}
}
