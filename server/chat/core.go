// Package chat is the one path every generation takes, API or web
// (docs/architecture.md): authenticate, admit, build context, schedule, stream,
// settle. Every surface — ChatService, the OpenAI-compatible endpoint,
// ConversationService — calls it; none has logic of its own.
package chat

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/respcache"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/tokenize"
)

// Router places a generation on a worker and streams its deltas: the
// scheduler. The job carries the placement hints (priority, affinity key)
// with the request; Generate reads it and never changes it.
type Router interface {
	Generate(ctx context.Context, job *llm.Job, emit llm.Emit) (llm.Result, error)
	// Embed runs a batch of embeddings on a worker.
	Embed(ctx context.Context, req llm.EmbedRequest, priority int) (llm.EmbedResult, error)
}

// Core runs generations.
type Core struct {
	Models  *models.Catalog
	Tokens  *tokenize.Tokenizer
	Billing *billing.Billing
	Router  Router
	Logger  *slog.Logger
	Now     func() time.Time
	// BackgroundPriority is background responses' and generations'
	// scheduling priority (WithPriority on the work Detach runs).
	BackgroundPriority int
	// AutoTitles names a new web conversation from its first exchange
	// (autoTitle).
	AutoTitles bool
	// APIPriority is the API channel's scheduling priority among the web
	// tiers (see Priority).
	APIPriority int
	// MaxPromptBytes bounds a prompt's text before it is tokenized, so a huge
	// body costs no tokenizer time.
	MaxPromptBytes int
	// Budgets bound the parts and attachments of a request, counted before
	// any is loaded (see Budgets).
	Budgets Budgets
	// Cache answers deterministic API requests that opt in from earlier
	// identical ones (nil: no response cache); CacheByDefault opts in the
	// requests that do not say (Parley-Cache: on|off) from keys with no
	// setting of their own.
	Cache          *respcache.Cache
	CacheByDefault bool

	// The web channel's parts: tier limits, stored conversations, and the
	// hub of generations in progress.
	Limits        *limits.Limits
	Conversations store.Conversations
	Messages      store.Messages
	// Projects holds the web chat's projects, and Retriever searches their
	// files (nil: no projects).
	Projects  store.Projects
	Retriever Retriever
	// Memories holds what users asked to be remembered (nil: no memory).
	Memories store.Memories
	// Generations is the shared log of web generations in progress.
	Generations store.Generations
	// Attachments resolves parts that name an uploaded attachment and
	// checks inline ones (nil: attachments are not available).
	Attachments *attach.Service
	// Background is the context web generations run under (they outlive
	// their requests); cancelling it stops them all, e.g. at shutdown.
	Background context.Context

	// Metrics, if set, times and counts the generations.
	Metrics *Metrics

	running sync.WaitGroup // web generations in progress
	owned   owned          // their cancel functions, by conversation
}

// Request is one generation as the surfaces hand it to the core: the
// engine's request and what only the core reads. The core sets the engine
// request's ID and MaxTokens (from MaxOutputTokens, once validated); the
// rest — Model (the catalog id), Messages, the sampling settings, Tools,
// ToolChoice, ParallelToolCalls, ResponseFormat, N, Logprobs and
// TopLogprobs — is passed to the engine as given. Tool definitions count
// toward the prompt, and N multiplies the output hold.
type Request struct {
	llm.Request
	// MaxOutputTokens bounds the completion; zero means the model's maximum.
	MaxOutputTokens int64
	// ClampOutput lowers a MaxOutputTokens over the model's maximum to the
	// maximum instead of refusing it: on the Anthropic surface max_tokens
	// is required, and clients with built-in model lists (Claude Code sends
	// 32,000 for a model it does not know) ask for more than a small model
	// can give, which only bounds what it could never reach.
	ClampOutput bool
	// User is the caller's end user, recorded on the usage record.
	User string
	// Rename, when set, gives a field's path as the caller's surface spells
	// it (e.g. "max_tokens" for max_output_tokens), so errors name what the
	// caller sent.
	Rename func(field string) string
	// Deferred are the parts whose preparation costs work (inline images
	// and documents, uploaded attachments), prepared only once the request
	// is admitted (see Defer).
	Deferred []Deferred
}

