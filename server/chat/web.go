package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/tokenize"
)

// MaxMessageBytes bounds one user message's text on the web channel.
const MaxMessageBytes = 256 << 10

// maxHistory bounds how many stored messages are read to build a context.
const maxHistory = 10_000

// SendRequest is one web message: a new user turn in a conversation.
type SendRequest struct {
	// ConversationID is empty to start a new conversation.
	ConversationID string
	// Model is the catalog id; empty means the conversation's, or the first.
	Model string
	// Parts are the user's message.
	Parts []store.Part
	// MaxOutputTokens caps the answer; zero means the model's maximum.
	MaxOutputTokens int64
	// ParentID is the message the new one follows: nil for the active
	// branch's leaf, "" for a new root (an edit of the first question), else
	// an assistant message of the conversation.
	ParentID *string
	// ProjectID starts a new conversation in one of the user's projects.
	ProjectID string
	// Temperature is the sampling temperature (0 to 2); nil: the model's.
	Temperature *float64
}

// RegenerateRequest asks for a new version of an assistant message.
type RegenerateRequest struct {
	// ConversationID and MessageID name the assistant message.
	ConversationID, MessageID string
	// Model is the catalog id; empty means the conversation's.
	Model string
	// MaxOutputTokens caps the answer; zero means the model's maximum.
	MaxOutputTokens int64
	// Temperature is the sampling temperature (0 to 2); nil: the model's.
	Temperature *float64
}

// checkTemperature refuses a temperature outside 0 to 2.
func checkTemperature(t *float64) error {
	if t != nil && !(*t >= 0 && *t <= 2) { // NaN too
		return apierr.InvalidArgument("temperature", "must be between 0 and 2")
	}
	return nil
}

// MaxInstructions bounds a user's custom instructions and a conversation's
// system prompt, in characters.
const MaxInstructions = 8000

// persistEvery and persistDeltas throttle how often an answer in progress
// is rewritten in the store, whichever comes first, after the first delta
// (saved at once). They bound what a crash of the gateway can lose of the
// text the user saw stream: the last second, or the last 100 deltas.
const (
	persistEvery  = time.Second
	persistDeltas = 100
)

// keepEvery is how often the gateway running a generation renews its claim
// on the conversation (a shared store's claim lasts 20 s unless renewed).
const keepEvery = 5 * time.Second

// Send runs one web-channel generation: limited by tier, persisted, and
// outliving the connection. It validates, admits against the tier limits,
// stores the user message, starts the generation in the background and
// returns it for the caller to follow. Nothing is stored for a refused
// message.
func (c *Core) Send(ctx context.Context, req SendRequest) (string, error) {
	// Authenticate.
	p, ok := auth.FromContext(ctx)
	if !ok {
		return "", apierr.Unauthenticated("no credentials")
	}

	// Validate the message and find the conversation.
	text, err := validateParts(req.Parts)
	if err != nil {
		return "", err
	}
	now := c.Now()
	conv := store.Conversation{ID: req.ConversationID, UserID: p.UserID, CreatedAt: now, UpdatedAt: now}
	isNew := conv.ID == ""
	if isNew {
		conv.ID = uuid.Must(uuid.NewV7()).String()
		if req.ParentID != nil && *req.ParentID != "" {
			return "", apierr.InvalidArgument("parent_message_id", "no such message in the conversation")
		}
		if req.ProjectID != "" {
			if c.Projects == nil {
				return "", apierr.FailedPrecondition("projects are not available on this server")
			}
			if _, err := c.Projects.Get(ctx, p.UserID, req.ProjectID); errors.Is(err, store.ErrNotFound) {
				return "", apierr.InvalidArgument("project_id", "no such project")
			} else if err != nil {
				return "", apierr.Store(err)
			}
			conv.ProjectID = req.ProjectID
		}
	} else if conv, err = c.Conversations.Get(ctx, p.UserID, req.ConversationID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", apierr.InvalidArgument("conversation_id", "no such conversation")
		}
		return "", apierr.Store(err)
	} else if req.ProjectID != "" && req.ProjectID != conv.ProjectID {
		return "", apierr.InvalidArgument("project_id", "only starts a new conversation; this one's project cannot change")
	}
	m, maxOut, err := c.webModel(req.Model, conv, req.MaxOutputTokens)
	if err != nil {
		return "", err
	}
	if err := checkTemperature(req.Temperature); err != nil {
		return "", err
	}
	conv.Model = m.ID

	// Count the message's parts and check its attachments from their
	// records, before loading any.
	if err := c.checkWebParts(ctx, p.UserID, m, req.Parts); err != nil {
		return "", err
	}

	userMsg := store.Message{ID: uuid.Must(uuid.NewV7()).String(), ConversationID: conv.ID, Role: "user", Parts: req.Parts, CreatedAt: now}
	g := webGen{p: p, conv: conv, m: m, maxOut: maxOut, temperature: req.Temperature, floor: inputFloor(text), user: &userMsg, isNew: isNew, title: titleFrom(text),
		// An untitled conversation (new, or made empty with a system prompt)
		// is named after its first exchange.
		nameIt: conv.Title == ""}
	// The context: the branch the message continues, then the message.
	g.context = func(tree *store.Tree, conv store.Conversation) ([]store.Message, error) {
		parent := ""
		switch {
		case req.ParentID == nil:
			parent = c.leaf(tree, conv)
		case *req.ParentID != "":
			pm, ok := tree.Get(*req.ParentID)
			if !ok {
				return nil, apierr.InvalidArgument("parent_message_id", "no such message in the conversation")
			}
			if pm.Role != "assistant" {
				return nil, apierr.InvalidArgument("parent_message_id", "must be an assistant message (to edit a question, send under its parent)")
			}
			parent = pm.ID
		}
		userMsg.ParentID = parent
		return append(tree.Path(parent), userMsg), nil
	}
	if err := c.startWeb(ctx, &g); err != nil {
		return "", err
	}
	return conv.ID, nil
}

