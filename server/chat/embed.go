package chat

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// MaxEmbedInputs bounds the texts of one embeddings request (OpenAI's own
// limit).
const MaxEmbedInputs = 2048

// EmbedRequest is one batch of texts to embed, as the surfaces hand it to
// the core.
type EmbedRequest struct {
	Model  string
	Inputs []string
	// Dimensions shortens the vectors (0: the model's full length).
	Dimensions int
	// User is the caller's end user, recorded on the usage record.
	User string
	// Rename, when set, gives a field's path as the caller's surface spells
	// it (e.g. "input" for inputs).
	Rename func(field string) string
	// Background runs it below interactive traffic (llm.PriorityBackground):
	// a file's ingestion.
	Background bool
	// Unbilled runs it without a hold, a charge or a usage record: a vector
	// store search's query, free by default.
	Unbilled bool
	// Web counts it against the caller's tier limits on the model (the
	// principal's Tier) instead of charging the balance, with a usage
	// record on the web channel: a web chat project's files.
	Web bool
}

// EmbedOutcome is an embeddings request's result and what it cost.
type EmbedOutcome struct {
	RequestID, Model string
	Vectors          [][]float32
	Usage            llm.Usage
	CostNanos        int64
}

// Embed runs one embeddings request on the API channel, the path chat takes
// without the stream: authenticate, validate and count, hold the price of
// the inputs' tokens, run on a worker, settle what the worker counted, and
// record the usage. An error means nothing was charged.
func (c *Core) Embed(ctx context.Context, req EmbedRequest) (*EmbedOutcome, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, apierr.Unauthenticated("no credentials")
	}
	rename := func(err error) error { return (&Request{Rename: req.Rename}).renamed(err) }
	m, ok := c.Models.Lookup(req.Model)
	switch {
	case req.Model == "":
		return nil, rename(apierr.InvalidArgument("model", "is required"))
	case !ok:
		return nil, c.Models.Unknown("model", req.Model)
	case !m.Embeds():
		return nil, apierr.InvalidArgument("model", m.ID+" is a chat model; it does not embed")
	case !c.keyAllows(p, req.Model, m):
		return nil, rename(keyRefuses(p, req.Model))
	case len(req.Inputs) == 0:
		return nil, rename(apierr.InvalidArgument("inputs", "must not be empty"))
	case len(req.Inputs) > MaxEmbedInputs:
		return nil, rename(apierr.InvalidArgument("inputs", fmt.Sprintf("%d inputs; at most %d", len(req.Inputs), MaxEmbedInputs)))
	case req.Dimensions < 0 || req.Dimensions > m.EmbeddingDimensions:
		return nil, rename(apierr.InvalidArgument("dimensions", fmt.Sprintf("must be 1 to %d for %s", m.EmbeddingDimensions, m.ID)))
	case len(req.User) > 256:
		return nil, apierr.InvalidArgument("user", "is over 256 bytes")
	}
	size := 0
	for i, in := range req.Inputs {
		size += len(in)
		switch {
		case in == "":
			return nil, rename(apierr.InvalidArgument(fmt.Sprintf("inputs[%d]", i), "must not be empty"))
		case !utf8.ValidString(in):
			return nil, rename(apierr.InvalidArgument(fmt.Sprintf("inputs[%d]", i), "is not valid UTF-8"))
		case len(in) > int(16*m.ContextWindow):
			return nil, rename(apierr.InvalidArgument(fmt.Sprintf("inputs[%d]", i), fmt.Sprintf("is %d bytes, over %s's limit", len(in), m.ID)))
		}
	}
	if c.MaxPromptBytes > 0 && size > c.MaxPromptBytes {
		return nil, rename(apierr.InvalidArgument("inputs", fmt.Sprintf("%d bytes in all, over the limit of %d", size, c.MaxPromptBytes)))
	}
	count := func() (int, error) {
		tokens := 0
		for i, in := range req.Inputs {
			n := c.Tokens.Count(in)
			if int64(n) > m.ContextWindow {
				return 0, rename(apierr.InvalidArgument(fmt.Sprintf("inputs[%d]", i), fmt.Sprintf("is %d tokens, over %s's limit of %d", n, m.ID, m.ContextWindow)))
			}
			tokens += n
		}
		return tokens, nil
	}
	// Inputs of more than ExactCountBytes are held at a bound (a token per
	// byte, at most the window each) and counted only once paid for.
	exact := size <= c.Budgets.withDefaults().ExactCountBytes
	tokens := 0
	if exact {
		var err error
		if tokens, err = count(); err != nil {
			return nil, err
		}
	} else {
		for _, in := range req.Inputs {
			tokens += int(min(int64(len(in)), m.ContextWindow))
		}
	}

	terms := c.apiTerms(ctx)
	priority := terms.priority
	if req.Background {
		priority = llm.PriorityBackground
	}
	requestID := terms.requestID(func() string { return uuid.Must(uuid.NewV7()).String() })
	if req.Unbilled {
		if !exact {
			if _, err := count(); err != nil {
				return nil, err
			}
		}
		res, err := c.Router.Embed(ctx, llm.EmbedRequest{ID: requestID, Model: m.ID, Inputs: req.Inputs, Dimensions: req.Dimensions}, priority)
		if err != nil {
			return nil, err
		}
		return &EmbedOutcome{RequestID: requestID, Model: m.ID, Vectors: res.Vectors, Usage: res.Usage}, nil
	}
	if req.Web {
		return c.embedWeb(ctx, p, m, req, requestID, priority, exact, tokens, count)
	}
	giveBack, err := c.Limits.KeyRate(ctx, p.KeyID, keyRates(p), int64(tokens))
	if err != nil {
		return nil, err
	}
	defer giveBack(int64(tokens))
	hold, err := c.Billing.ReserveScoped(ctx, terms.holdID(), p.UserID, p.Budgets(), terms.cost(m, int64(tokens), 0))
	if err != nil {
		return nil, err
	}
	if !exact {
		if _, err := count(); err != nil {
			_, _ = c.Billing.Settle(ctx, hold, 0, nil)
			return nil, err
		}
	}
	res, err := c.Router.Embed(ctx, llm.EmbedRequest{ID: requestID, Model: m.ID, Inputs: req.Inputs, Dimensions: req.Dimensions}, priority)
	if err != nil {
		_, _ = c.Billing.Settle(ctx, hold, 0, nil)
		if llm.CallerFault(err) {
			return nil, apierr.InvalidArgument("inputs", "the model's server refused the inputs as too large or malformed")
		}
		return nil, err
	}
	out := &EmbedOutcome{RequestID: requestID, Model: m.ID, Vectors: res.Vectors, Usage: res.Usage}
	out.CostNanos = terms.cost(m, int64(res.Usage.PromptTokens), 0)
	if s, err := c.Billing.Settle(ctx, hold, out.CostNanos, &store.UsageRecord{
		RequestID: requestID, UserID: p.UserID, APIKeyID: p.KeyID, Channel: terms.channel(), Model: m.ID,
		PromptTokens: int64(res.Usage.PromptTokens), Estimated: res.Usage.Estimated,
		FinishReason: string(llm.FinishStop), CreatedAt: c.Now(), EndUser: req.User, RequestedModel: requestedAs(req.Model, m),
	}); err == nil {
		out.CostNanos = s.ChargedNanos
	}
	return out, nil
}