// renamed is err with the field it names spelled as the caller's surface
// spells it.
func (r *Request) renamed(err error) error {
	var fv parleyv1.FieldViolation
	if r.Rename == nil || !apierr.Detail(err, &fv) {
		return err
	}
	name := fv.GetField()
	if m := schemaFieldBase.FindStringSubmatch(name); m != nil {
		name = r.Rename(m[1]) + m[2] // a keyword inside a schema
	} else {
		name = r.Rename(name)
	}
	if name != fv.GetField() {
		return apierr.InvalidArgument(name, fv.GetDescription())
	}
	return err
}

// Outcome is how a generation ended.
type Outcome struct {
	RequestID    string
	Model        string
	FinishReason llm.FinishReason
	// Choices is how each choice ended, by index (len N); FinishReason is
	// choice 0's unless the whole generation was cancelled or failed.
	Choices   []llm.FinishReason
	Usage     llm.Usage
	CostNanos int64
	// Err is the cause of an error finish (not sent to clients verbatim).
	Err error
}

// Emit receives a generation's events in order; an error stops the
// generation (the client went away). An event is Emit's to read until it
// returns, not to keep: every delta goes out in the same event, filled anew
// (nothing is allocated per token), so an Emit that keeps events keeps
// copies of them (proto.Clone; the response cache does).
type Emit func(*parleyv1.GenerationEvent) error

// Complete runs one API-channel generation: billed by usage. The caller is
// the authenticated principal in ctx. Events go to emit: started, deltas,
// finished. An error returned before any event means nothing was charged;
// once started, the generation always ends with a finished event (unless the
// client is gone) and is settled, whatever happens to ctx.
func (c *Core) Complete(ctx context.Context, req *Request, emit Emit) (*Outcome, error) {
	call, out, err := c.admitAPI(ctx, req, emit)
	if call == nil {
		return out, err
	}
	var used int64
	defer func() { call.giveBack(used) }()
	out, err = c.stream(ctx, &call.job, call.ev, false)
	if err != nil {
		// Nothing was generated: release the whole hold.
		_, _ = c.Billing.Settle(ctx, call.hold, 0, nil)
		return nil, err
	}
	used = int64(out.Usage.PromptTokens + out.Usage.CompletionTokens)
	c.settleAPI(ctx, call, req, out)
	return out, nil
}

// apiCall is what Complete keeps of an admitted request while it streams.
// Admitting and settling are functions of their own, so that their locals
// stay out of Complete's frame, which an open stream keeps on its stack.
type apiCall struct {
	p        auth.Principal
	terms    apiTerms
	m        *models.Model
	giveBack func(used int64)
	cached   *cacheTurn
	hold     billing.Hold
	job      llm.Job
	ev       *events
}

// admitAPI authenticates, validates, limits and holds req. A nil call
// comes with the answer instead: an error, or the response cache's outcome.
//
//go:noinline
func (c *Core) admitAPI(ctx context.Context, req *Request, emit Emit) (*apiCall, *Outcome, error) {
	// Authenticate: the interceptor or middleware has put the principal in ctx.
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, nil, apierr.Unauthenticated("no credentials")
	}
	terms := c.apiTerms(ctx)
	// The user's request rate, tightened while the workers are loaded (a
	// batch's lines are paced by the batch runner instead).
	if !terms.batch {
		if err := c.Limits.Rate(ctx, p.UserID, p.Tier); err != nil {
			return nil, nil, err
		}
	}

	// Validate against the model, counting what the request asks for —
	// parts, attachments, their declared sizes — before doing any of it.
	m, maxOut, promptTokens, err := c.validate(req)
	if err == nil && len(req.Deferred) > 0 {
		if err = c.checkDeferred(ctx, p.UserID, m, req); err == nil {
			bound, _ := c.promptBound(req) // tighter, with the attachments' records
			promptTokens = int(min(int64(bound), m.ContextWindow-maxOut))
		}
	}
	if err != nil {
		return nil, nil, req.renamed(err)
	}
	// An organisation's key: its models, then its own rates (the prompt and
	// the most output taken up front, what was not used given back).
	if !c.keyAllows(p, req.Model, m) {
		return nil, nil, req.renamed(keyRefuses(p, req.Model))
	}
	giveBack, err := c.Limits.KeyRate(ctx, p.KeyID, keyRates(p), int64(promptTokens)+maxOut*int64(max(req.N, 1)))
	if err != nil {
		return nil, nil, err
	}
	admitted := false
	defer func() {
		if !admitted {
			giveBack(0)
		}
	}()
	// Answer from the response cache when the request opts in and is
	// deterministic: before any hold at the full price, and any GPU work.
	cached, err := c.consultCache(ctx, p, m, req, maxOut, emit)
	if out := cached.outcome(); err != nil || out != nil {
		return nil, out, err
	}
	emit = cached.record(emit)

	// Admit: hold the most this request can cost: the prompt once (counted,
	// or bounded from above where counting costs), and the most output for
	// each choice.
	hold, err := c.Billing.ReserveScoped(ctx, terms.holdID(), p.UserID, p.Budgets(), terms.cost(m, int64(promptTokens), maxOut*int64(max(req.N, 1))))
	if err != nil {
		return nil, nil, err
	}
	if !c.countsExactly(req) {
		// Paid for: now decode, extract, load, and count exactly.
		if promptTokens, err = c.prepareAndCount(ctx, p, req, m, maxOut, promptTokens); err != nil {
			_, _ = c.Billing.Settle(ctx, hold, 0, nil)
			return nil, nil, req.renamed(err)
		}
	}

	// Schedule and stream.
	requestID := terms.requestID(func() string { return uuid.Must(uuid.NewV7()).String() })
	gen := req.Request
	gen.ID, gen.Model, gen.MaxTokens = requestID, m.ID, int(maxOut)
	if !m.Can(models.CapReasoning) {
		gen.ReasoningEffort = "" // a hint for a model that does not reason
	}
	admitted = true
	return &apiCall{
		p: p, terms: terms, m: m, giveBack: giveBack, cached: cached, hold: hold,
		job: llm.Job{Request: gen, Priority: terms.priority, AffinityKey: promptAffinity(req.Messages)},
		ev:  &events{emit: emit, started: &parleyv1.GenerationStarted{RequestId: requestID, Model: m.ID, PromptTokens: int64(promptTokens)}, choices: make([]llm.FinishReason, max(req.N, 1))},
	}, nil, nil
}