// Regenerate runs a new version of an assistant message: a sibling answer
// to the same question, from the same context, limited and stored as a
// Send's answer is. It returns when the generation has started.
func (c *Core) Regenerate(ctx context.Context, req RegenerateRequest) error {
	if req.MessageID == "" {
		return apierr.InvalidArgument("message_id", "is required")
	}
	p, conv, err := c.callersConversation(ctx, req.ConversationID)
	if err != nil {
		return err
	}
	m, maxOut, err := c.webModel(req.Model, conv, req.MaxOutputTokens)
	if err != nil {
		return err
	}
	if err := checkTemperature(req.Temperature); err != nil {
		return err
	}
	tree, err := c.Tree(ctx, conv.ID)
	if err != nil {
		return err
	}
	question, err := regenerable(tree, req.MessageID)
	if err != nil {
		return err
	}
	g := webGen{p: p, conv: conv, m: m, maxOut: maxOut, temperature: req.Temperature, floor: inputFloor(partsText(question.Parts)), question: question.ID}
	g.context = func(tree *store.Tree, _ store.Conversation) ([]store.Message, error) {
		if _, err := regenerable(tree, req.MessageID); err != nil { // (deleted since)
			return nil, err
		}
		return tree.Path(question.ID), nil
	}
	return c.startWeb(ctx, &g)
}

// ContinueRequest asks to go on with an answer that stopped at its length
// limit.
type ContinueRequest struct {
	// ConversationID and MessageID name the answer.
	ConversationID, MessageID string
	// MaxOutputTokens caps what is added; zero means the model's maximum.
	MaxOutputTokens int64
	// Temperature is the sampling temperature (0 to 2); nil: the model's.
	Temperature *float64
}

// continueNudge is the turn after the partial answer that asks the model to
// go on; it is sent, never stored.
const continueNudge = "Continue exactly where your previous answer stopped, without repeating any of it."

// Continue goes on with an answer that stopped at its length limit, with
// the model that wrote it: what the model writes is added to the same
// message, as Send's answer is stored. It returns when the generation has
// started.
func (c *Core) Continue(ctx context.Context, req ContinueRequest) error {
	p, conv, err := c.callersConversation(ctx, req.ConversationID)
	if err != nil {
		return err
	}
	tree, err := c.Tree(ctx, conv.ID)
	if err != nil {
		return err
	}
	a, ok := tree.Get(req.MessageID)
	if !ok || a.Role != "assistant" || a.FinishReason != string(llm.FinishLength) || a.Status != store.MessageComplete {
		return apierr.InvalidArgument("message_id", "must be an answer of the conversation that stopped at its length limit")
	}
	question, err := regenerable(tree, a.ID)
	if err != nil {
		return err
	}
	m, maxOut, err := c.webModel(a.Model, conv, req.MaxOutputTokens)
	if err != nil {
		return err
	}
	if err := checkTemperature(req.Temperature); err != nil {
		return err
	}
	g := webGen{p: p, conv: conv, m: m, maxOut: maxOut, temperature: req.Temperature, floor: inputFloor(partsText(question.Parts)), question: question.ID, continues: &a}
	g.context = func(tree *store.Tree, _ store.Conversation) ([]store.Message, error) {
		cur, ok := tree.Get(a.ID)
		if !ok || cur.FinishReason != string(llm.FinishLength) { // (deleted, or continued, since)
			return nil, apierr.InvalidArgument("message_id", "must be an answer of the conversation that stopped at its length limit")
		}
		g.continues = &cur
		return append(tree.Path(a.ID), store.Message{Role: "user", Parts: []store.Part{{Text: continueNudge}}}), nil
	}
	return c.startWeb(ctx, &g)
}

