package chat

import (
	"context"

	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// BatchLine marks a request as one line of a batch (the Batch API): the
// batch runner puts it in the request's context. Such a request is not
// rate-limited (the runner paces it), runs at the line's priority, is
// priced at the model's batch prices and recorded on the batch channel, and
// is held under the line's own id, so that a line run again after a crash
// settles the same hold — charged once, whichever attempt's answer is kept.
type BatchLine struct {
	// RequestID names the line's generation, hold and usage record; the
	// same on every attempt.
	RequestID string
	// Priority is llm.PriorityIdle (idle capacity only), or
	// llm.PriorityBackground as the batch's window nears its end.
	Priority int
}

type batchLineKey struct{}

// WithBatchLine returns ctx marking its request as line l of a batch.
func WithBatchLine(ctx context.Context, l BatchLine) context.Context {
	return context.WithValue(ctx, batchLineKey{}, l)
}

func batchLineFrom(ctx context.Context) (BatchLine, bool) {
	l, ok := ctx.Value(batchLineKey{}).(BatchLine)
	return l, ok
}

// apiTerms are how an API-channel request is scheduled, priced and
// recorded: interactively, or as a batch's line.
type apiTerms struct {
	line     BatchLine
	batch    bool
	priority int
}

func (c *Core) apiTerms(ctx context.Context) apiTerms {
	if l, ok := batchLineFrom(ctx); ok {
		return apiTerms{line: l, batch: true, priority: l.Priority}
	}
	if p, ok := ctx.Value(priorityKey{}).(int); ok {
		return apiTerms{priority: p}
	}
	return apiTerms{priority: c.APIPriority}
}

func (t apiTerms) cost(m *models.Model, promptTokens, completionTokens int64) int64 {
	if t.batch {
		return m.BatchCost(promptTokens, completionTokens)
	}
	return m.Cost(promptTokens, completionTokens)
}

func (t apiTerms) channel() string {
	if t.batch {
		return store.ChannelBatch
	}
	return store.ChannelAPI
}

// holdID is the hold's id the line asks for ("" for a new one).
func (t apiTerms) holdID() string { return t.line.RequestID }

// requestID is the generation's id: the line's, or a new one.
func (t apiTerms) requestID(fresh func() string) string {
	if t.batch {
		return t.line.RequestID
	}
	return fresh()
}