// settleAPI charges what out used, returns the rest of the hold, and
// records the usage with the charge, in one write; then it sends the
// finished event and offers out to the response cache.
//
//go:noinline
func (c *Core) settleAPI(ctx context.Context, call *apiCall, req *Request, out *Outcome) {
	p, m, requestID := call.p, call.m, call.job.Request.ID
	out.CostNanos = call.terms.cost(m, int64(out.Usage.PromptTokens), int64(out.Usage.CompletionTokens))
	if s, err := c.Billing.Settle(ctx, call.hold, out.CostNanos, &store.UsageRecord{
		RequestID: requestID, UserID: p.UserID, APIKeyID: p.KeyID, Channel: call.terms.channel(), Model: m.ID,
		PromptTokens: int64(out.Usage.PromptTokens), CompletionTokens: int64(out.Usage.CompletionTokens),
		CachedTokens: int64(out.Usage.CachedTokens), Estimated: out.Usage.Estimated,
		FinishReason: string(out.FinishReason), CreatedAt: c.Now(), EndUser: req.User, RequestedModel: requestedAs(req.Model, m),
	}); err == nil {
		out.CostNanos = s.ChargedNanos
	}
	_ = call.ev.finish(out)
	call.cached.store(ctx, out)
}

// validate checks a request against its model, counts its parts, and
// counts its prompt's tokens — exactly, or where that costs (see
// countsExactly) a bound of them, at most the model's window less the
// output.
func (c *Core) validate(req *Request) (*models.Model, int64, int, error) {
	m, ok := c.Models.Lookup(req.Model)
	if req.Model == "" {
		return nil, 0, 0, apierr.InvalidArgument("model", "is required")
	}
	if !ok {
		return nil, 0, 0, c.Models.Unknown("model", req.Model)
	}
	if m.Embeds() {
		return nil, 0, 0, apierr.InvalidArgument("model", m.ID+" is an embedding model; use EmbeddingService.Embed or /v1/embeddings")
	}
	maxOut := req.MaxOutputTokens
	switch {
	case maxOut == 0:
		maxOut = m.MaxOutputTokens
	case maxOut < 0:
		return nil, 0, 0, apierr.InvalidArgument("max_output_tokens", "must be positive")
	case maxOut > m.MaxOutputTokens && req.ClampOutput:
		maxOut = m.MaxOutputTokens
	case maxOut > m.MaxOutputTokens:
		return nil, 0, 0, apierr.InvalidArgument("max_output_tokens", fmt.Sprintf("%d is over %s's maximum of %d", maxOut, m.ID, m.MaxOutputTokens))
	}
	if err := validateOptions(req, maxOut); err != nil {
		return nil, 0, 0, err
	}
	if err := checkCapabilities(req, m); err != nil {
		return nil, 0, 0, err
	}
	if len(req.Messages) == 0 {
		return nil, 0, 0, apierr.InvalidArgument("messages", "must not be empty")
	}
	if err := c.Budgets.withDefaults().countParts(req.Messages, len(req.Deferred)); err != nil {
		return nil, 0, 0, err
	}
	deferred := req.deferredAt()
	size := 0
	for i, msg := range req.Messages {
		switch msg.Role {
		case "system", "user", "assistant", "tool":
		default:
			return nil, 0, 0, apierr.InvalidArgument(fmt.Sprintf("messages[%d].role", i), "must be system, user, assistant or tool")
		}
		if len(msg.Parts) == 0 {
			return nil, 0, 0, apierr.InvalidArgument(fmt.Sprintf("messages[%d].parts", i), "must not be empty")
		}
		for j, part := range msg.Parts {
			field := fmt.Sprintf("messages[%d].parts[%d]", i, j)
			if deferred[[2]int{i, j}] {
				continue // a placeholder: checked by checkDeferred
			}
			switch {
			case part.ToolCall != nil:
				if msg.Role != "assistant" {
					return nil, 0, 0, apierr.InvalidArgument(field, "a tool call may only be in an assistant message")
				}
				if err := validateCall(field, part.ToolCall); err != nil {
					return nil, 0, 0, err
				}
				size += len(part.ToolCall.Name) + len(part.ToolCall.Arguments)
			case part.ToolResult != nil:
				if msg.Role != "tool" {
					return nil, 0, 0, apierr.InvalidArgument(field, "a tool result may only be in a tool message")
				}
				switch {
				case part.ToolResult.ToolCallID == "":
					return nil, 0, 0, apierr.InvalidArgument(field+".tool_call_id", "is required")
				case len(part.ToolResult.ToolCallID) > 256:
					return nil, 0, 0, apierr.InvalidArgument(field+".tool_call_id", "is over 256 bytes")
				case !utf8.ValidString(part.ToolResult.Content):
					return nil, 0, 0, apierr.InvalidArgument(field+".content", "is not valid UTF-8")
				}
				size += len(part.ToolResult.Content)
			case msg.Role == "tool":
				return nil, 0, 0, apierr.InvalidArgument(field, "a tool message holds tool results only")
			case part.Image != nil:
				if !m.Accepts("image") {
					return nil, 0, 0, apierr.InvalidArgument(field, m.ID+" does not accept images")
				}
			case part.Document != nil:
				if !m.Accepts("document") {
					return nil, 0, 0, apierr.InvalidArgument(field, m.ID+" does not accept documents")
				}
				size += len(part.Document.Text)
			default:
				if part.Text == "" {
					// An assistant turn of tool calls only has no text part at
					// all; an empty one is a client's mistake.
					return nil, 0, 0, apierr.InvalidArgument(field+".text", "must not be empty")
				}
				if !utf8.ValidString(part.Text) {
					return nil, 0, 0, apierr.InvalidArgument(field+".text", "is not valid UTF-8")
				}
				size += len(part.Text)
			}
		}
	}
	// No token is longer than 16 bytes on average over a window's worth of
	// text, so a prompt past 16 bytes per token of the window cannot fit:
	// refuse it by size, before spending tokenizer time on it.
	limit := int(16 * m.ContextWindow)
	if c.MaxPromptBytes > 0 {
		limit = min(limit, c.MaxPromptBytes)
	}
	if size > limit {
		return nil, 0, 0, apierr.InvalidArgument("messages", fmt.Sprintf("the prompt's text is %d bytes, over %s's limit of %d", size, m.ID, limit))
	}
	if err := checkTemperature(req.Temperature); err != nil {
		return nil, 0, 0, err
	}
	if req.TopP != nil && (*req.TopP <= 0 || *req.TopP > 1) {
		return nil, 0, 0, apierr.InvalidArgument("top_p", "must be in (0, 1]")
	}
	if len(req.Stop) > 4 {
		return nil, 0, 0, apierr.InvalidArgument("stop", "at most 4 stop sequences")
	}
	for i, s := range req.Stop {
		if len(s) == 0 || len(s) > 64 {
			return nil, 0, 0, apierr.InvalidArgument(fmt.Sprintf("stop[%d]", i), "must be 1 to 64 bytes")
		}
	}
	if len(req.User) > 256 {
		return nil, 0, 0, apierr.InvalidArgument("user", "is over 256 bytes")
	}
	for _, t := range req.Tools {
		size += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if size > limit {
		return nil, 0, 0, apierr.InvalidArgument("tools", fmt.Sprintf("the prompt with its tools is %d bytes, over %s's limit of %d", size, m.ID, limit))
	}
	// The engine matches the stop sequences against the output: they are
	// input, bounded with the rest.
	for _, s := range req.Stop {
		size += len(s)
	}
	if size > limit {
		return nil, 0, 0, apierr.InvalidArgument("stop", fmt.Sprintf("the prompt with its stop sequences is %d bytes, over %s's limit of %d", size, m.ID, limit))
	}
	promptTokens, exact := c.promptBound(req)
	if !exact {
		return m, maxOut, int(min(int64(promptTokens), m.ContextWindow-maxOut)), nil
	}
	if int64(promptTokens)+maxOut > m.ContextWindow {
		return nil, 0, 0, windowError(promptTokens, maxOut, m)
	}
	return m, maxOut, promptTokens, nil
}

func windowError(promptTokens int, maxOut int64, m *models.Model) error {
	return apierr.InvalidArgument("messages", fmt.Sprintf(
		"the prompt is %d tokens; with %s %d it exceeds %s's context window of %d", promptTokens, "max_output_tokens", maxOut, m.ID, m.ContextWindow))
}

// requestedAs is the name a request asked for, when it was an alias of m
// (the usage record's RequestedModel), or "".
func requestedAs(asked string, m *models.Model) string {
	if asked == m.ID {
		return ""
	}
	return asked
}

// CountPrompt counts req's prompt as Complete would price it, without
// generating or charging (Anthropic's count_tokens): its deferred images and
// documents are checked and prepared through the same budgets and pool.
func (c *Core) CountPrompt(ctx context.Context, req Request) (int, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return 0, apierr.Unauthenticated("no credentials")
	}
	m, ok := c.Models.Lookup(req.Model)
	switch {
	case req.Model == "":
		return 0, apierr.InvalidArgument("model", "is required")
	case !ok:
		return 0, c.Models.Unknown("model", req.Model)
	case m.Embeds():
		return 0, apierr.InvalidArgument("model", m.ID+" is an embedding model")
	}
	if err := c.checkDeferred(ctx, p.UserID, m, &req); err != nil {
		return 0, req.renamed(err)
	}
	if err := c.prepare(ctx, p, &req); err != nil {
		return 0, req.renamed(err)
	}
	return llm.RequestPromptTokens(c.Tokens, &llm.Request{Tools: req.Tools, Messages: req.Messages}), nil
}