// callersConversation is the caller's conversation id: not_found for
// anyone else's.
func (c *Core) callersConversation(ctx context.Context, id string) (auth.Principal, store.Conversation, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return p, store.Conversation{}, apierr.Unauthenticated("no credentials")
	}
	conv, err := c.Conversations.Get(ctx, p.UserID, id)
	if errors.Is(err, store.ErrNotFound) {
		return p, conv, apierr.NotFound("conversation")
	} else if err != nil {
		return p, conv, apierr.Store(err)
	}
	return p, conv, nil
}

// regenerable returns the question an assistant message answers.
func regenerable(tree *store.Tree, messageID string) (store.Message, error) {
	a, ok := tree.Get(messageID)
	if !ok || a.Role != "assistant" {
		return store.Message{}, apierr.InvalidArgument("message_id", "must be an assistant message of the conversation")
	}
	q, ok := tree.Get(a.ParentID)
	if !ok || q.Role != "user" {
		return store.Message{}, apierr.InvalidArgument("message_id", "does not answer a stored question")
	}
	return q, nil
}

// webModel resolves a web request's model (given, else the conversation's,
// else the catalog's first) and its output cap.
func (c *Core) webModel(modelID string, conv store.Conversation, maxOut int64) (*models.Model, int64, error) {
	if modelID == "" {
		modelID = conv.Model
	}
	if modelID == "" {
		modelID = c.Models.All()[0].ID
	}
	m, ok := c.Models.Lookup(modelID)
	if !ok {
		return nil, 0, apierr.UnknownModel("model", modelID)
	}
	if m.Embeds() {
		return nil, 0, apierr.InvalidArgument("model", m.ID+" is an embedding model; it cannot chat")
	}
	if maxOut == 0 || maxOut > m.MaxOutputTokens {
		maxOut = m.MaxOutputTokens
	}
	if maxOut < 0 {
		return nil, 0, apierr.InvalidArgument("max_output_tokens", "must be positive")
	}
	return m, maxOut, nil
}

// webGen is one web generation being started: a Send's (with the user
// message to store) or a Regenerate's (answering a stored question).
type webGen struct {
	p      auth.Principal
	conv   store.Conversation
	m      *models.Model
	maxOut int64
	// temperature is the request's sampling temperature; nil: the model's.
	temperature *float64
	floor       int64 // the input tokens admitted before the prompt is counted
	// user is the question to store (Send), with isNew and title for a new
	// conversation; question is the stored one answered again (Regenerate).
	user   *store.Message
	isNew  bool
	title  string
	nameIt bool // the conversation has no title yet: autoTitle names it
	// continues is the answer a Continue adds to (nil: a new answer).
	continues *store.Message
	question  string
	// found are the passages the project's file search gave the model
	// (cited by the answer's markers).
	found []Passage
	// context returns the stored messages the answer follows, oldest first,
	// ending with the question, from the conversation's tree (read under
	// the generation's claim).
	context func(tree *store.Tree, conv store.Conversation) ([]store.Message, error)
}