// embedWeb runs an embedding counted against the tier's limits: the inputs'
// exact tokens are taken before it runs (all or nothing) and kept.
func (c *Core) embedWeb(ctx context.Context, p auth.Principal, m *models.Model, req EmbedRequest, requestID string, priority int, exact bool, tokens int, count func() (int, error)) (*EmbedOutcome, error) {
	if !exact {
		var err error
		if tokens, err = count(); err != nil {
			return nil, err
		}
	}
	if c.Limits == nil {
		return nil, apierr.FailedPrecondition("tier limits are not available on this server")
	}
	grant, err := c.Limits.Admit(ctx, p.UserID, p.Tier, m, int64(tokens), 0)
	if err != nil {
		return nil, err
	}
	res, err := c.Router.Embed(ctx, llm.EmbedRequest{ID: requestID, Model: m.ID, Inputs: req.Inputs, Dimensions: req.Dimensions}, priority)
	if err != nil {
		c.Limits.Release(ctx, grant)
		if llm.CallerFault(err) {
			return nil, apierr.InvalidArgument("inputs", "the model's server refused the inputs as too large or malformed")
		}
		return nil, err
	}
	c.Limits.Settle(ctx, grant, 0)
	_, _ = c.Billing.Settle(ctx, billing.Hold{}, 0, &store.UsageRecord{
		RequestID: requestID, UserID: p.UserID, Channel: "web", Model: m.ID,
		PromptTokens: int64(res.Usage.PromptTokens), Estimated: res.Usage.Estimated,
		FinishReason: string(llm.FinishStop), CreatedAt: c.Now(),
	})
	return &EmbedOutcome{RequestID: requestID, Model: m.ID, Vectors: res.Vectors, Usage: res.Usage}, nil
}