// prepareAndCount does a request's deferred work, once it is admitted, and
// counts its prompt exactly, within the hold's bound of held tokens.
func (c *Core) prepareAndCount(ctx context.Context, p auth.Principal, req *Request, m *models.Model, maxOut int64, held int) (int, error) {
	if err := c.prepare(ctx, p, req); err != nil {
		return 0, err
	}
	wreq := llm.Request{Tools: req.Tools, Messages: req.Messages}
	n := llm.RequestPromptTokens(c.Tokens, &wreq)
	if int64(n)+maxOut > m.ContextWindow {
		return 0, windowError(n, maxOut, m)
	}
	if n > held {
		c.Logger.ErrorContext(ctx, "a prompt counted over the bound it was held at", "tokens", n, "held", held)
	}
	return n, nil
}

// stream schedules job and relays its deltas as events. The started event
// goes first: at once when eager (the web channel, whose client waits for
// the ids), else just before the first delta, so a request refused by the
// scheduler (overload, no worker) is still a plain error the surface can
// answer with a status. An error is returned only when nothing was started
// (nothing to charge).
func (c *Core) stream(ctx context.Context, job *llm.Job, ev *events, eager bool) (*Outcome, error) {
	if eager {
		if err := ev.start(); err != nil {
			return nil, err
		}
	}
	res, err := c.Router.Generate(ctx, job, c.Metrics.timed(job.Request.Model, ev.delta))
	c.Metrics.count(job.Request.Model, res.Usage)
	out := &Outcome{RequestID: job.Request.ID, Model: job.Request.Model, FinishReason: res.FinishReason, Usage: res.Usage, Err: res.Err}
	switch {
	case err != nil && !ev.sent && llm.CallerFault(err):
		// The engine's own checks (e.g. its context window) refused it: the
		// caller's fault, reported without the worker's words.
		return nil, apierr.InvalidArgument("messages", "the model's server refused the request as too large or malformed")
	case err != nil && !ev.sent:
		return nil, err
	case err != nil:
		out.FinishReason, out.Err = llm.FinishError, err
	case res.Err != nil && res.FinishReason == llm.FinishError:
		c.Logger.WarnContext(ctx, "generation failed midway", "request", job.Request.ID, "err", res.Err)
	}
	return out, nil
}