// startWeb admits, claims the conversation, builds the context, stores the
// question and the answer's in-progress record, and starts the generation.
func (c *Core) startWeb(ctx context.Context, g *webGen) error {
	p, conv, m := g.p, g.conv, g.m
	// Admit against the tier's limits at a floor — the request, the output
	// reserved, the fewest tokens the question's text can be — before the
	// history is loaded and the prompt counted; the exact count is taken
	// (or refused) after.
	grant, err := c.Limits.Admit(ctx, p.UserID, p.Tier, m, g.floor, g.maxOut)
	if err != nil {
		return err
	}

	// One generation at a time per conversation.
	if err := c.Generations.Start(ctx, conv.ID); errors.Is(err, store.ErrConflict) {
		c.Limits.Release(ctx, grant)
		return apierr.FailedPrecondition("a generation is already running in this conversation; wait for it or cancel it")
	} else if err != nil {
		c.Limits.Release(ctx, grant)
		return apierr.Unavailable("generations are unavailable", 2*time.Second)
	}
	// The generation outlives this request, not the server: Background
	// (cancelled at shutdown) is its parent.
	genCtx, cancel := context.WithCancel(c.background(ctx))
	c.owned.add(conv.ID, cancel)
	abandon := func() {
		cancel()
		c.owned.remove(conv.ID)
		_ = c.Generations.Abandon(context.WithoutCancel(ctx), conv.ID)
	}
	refuse := func(err error) error {
		abandon()
		c.Limits.Release(ctx, grant)
		return err
	}

	// Build the context from the conversation's tree, read now that the
	// conversation is claimed (so its leaf is current): the branch, cut to
	// the model's window (the newest turns kept), after the system message.
	tree := store.NewTree(nil)
	if !g.isNew {
		if conv, err = c.Conversations.Get(ctx, p.UserID, conv.ID); err != nil {
			return refuse(apierr.NotFound("conversation"))
		}
		conv.Model = m.ID
		if tree, err = c.tree(ctx, conv.ID, true); err != nil {
			return refuse(err)
		}
	}
	stored, err := g.context(tree, conv)
	if err != nil {
		return refuse(err)
	}
	project, err := c.project(ctx, p.UserID, conv)
	if err != nil {
		return refuse(err)
	}
	asked := ""
	if len(stored) > 0 {
		asked = partsText(stored[len(stored)-1].Parts)
	}
	memories, err := c.memories(ctx, p.UserID, asked)
	if err != nil {
		return refuse(err)
	}
	system, err := c.systemMessage(ctx, p.UserID, conv, project, memories)
	if err != nil {
		return refuse(err)
	}
	if system != nil {
		stored = append([]store.Message{*system}, stored...)
	}
	questionAt := len(stored) - 1 // what a project's search adds follows it
	if project != nil {
		// A project's chat answers from its files: the question's passages
		// follow it as a file_search call's result.
		if stored, g.found, err = c.searchProject(ctx, *project, stored); err != nil {
			return refuse(err)
		}
	}
	msgs, promptTokens, err := c.fitContext(ctx, p.UserID, m, g.maxOut, stored, questionAt)
	if err != nil {
		return refuse(err)
	}

	// Take the rest of the tier allowance the prompt needs, now counted.
	if err := c.Limits.Adjust(ctx, &grant, int64(promptTokens)); err != nil {
		return refuse(err)
	}

	// Persist the question, then the answer's record (in progress: a crash
	// leaves it, never a question with no answer), before generating.
	now := c.Now()
	fail := func(err error) error {
		abandon()
		c.Limits.Settle(ctx, grant, 0)
		return apierr.Store(err)
	}
	question := g.question
	if g.user != nil {
		// Its attachments are kept from now on (the sweep deletes only
		// uploads no message references); one deleted meanwhile fails it.
		if err := c.Attachments.Reference(ctx, p.UserID, g.user.Parts); err != nil {
			abandon()
			c.Limits.Settle(ctx, grant, 0)
			return err
		}
		g.user.Tokens = int64(c.Tokens.Count(partsText(g.user.Parts)))
		if g.isNew {
			conv.Title = g.title
			if err := c.Conversations.Create(ctx, conv); err != nil {
				return fail(err)
			}
		}
		if err := c.Messages.Append(ctx, *g.user); err != nil {
			return fail(err)
		}
		question = g.user.ID
	}
	answer := store.Message{ID: uuid.Must(uuid.NewV7()).String(), ConversationID: conv.ID, Role: "assistant", ParentID: question,
		Model: m.ID, Parts: []store.Part{}, Status: store.MessageInProgress, CreatedAt: now}
	if g.continues != nil {
		answer = *g.continues // the text so far is kept; what comes is added
		answer.Status, answer.FinishReason = store.MessageInProgress, ""
	}
	if err := c.Messages.Put(ctx, answer); err != nil {
		return fail(err)
	}
	if err := c.Conversations.SetLeaf(ctx, p.UserID, conv.ID, answer.ID); err != nil {
		c.Logger.ErrorContext(ctx, "setting the active branch", "conversation", conv.ID, "err", err)
	}
	_ = c.Conversations.Touch(ctx, p.UserID, conv.ID, now, g.title)

	// Generate in the background: the connection may go, the answer stays.
	requestID := uuid.Must(uuid.NewV7()).String()
	job := llm.Job{
		Request:     llm.Request{ID: requestID, Model: m.ID, Messages: msgs, MaxTokens: int(g.maxOut), Temperature: g.temperature},
		Priority:    Priority(p.Tier),
		AffinityKey: conv.ID,
	}
	ev := &events{emit: c.publisher(context.WithoutCancel(genCtx), conv.ID), started: &parleyv1.GenerationStarted{
		RequestId: requestID, ConversationId: conv.ID, MessageId: answer.ID, Model: m.ID, UserMessageId: question,
		MemoryIds: memoryIDs(memories),
	}}
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		c.runWeb(genCtx, p, conv, m, job, answer, grant, ev, g.found)
		if g.nameIt && c.AutoTitles {
			c.autoTitle(context.WithoutCancel(genCtx), p, conv.ID, m, g.title, g.user, answer.ID)
		}
	}()
	return nil
}

// systemMessage is the context's first message: the user's custom
// instructions, then the project's, then the conversation's system prompt,
// then the memories chosen for the message; nil when there is none of it.
func (c *Core) systemMessage(ctx context.Context, userID string, conv store.Conversation, project *store.Project, memories []store.Memory) (*store.Message, error) {
	instructions, err := c.Conversations.Instructions(ctx, userID)
	if err != nil {
		return nil, apierr.Store(err)
	}
	var texts []string
	projectInstructions := ""
	if project != nil {
		projectInstructions = project.Instructions
	}
	for _, t := range []string{instructions, projectInstructions, conv.SystemPrompt, memoryText(memories)} {
		if t = strings.TrimSpace(t); t != "" {
			texts = append(texts, t)
		}
	}
	if len(texts) == 0 {
		return nil, nil
	}
	return &store.Message{Role: "system", Parts: []store.Part{{Text: strings.Join(texts, "\n\n")}}}, nil
}