// events numbers and sends one generation's events.
type events struct {
	emit    Emit
	seq     uint64
	started *parleyv1.GenerationStarted
	sent    bool
	// choices records each choice's end as the engine reports it.
	choices []llm.FinishReason
	// citations are the passages the answer cites (file search), sent with
	// the finished event.
	citations []*parleyv1.Citation
	// deltaEv is the event every delta is sent in, made at the first.
	deltaEv *deltaEvent
}

func (e *events) send(ev *parleyv1.GenerationEvent) error {
	e.seq++
	ev.Seq = e.seq
	return e.emit(ev)
}

// start sends the started event once.
func (e *events) start() error {
	if e.sent {
		return nil
	}
	e.sent = true
	return e.send(&parleyv1.GenerationEvent{Kind: &parleyv1.GenerationEvent_Started{Started: e.started}})
}

// delta sends one piece of output (after started). A delta that only ends a
// choice is recorded for the finished event, not sent.
func (e *events) delta(d llm.Delta) error {
	if d.Finish != "" {
		if d.Choice >= 0 && d.Choice < len(e.choices) {
			e.choices[d.Choice] = d.Finish
		}
		if d.Text == "" && d.Reasoning == "" && len(d.ToolCalls) == 0 {
			return nil
		}
	}
	if err := e.start(); err != nil {
		return err
	}
	if e.deltaEv == nil {
		e.deltaEv = new(deltaEvent)
		e.deltaEv.kind.Delta = &e.deltaEv.delta
		e.deltaEv.ev.Kind = &e.deltaEv.kind
	}
	fillDelta(&e.deltaEv.delta, d)
	return e.send(&e.deltaEv.ev)
}