// leaf is the active branch's last message: the conversation's, or (for
// one stored before branches) the newest.
func (c *Core) leaf(tree *store.Tree, conv store.Conversation) string {
	if _, ok := tree.Get(conv.LeafID); ok {
		return conv.LeafID
	}
	return tree.Newest()
}

// Tree reads a conversation's messages as their tree. An answer left in
// progress while no generation runs there (its gateway died) is marked
// interrupted, in the store and in the tree returned.
func (c *Core) Tree(ctx context.Context, conversationID string) (*store.Tree, error) {
	return c.tree(ctx, conversationID, false)
}

// tree is Tree; claimed says the caller holds the conversation's
// generation claim, so no answer there is really in progress.
func (c *Core) tree(ctx context.Context, conversationID string, claimed bool) (*store.Tree, error) {
	msgs, err := c.history(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	stale := -1
	for i := range msgs {
		if msgs[i].Status == store.MessageInProgress {
			stale = i
		}
	}
	if stale >= 0 {
		running := !claimed
		if !claimed {
			if running, err = c.Generations.Running(ctx, conversationID); err != nil {
				running = true // unknown: leave it
			}
		}
		if !running {
			for i := range msgs {
				if msgs[i].Status != store.MessageInProgress {
					continue
				}
				if err := c.Messages.MarkInterrupted(ctx, conversationID, store.MessageKey{ID: msgs[i].ID, CreatedAt: msgs[i].CreatedAt}); err != nil {
					return nil, apierr.Store(err)
				}
				c.Logger.InfoContext(ctx, "an answer left in progress by a gateway that stopped is marked interrupted",
					"conversation", conversationID, "message", msgs[i].ID)
			}
			// Read again: an answer that finished meanwhile stays finished.
			if msgs, err = c.history(ctx, conversationID); err != nil {
				return nil, err
			}
		}
	}
	return store.NewTree(msgs), nil
}

// Branch returns the branch of a conversation through messageID (empty:
// the active branch) down to its leaf, with the tree it is part of. A
// messageID not in the conversation is an invalid_argument of field.
func (c *Core) Branch(ctx context.Context, conv store.Conversation, messageID, field string) ([]store.Message, *store.Tree, error) {
	tree, err := c.Tree(ctx, conv.ID)
	if err != nil {
		return nil, nil, err
	}
	if messageID == "" {
		messageID = c.leaf(tree, conv)
	} else if _, ok := tree.Get(messageID); !ok {
		return nil, nil, apierr.InvalidArgument(field, "no such message in the conversation")
	}
	return tree.Branch(messageID), tree, nil
}

// runWeb streams one web generation into its live log, saving the answer
// as it grows (every persistEvery or persistDeltas deltas, one write), then
// stores it — whole, or partial with its finish reason when cancelled or
// failed — and settles the limits.
func (c *Core) runWeb(ctx context.Context, p auth.Principal, conv store.Conversation, m *models.Model, job llm.Job, msg store.Message, grant limits.Grant, ev *events, found []Passage) {
	// Renew the conversation's claim while the generation runs, however
	// long it waits for a worker: if this gateway dies the claim lapses
	// soon, and the answer reads as interrupted.
	stopKeeping := c.keepClaim(ctx, conv.ID)
	defer func() {
		stopKeeping()
		c.owned.remove(conv.ID)
		if err := c.Generations.Finish(context.WithoutCancel(ctx), conv.ID, linger); err != nil {
			c.Logger.Error("finishing a generation's log", "conversation", conv.ID, "err", err)
		}
	}()
	done := context.WithoutCancel(ctx)
	var answer strings.Builder
	answer.WriteString(partsText(msg.Parts)) // a continued answer's text so far (a new one has none)
	earlier := msg.Tokens
	emit := ev.emit
	// The zero lastSave makes the first delta save at once: a crash never
	// loses the start of what the user watched, and after it at most
	// persistEvery (or persistDeltas) of the stream.
	lastSave, unsaved := time.Time{}, 0
	ev.emit = func(e *parleyv1.GenerationEvent) error {
		if d := e.GetDelta(); d != nil {
			answer.WriteString(d.GetText())
			unsaved++
		}
		err := emit(e)
		if unsaved > 0 && (unsaved >= persistDeltas || c.Now().Sub(lastSave) >= persistEvery) {
			grown := msg
			grown.Parts = []store.Part{{Text: answer.String()}}
			if err := c.Messages.Put(done, grown); err != nil {
				c.Logger.ErrorContext(done, "saving an answer in progress", "conversation", conv.ID, "err", err)
			}
			lastSave, unsaved = c.Now(), 0
		}
		return err
	}
	out, err := c.stream(ctx, &job, ev, true)
	if err != nil { // only if the started event could not be sent: not possible here
		out = &Outcome{RequestID: job.Request.ID, Model: m.ID, FinishReason: llm.FinishError, Err: err}
	}
	if ctx.Err() != nil && out.FinishReason != llm.FinishStop && out.FinishReason != llm.FinishLength {
		out.FinishReason = llm.FinishCancelled
	}
	now := c.Now()
	msg.Parts, msg.Tokens, msg.FinishReason, msg.Status = []store.Part{{Text: answer.String()}}, earlier+int64(out.Usage.CompletionTokens), string(out.FinishReason), store.MessageComplete
	for _, cite := range Citations(answer.String(), found) {
		msg.Parts = append(msg.Parts, store.Part{Citation: &cite})
		ev.citations = append(ev.citations, CitationToProto(cite))
	}
	if err := c.Messages.Put(done, msg); err != nil {
		c.Logger.ErrorContext(done, "storing the answer", "conversation", conv.ID, "err", err)
	}
	// A conversation deleted while it generated keeps nothing: its messages
	// were deleted with it, and this answer (or a user message that raced
	// the delete) goes too.
	if _, err := c.Conversations.Get(done, p.UserID, conv.ID); errors.Is(err, store.ErrNotFound) {
		_ = c.Messages.DeleteConversation(done, conv.ID)
	}
	_ = c.Conversations.Touch(done, p.UserID, conv.ID, now, "")
	c.Limits.Settle(done, grant, int64(out.Usage.CompletionTokens))
	// The usage record takes the billing path with nothing held: committed
	// at no cost, in the ledger's store, before the finished event.
	c.recordWeb(done, p, job.Request.ID, m.ID, out.Usage, out.FinishReason, now)
	_ = ev.finish(out)
}

// history reads a conversation's stored messages, oldest first.
func (c *Core) history(ctx context.Context, conversationID string) ([]store.Message, error) {
	var all []store.Message
	cursor := ""
	for {
		page, next, err := c.Messages.List(ctx, conversationID, store.PageRequest{Size: 1000, Cursor: cursor})
		if err != nil {
			return nil, apierr.Store(err)
		}
		all = append(all, page...)
		if next == "" || len(all) >= maxHistory {
			return all, nil
		}
		cursor = next
	}
}

// fitContext turns stored messages into the prompt, dropping the oldest
// turns (never a system message, never the question — stored[question] —
// or what follows it) until the prompt and the answer fit the model's
// window; when even that is too long and the question carries documents,
// they are retrieved from (retrieveFromDocuments). Messages are converted
// newest first, and once the window is full the older ones (which would be
// dropped) are left as they are: their attachments never loaded, their
// text never counted.
func (c *Core) fitContext(ctx context.Context, userID string, m *models.Model, maxOut int64, stored []store.Message, question int) ([]llm.ChatMessage, int, error) {
	budget := int(m.ContextWindow - maxOut)
	// Drop by per-message counts (each message tokenized once), then check
	// the exact count: recounting the whole prompt after every drop was
	// quadratic in the length of a long conversation.
	trailer := llm.PromptTokens(c.Tokens, nil) // the assistant tag alone
	converted := make([]*llm.ChatMessage, len(stored))
	sizes := make([]int, len(stored))
	total := trailer
	convert := func(i int) error {
		s := stored[i]
		if s.Role == "assistant" && s.FinishReason == string(llm.FinishError) && partsText(s.Parts) == "" {
			return nil // a failed answer with nothing in it adds nothing
		}
		parts, err := c.workerParts(ctx, userID, m, s.Parts, i == question)
		if err != nil {
			return err
		}
		converted[i] = &llm.ChatMessage{Role: s.Role, Parts: parts}
		sizes[i] = llm.PromptTokens(c.Tokens, []llm.ChatMessage{*converted[i]}) - trailer
		total += sizes[i]
		return nil
	}
	// What is never dropped first: system messages, the question and what
	// follows it.
	for i := range stored {
		if stored[i].Role == "system" || i >= question {
			if err := convert(i); err != nil {
				return nil, 0, err
			}
		}
	}
	// Then the others, newest first, while the window has room.
	for i := question - 1; i >= 0 && total <= budget; i-- {
		if stored[i].Role != "system" {
			if err := convert(i); err != nil {
				return nil, 0, err
			}
		}
	}
	msgs := make([]llm.ChatMessage, 0, len(stored))
	kept := sizes[:0]
	asked := -1 // the question's index in msgs
	for i, msg := range converted {
		if msg != nil {
			if i == question {
				asked = len(msgs)
			}
			msgs = append(msgs, *msg)
			kept = append(kept, sizes[i])
		}
	}
	sizes = kept
	oldest := func() int { // the oldest droppable: never a system message, never the question or after
		for i := 0; i < asked; i++ {
			if msgs[i].Role != "system" {
				return i
			}
		}
		return -1
	}
	n := total
	var whole *llm.ChatMessage // the question before its documents were retrieved from
	for tries := 0; ; {
		for n > budget {
			if drop := oldest(); drop >= 0 {
				n -= sizes[drop]
				msgs = append(msgs[:drop], msgs[drop+1:]...)
				sizes = append(sizes[:drop], sizes[drop+1:]...)
				asked--
				continue
			}
			// Nothing left to drop: retrieve from the question's documents,
			// in the room the rest of the prompt leaves them (narrowed by
			// what a try overshot, for the few tokens joins can add).
			tooLong := apierr.InvalidArgument("parts", fmt.Sprintf(
				"the message is %d tokens; with the answer's %d it does not fit %s's context window of %d", n, maxOut, m.ID, m.ContextWindow))
			if asked < 0 || tries == 3 {
				return nil, 0, tooLong
			}
			if whole == nil {
				whole = &llm.ChatMessage{Role: msgs[asked].Role, Parts: msgs[asked].Parts}
			}
			room := budget - (n - documentTokens(c.Tokens, msgs[asked])) - 16*tries
			cut, ok := retrieveFromDocuments(c.Tokens, *whole, room)
			if !ok {
				return nil, 0, tooLong
			}
			msgs[asked] = cut
			tries++
			n = llm.PromptTokens(c.Tokens, msgs)
		}
		if n = llm.PromptTokens(c.Tokens, msgs); n <= budget {
			break
		}
	}
	return msgs, n, nil
}

// documentTokens counts the text of msg's documents.
func documentTokens(tok *tokenize.Tokenizer, msg llm.ChatMessage) int {
	n := 0
	for _, p := range msg.Parts {
		if p.Document != nil {
			n += tok.Count(p.Document.Text)
		}
	}
	return n
}

// inputFloor is the fewest input tokens a web message's text can count
// (few tokens are over 32 bytes), the floor its tier allowance is first
// taken at.
func inputFloor(text string) int64 { return max(1, int64(len(text)/32)) }

// Priority is the scheduling priority of a web tier.
func Priority(t store.Tier) int {
	switch t {
	case store.TierMax:
		return llm.PriorityMax
	case store.TierPro:
		return llm.PriorityPro
	case store.TierPlus:
		return llm.PriorityPlus
	}
	return llm.PriorityFree
}

// Wait blocks until every web generation has ended and been stored (after
// Background is cancelled, at shutdown).
func (c *Core) Wait() { c.running.Wait() }

func (c *Core) background(ctx context.Context) context.Context {
	if c.Background != nil {
		return c.Background
	}
	return context.WithoutCancel(ctx)
}

func validateParts(parts []store.Part) (string, error) {
	if len(parts) == 0 {
		return "", apierr.InvalidArgument("parts", "must not be empty")
	}
	var b strings.Builder
	attached := false
	for i, p := range parts {
		switch {
		case p.AttachmentID != "" && p.Text != "":
			return "", apierr.InvalidArgument(fmt.Sprintf("parts[%d]", i), "set text or attachment_id, not both")
		case p.AttachmentID != "":
			attached = true
		case !utf8.ValidString(p.Text):
			return "", apierr.InvalidArgument(fmt.Sprintf("parts[%d].text", i), "is not valid UTF-8")
		}
		b.WriteString(p.Text)
	}
	text := b.String()
	switch {
	case strings.TrimSpace(text) == "" && !attached:
		return "", apierr.InvalidArgument("parts", "the message is empty")
	case len(text) > MaxMessageBytes:
		return "", apierr.InvalidArgument("parts", fmt.Sprintf("the message is %d bytes, over the limit of %d", len(text), MaxMessageBytes))
	}
	return text, nil
}

// workerParts turns stored parts into what the model receives, loading
// each attachment's prepared form (the fitted image, the document's text).
// In the newest message (strict) an attachment that cannot be used is the
// caller's error; in the history one since deleted is noted as gone.
func (c *Core) workerParts(ctx context.Context, userID string, m *models.Model, parts []store.Part, strict bool) ([]llm.Part, error) {
	out := make([]llm.Part, 0, len(parts))
	for i, p := range parts {
		switch {
		case p.AttachmentID != "":
			wp, err := c.Attachments.Part(ctx, userID, p.AttachmentID)
			if err != nil && strict {
				return nil, err
			} else if err != nil {
				out = append(out, llm.Part{Text: "[an attachment that is no longer available]"})
				continue
			}
			if kind := modality(wp); strict && !m.Accepts(kind) {
				return nil, apierr.InvalidArgument(fmt.Sprintf("parts[%d].attachment_id", i), fmt.Sprintf("%s does not accept %ss", m.ID, kind))
			}
			out = append(out, wp)
		case p.Text != "":
			out = append(out, llm.Part{Text: p.Text})
		case p.Image != nil:
			out = append(out, llm.Part{Image: &llm.Image{Data: p.Image.Data, MimeType: p.Image.MimeType, Width: p.Image.Width, Height: p.Image.Height}})
		case p.ToolCall != nil:
			out = append(out, llm.Part{ToolCall: &llm.ToolCall{ID: p.ToolCall.ID, Name: p.ToolCall.Name, Arguments: p.ToolCall.Arguments}})
		case p.ToolResult != nil:
			out = append(out, llm.Part{ToolResult: &llm.ToolResult{ToolCallID: p.ToolResult.ToolCallID, Content: p.ToolResult.Content}})
		}
	}
	return out, nil
}

func modality(p llm.Part) string {
	if p.Image != nil {
		return "image"
	}
	return "document"
}

func partsText(parts []store.Part) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// titleFrom makes a conversation title from its first message: the first
// line, at most 60 characters.
func titleFrom(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	if utf8.RuneCountInString(text) > 60 {
		r := []rune(text)
		text = strings.TrimSpace(string(r[:57])) + "…"
	}
	return text
}

// recordWeb stores a web generation's usage record: the billing path with
// nothing held (the web channel is limited by tier, not charged), committed
// in the ledger's store.
func (c *Core) recordWeb(ctx context.Context, p auth.Principal, requestID, model string, u llm.Usage, finish llm.FinishReason, at time.Time) {
	_, _ = c.Billing.Settle(ctx, billing.Hold{}, 0, &store.UsageRecord{
		RequestID: requestID, UserID: p.UserID, APIKeyID: p.KeyID, Channel: "web", Model: model,
		PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens),
		CachedTokens: int64(u.CachedTokens), Estimated: u.Estimated,
		FinishReason: string(finish), CreatedAt: at,
	})
}