// deltaEvent is the event a generation's deltas go out in, one after the
// other (Emit does not keep it).
type deltaEvent struct {
	ev    parleyv1.GenerationEvent
	kind  parleyv1.GenerationEvent_Delta
	delta parleyv1.GenerationDelta
}

// finish sends the last event of a generation (after started).
func (e *events) finish(out *Outcome) error {
	if err := e.start(); err != nil {
		return err
	}
	fin := &parleyv1.GenerationFinished{
		FinishReason: FinishReasonToProto(out.FinishReason),
		Usage:        UsageToProto(out.Usage),
		CostNanos:    out.CostNanos,
		Citations:    e.citations,
	}
	if out.FinishReason == llm.FinishError {
		fin.ErrorMessage = "the generation failed on the worker"
	}
	out.Choices = e.choiceFinishes(out.FinishReason)
	for i, r := range out.Choices {
		fin.Choices = append(fin.Choices, &parleyv1.ChoiceFinish{Index: int32(i), FinishReason: FinishReasonToProto(r)})
	}
	return e.send(&parleyv1.GenerationEvent{Kind: &parleyv1.GenerationEvent_Finished{Finished: fin}})
}

// choiceFinishes is how each choice ended: as the engine said, else (and
// always when the generation as a whole was cancelled or failed) overall.
func (e *events) choiceFinishes(overall llm.FinishReason) []llm.FinishReason {
	out := make([]llm.FinishReason, max(len(e.choices), 1))
	whole := overall == llm.FinishCancelled || overall == llm.FinishError
	for i := range out {
		out[i] = overall
		if i < len(e.choices) && e.choices[i] != "" && !whole {
			out[i] = e.choices[i]
		}
	}
	return out
}

// promptAffinity keys the API channel's prefix affinity: a hash of the
// prompt's first few thousand bytes (about the first thousand tokens), so
// requests sharing a long prefix (a system prompt, a few-shot preamble)
// land where that prefix is cached.
func promptAffinity(msgs []llm.ChatMessage) string {
	const budget = 4096
	h := fnv.New64a()
	n := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			t := p.Text
			if p.Document != nil {
				t = p.Document.Text
			}
			if len(t) > budget-n {
				t = t[:budget-n]
			}
			_, _ = h.Write([]byte(m.Role))
			_, _ = h.Write([]byte(t))
			if n += len(t); n >= budget {
				return strconv.FormatUint(h.Sum64(), 36)
			}
		}
	}
	return strconv.FormatUint(h.Sum64(), 36)
}