// The title generation's bounds: the exchange it reads, the tokens it
// writes, and the longest title kept.
const (
	titleContextRunes = 1500
	titleMaxTokens    = 24
	titleMaxRunes     = 80
)

// autoTitle names a new conversation from its first exchange: a short
// generation with the conversation's model at the lowest priority, admitted
// against and counted in the user's tier limits and recorded as usage like
// any message. It replaces the title cut from the first message only while
// that is still the title (a rename meanwhile wins); a refusal, a failure or
// an empty answer leaves it.
func (c *Core) autoTitle(ctx context.Context, p auth.Principal, convID string, m *models.Model, firstTitle string, question *store.Message, answerID string) {
	if question == nil || firstTitle == "" {
		return
	}
	tree, err := c.Tree(ctx, convID)
	if err != nil {
		return
	}
	answer, ok := tree.Get(answerID)
	if !ok || (answer.FinishReason != string(llm.FinishStop) && answer.FinishReason != string(llm.FinishLength)) {
		return
	}
	clip := func(s string) string {
		if r := []rune(strings.TrimSpace(s)); len(r) > titleContextRunes {
			return string(r[:titleContextRunes]) + "…"
		}
		return strings.TrimSpace(s)
	}
	msgs := []llm.ChatMessage{
		{Role: "system", Parts: []llm.Part{{Text: "Write a title of at most six words for the conversation below, in its language. " +
			"Answer with the title only: no quotes, no final period."}}},
		{Role: "user", Parts: []llm.Part{{Text: "User: " + clip(partsText(question.Parts)) + "\n\nAssistant: " + clip(partsText(answer.Parts))}}},
	}
	grant, err := c.Limits.Admit(ctx, p.UserID, p.Tier, m, int64(llm.PromptTokens(c.Tokens, msgs)), titleMaxTokens)
	if err != nil {
		return // out of allowance: the first message's title stays
	}
	job := llm.Job{
		Request:  llm.Request{ID: uuid.Must(uuid.NewV7()).String(), Model: m.ID, Messages: msgs, MaxTokens: titleMaxTokens},
		Priority: llm.PriorityBackground, // below every tier: a title never delays an answer
	}
	var text strings.Builder
	res, err := c.Router.Generate(ctx, &job, func(d llm.Delta) error {
		if d.Choice == 0 {
			text.WriteString(d.Text)
		}
		return nil
	})
	c.Metrics.count(m.ID, res.Usage)
	c.Limits.Settle(ctx, grant, int64(res.Usage.CompletionTokens))
	if err == nil || res.Usage.CompletionTokens > 0 {
		c.recordWeb(ctx, p, job.Request.ID, m.ID, res.Usage, res.FinishReason, c.Now())
	}
	if err != nil || res.FinishReason == llm.FinishError {
		return
	}
	title := cleanTitle(text.String())
	if title == "" {
		return
	}
	if _, err := c.Conversations.SetGeneratedTitle(ctx, p.UserID, convID, firstTitle, title); err != nil {
		c.Logger.WarnContext(ctx, "storing a generated title", "conversation", convID, "err", err)
	}
}

// cleanTitle is a generated title on one line, without the quotes, label or
// final period models add, at most titleMaxRunes.
func cleanTitle(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "Title:"), "title:")
	s = strings.Trim(strings.TrimSpace(s), "\"'“”‘’*#`")
	s = strings.TrimRight(strings.TrimSpace(s), ".")
	if r := []rune(s); len(r) > titleMaxRunes {
		s = strings.TrimSpace(string(r[:titleMaxRunes-1])) + "…"
	}
	if !utf8.ValidString(s) {
		return ""
	}
	return s
}
