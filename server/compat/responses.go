package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/detach"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/sse"
)

// This file is OpenAI's Responses API (/v1/responses) over the same core
// as /v1/chat/completions: a request becomes one chat.Request, its answer
// one response object (or its typed stream events). Storing responses and
// continuing them with previous_response_id is in responses_store.go.

// responseObject is a response as OpenAI's Responses API returns it.
type responseObject struct {
	ID                 string              `json:"id"`
	Object             string              `json:"object"`
	CreatedAt          int64               `json:"created_at"`
	Status             string              `json:"status"`
	Background         bool                `json:"background"`
	CompletedAt        *int64              `json:"completed_at"`
	Error              *responseError      `json:"error"`
	IncompleteDetails  *responseIncomplete `json:"incomplete_details"`
	Instructions       *string             `json:"instructions"`
	MaxOutputTokens    *int64              `json:"max_output_tokens"`
	MaxToolCalls       *int64              `json:"max_tool_calls"`
	Model              string              `json:"model"`
	Output             []any               `json:"output"`
	ParallelToolCalls  bool                `json:"parallel_tool_calls"`
	PreviousResponseID *string             `json:"previous_response_id"`
	Reasoning          responseReasoning   `json:"reasoning"`
	ServiceTier        string              `json:"service_tier"`
	Store              bool                `json:"store"`
	Temperature        float64             `json:"temperature"`
	Text               responseTextConfig  `json:"text"`
	ToolChoice         json.RawMessage     `json:"tool_choice"`
	Tools              []any               `json:"tools"`
	TopLogprobs        int                 `json:"top_logprobs"`
	TopP               float64             `json:"top_p"`
	Truncation         string              `json:"truncation"`
	Usage              *responseUsage      `json:"usage"`
	User               *string             `json:"user"`
	Metadata           map[string]string   `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type responseIncomplete struct {
	Reason string `json:"reason"`
}

type responseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type responseTextConfig struct {
	Format    responseFormat `json:"format"`
	Verbosity string         `json:"verbosity"`
}

// responseFormat is text.format, as sent and as echoed.
type responseFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// responseTool is a function tool as echoed in the response.
type responseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responsePlan is one POST /v1/responses made ready: the core's request,
// the response object to fill in, and what to store.
type responsePlan struct {
	chat chat.Request
	resp responseObject
	// origins names, for each of chat.Messages, the field it came from, so
	// the core's errors name what the caller sent.
	origins []string
	store   bool
	conv    store.Conversation
	isNew   bool // the first response of a chain: conv is to be made
	prev    *storedResponse
	inputs  []store.Message
	outID   string
	// fileSearch is the file_search tool, run before the generation.
	fileSearch *fileSearchTool
}

// planResponse reads the request into a plan: its settings, the history of
// the response it continues, its input, its instructions first.
func (h *openAIHandler) planResponse(r *http.Request, userID string, req *responsesRequest) (*responsePlan, error) {
	ctx := r.Context()
	cr, tools, fs, err := h.responsesChat(r, req)
	if err != nil {
		return nil, err
	}
	inputs, fields, err := req.inputMessages(h.Core.Attachments.Inline())
	if err != nil {
		return nil, err
	}
	p := &responsePlan{chat: cr, store: req.stores(), inputs: inputs, outID: uuid.Must(uuid.NewV7()).String(), fileSearch: fs}
	var history []store.Message
	if id := req.PreviousResponseID; id != "" {
		if p.prev, err = h.loadResponse(ctx, userID, id); err != nil {
			if connect.CodeOf(err) == connect.CodeNotFound {
				return nil, errNoPrevious(id)
			}
			return nil, err
		}
		if history, err = p.prev.Chain(); err != nil {
			return nil, apierr.InvalidArgument("previous_response_id", "a response earlier in its chain was deleted, so it cannot be continued")
		}
		p.conv = p.prev.Conversation
	} else {
		p.conv, p.isNew = store.Conversation{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Model: req.Model}, true
	}
	if in := req.Instructions; in != nil && *in != "" {
		p.chat.Messages = append(p.chat.Messages, llm.ChatMessage{Role: "system", Parts: []llm.Part{{Text: *in}}})
		p.origins = append(p.origins, "instructions")
	}
	for _, m := range history {
		if err := h.addMessage(ctx, userID, p, m, "previous_response_id", false); err != nil {
			return nil, err
		}
	}
	for i, m := range inputs {
		if err := h.addMessage(ctx, userID, p, m, fields[i], true); err != nil {
			return nil, err
		}
	}
	p.chat.Rename = p.rename
	p.resp = req.echo(responseID(p.conv.ID, p.outID), h.Core.Now().Unix(), tools)
	if m, ok := h.Core.Models.Lookup(req.Model); ok {
		p.resp.Model = m.ID
	}
	return p, nil
}

// addMessage adds a stored (or about to be stored) message to the model's
// messages. A message of tool calls joins the assistant message before it,
// as chat completions carry them; meta parts are left out. In the new input
// (strict) an attachment that cannot be used is the caller's error; in the
// history one since deleted is noted as gone.
func (h *openAIHandler) addMessage(ctx context.Context, userID string, p *responsePlan, m store.Message, origin string, strict bool) error {
	var parts []llm.Part
	calls := true
	for _, sp := range m.Parts {
		switch {
		case sp.Meta != "", sp.Reasoning != "":
			continue // earlier reasoning is not given back to the model
		case sp.ToolCall != nil:
			parts = append(parts, llm.Part{ToolCall: &llm.ToolCall{ID: sp.ToolCall.ID, Name: sp.ToolCall.Name, Arguments: sp.ToolCall.Arguments}})
			continue
		case sp.ToolResult != nil:
			parts = append(parts, llm.Part{ToolResult: &llm.ToolResult{ToolCallID: sp.ToolResult.ToolCallID, Content: sp.ToolResult.Content}})
		case sp.Image != nil:
			parts = append(parts, llm.Part{Image: &llm.Image{Data: sp.Image.Data, MimeType: sp.Image.MimeType, Width: sp.Image.Width, Height: sp.Image.Height}})
		case sp.AttachmentID != "":
			if h.Core.Attachments == nil {
				return apierr.InvalidArgument(origin, "attachments are not available on this server")
			}
			wp, err := h.Core.Attachments.Part(ctx, userID, sp.AttachmentID)
			switch {
			case err != nil && strict:
				return err
			case err != nil:
				wp = llm.Part{Text: "[an attachment that is no longer available]"}
			}
			parts = append(parts, wp)
		case sp.Text == "" && m.Role == "assistant":
			continue // an answer's empty text beside its calls
		default:
			parts = append(parts, llm.Part{Text: sp.Text})
		}
		calls = false
	}
	msgs := p.chat.Messages
	if last := len(msgs) - 1; m.Role == "assistant" && calls && len(parts) > 0 && last >= 0 && msgs[last].Role == "assistant" {
		msgs[last].Parts = append(msgs[last].Parts, parts...)
		return nil
	}
	if len(parts) == 0 {
		parts = []llm.Part{{Text: ""}}
	}
	p.chat.Messages = append(msgs, llm.ChatMessage{Role: m.Role, Parts: parts})
	p.origins = append(p.origins, origin)
	return nil
}

// rename spells a field the core names as the caller sent it.
func (p *responsePlan) rename(field string) string {
	if rest, ok := strings.CutPrefix(field, "messages["); ok {
		if n, _, ok := strings.Cut(rest, "]"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(p.origins) {
				return p.origins[i]
			}
		}
	}
	for _, f := range responsesFieldNames {
		if f.re.MatchString(field) {
			return f.re.ReplaceAllString(field, f.repl)
		}
	}
	return field
}

// echo is the response object before generation: the request's settings
// as OpenAI echoes them, with their defaults.
func (req *responsesRequest) echo(id string, createdAt int64, tools []any) responseObject {
	o := responseObject{
		ID: id, Object: "response", CreatedAt: createdAt, Status: "in_progress", Model: req.Model, Output: []any{},
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, ParallelToolCalls: true,
		ServiceTier: "default", Store: req.stores(), Temperature: 1, TopP: 1, Truncation: "disabled",
		Text: responseTextConfig{Format: responseFormat{Type: "text"}, Verbosity: "medium"}, ToolChoice: json.RawMessage(`"auto"`),
		Tools: tools, Metadata: req.Metadata,
	}
	if req.ParallelToolCalls != nil {
		o.ParallelToolCalls = *req.ParallelToolCalls
	}
	if req.Reasoning != nil {
		o.Reasoning.Effort = req.Reasoning.Effort
	}
	if req.Temperature != nil {
		o.Temperature = *req.Temperature
	}
	if req.TopP != nil {
		o.TopP = *req.TopP
	}
	if req.User != "" {
		o.User = &req.User
	}
	if req.PreviousResponseID != "" {
		o.PreviousResponseID = &req.PreviousResponseID
	}
	if tc := bytes.TrimSpace(req.ToolChoice); len(tc) > 0 && string(tc) != "null" {
		o.ToolChoice = tc
	}
	if req.Text != nil && req.Text.Format != nil && req.Text.Format.Type != "" {
		o.Text.Format = *req.Text.Format
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if o.Tools == nil {
		o.Tools = []any{}
	}
	return o
}

// finishResponse completes the response object from the outcome and the output's
// parts, and stores it when asked to.
func (h *openAIHandler) finishResponse(ctx context.Context, userID string, p *responsePlan, out *chat.Outcome, parts []store.Part) error {
	msg := store.Message{ID: p.outID, Role: "assistant", Parts: parts, Model: out.Model,
		Tokens: int64(out.Usage.CompletionTokens), FinishReason: string(out.FinishReason)}
	r := &p.resp
	r.Model, r.Status, r.Output = out.Model, "completed", responseOutput(msg)
	if fs := p.fileSearch; fs != nil {
		// The search's call comes first, and the text's citations of its
		// passages are annotated (neither is stored: a stored response
		// reads back without them).
		for _, it := range r.Output {
			if m, ok := it.(responseMessageItem); ok {
				for i, c := range m.Content {
					if t, ok := c.(responseOutputText); ok {
						t.Annotations = fs.citations(t.Text)
						m.Content[i] = t
					}
				}
			}
		}
		r.Output = append([]any{fs.item(p.outID)}, r.Output...)
	}
	if out.FinishReason == llm.FinishLength {
		r.Status, r.IncompleteDetails = "incomplete", &responseIncomplete{Reason: "max_output_tokens"}
	}
	done := h.Core.Now().Unix()
	r.CompletedAt = &done
	u := &responseUsage{InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens,
		TotalTokens: out.Usage.PromptTokens + out.Usage.CompletionTokens}
	u.InputTokensDetails.CachedTokens = out.Usage.CachedTokens
	r.Usage = u
	if !p.store {
		return nil
	}
	rec, err := p.record()
	if err != nil {
		return err
	}
	return h.Core.SaveResponse(ctx, userID, p.conv, p.isNew, p.inputs, msg, rec)
}

// responseParts are a whole answer's parts: its reasoning (models that
// reason), its text (when there is text or no call), then its calls.
func responseParts(ch *chat.CollectedChoice) []store.Part {
	var parts []store.Part
	if ch.Reasoning.Len() > 0 {
		parts = append(parts, store.Part{Reasoning: ch.Reasoning.String()})
	}
	if ch.Text.Len() > 0 || len(ch.ToolCalls) == 0 {
		parts = append(parts, store.Part{Text: ch.Text.String()})
	}
	for _, tc := range ch.ToolCalls {
		parts = append(parts, store.Part{ToolCall: &llm.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Arguments: tc.GetArguments()}})
	}
	return parts
}

// CreateResponse serves POST /v1/responses.
func (h *openAIHandler) CreateResponse(w http.ResponseWriter, r *http.Request) {
	caller, ok := auth.FromContext(r.Context())
	if !ok {
		h.fail(w, r, apierr.Unauthenticated("no credentials"))
		return
	}
	req, err := h.parseResponses(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	plan, err := h.planResponse(r, caller.UserID, req)
	if err == nil {
		err = h.runFileSearch(r, plan)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Background {
		h.startBackground(w, r, caller.UserID, plan, req.Stream)
		return
	}
	if req.Stream {
		h.streamResponse(w, r, caller.UserID, plan)
		return
	}
	var all chat.Collector
	out, err := h.Core.Complete(r.Context(), &plan.chat, all.Emit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := interrupted(out); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.finishResponse(r.Context(), caller.UserID, plan, out, responseParts(all.Choice(0))); err != nil {
		h.fail(w, r, err)
		return
	}
	writeResponseJSON(w, &plan.resp)
}

func writeResponseJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// GetResponse serves GET /v1/responses/{id}: one of the caller's stored
// responses.
func (h *openAIHandler) GetResponse(w http.ResponseWriter, r *http.Request) {
	caller, _ := auth.FromContext(r.Context())
	q := r.URL.Query()
	stream := q.Get("stream") != "" && q.Get("stream") != "false"
	after := -1
	if v := q.Get("starting_after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			h.fail(w, r, apierr.InvalidArgument("starting_after", fmt.Sprintf("must be a whole number of 0 or more, got %q", v)))
			return
		}
		after = n
	}
	s, err := h.loadResponse(r.Context(), caller.UserID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if stream {
		if !s.resp.Background {
			h.fail(w, r, apierr.InvalidArgument("stream", "is only for a background response: this one was answered when it was created"))
			return
		}
		h.followResponse(w, r, s, after)
		return
	}
	writeResponseJSON(w, h.liveStatus(r.Context(), s))
}

// DeleteResponse serves DELETE /v1/responses/{id}.
func (h *openAIHandler) DeleteResponse(w http.ResponseWriter, r *http.Request) {
	caller, _ := auth.FromContext(r.Context())
	id := r.PathValue("id")
	s, err := h.loadResponse(r.Context(), caller.UserID, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.Core.DeleteResponse(r.Context(), caller.UserID, s.StoredResponse); err != nil {
		h.fail(w, r, err)
		return
	}
	writeResponseJSON(w, map[string]any{"id": id, "object": "response", "deleted": true})
}

// ListResponseInputItems serves GET /v1/responses/{id}/input_items: the
// items the model was given, as OpenAI lists them — those of the responses
// it continued too, and not its instructions. Query: limit (1–100, default
// 20), order (desc, the default, or asc), after (an item id).
func (h *openAIHandler) ListResponseInputItems(w http.ResponseWriter, r *http.Request) {
	caller, _ := auth.FromContext(r.Context())
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			h.fail(w, r, apierr.InvalidArgument("limit", "must be 1 to 100"))
			return
		}
		limit = n
	}
	order := q.Get("order")
	if order != "" && order != "asc" && order != "desc" {
		h.fail(w, r, apierr.InvalidArgument("order", "must be asc or desc"))
		return
	}
	s, err := h.loadResponse(r.Context(), caller.UserID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	msgs, err := s.Chain()
	if errors.Is(err, chat.ErrBrokenChain) {
		msgs = nil // what is left of the chain: this response's own input
		for _, id := range s.Record.Inputs {
			for _, m := range s.Messages {
				if m.ID == id {
					msgs = append(msgs, m)
				}
			}
		}
	} else {
		msgs = msgs[:len(msgs)-1] // not its output
	}
	items := responseInputItems(msgs)
	if order != "asc" {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	if after := q.Get("after"); after != "" {
		for i, it := range items {
			if responseItemID(it) == after {
				items = items[i+1:]
				break
			}
		}
	}
	page := struct {
		Object  string  `json:"object"`
		Data    []any   `json:"data"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
		HasMore bool    `json:"has_more"`
	}{Object: "list", Data: items, HasMore: len(items) > limit}
	if page.HasMore {
		page.Data = items[:limit]
	}
	if n := len(page.Data); n > 0 {
		first, last := responseItemID(page.Data[0]), responseItemID(page.Data[n-1])
		page.FirstID, page.LastID = &first, &last
	}
	writeResponseJSON(w, &page)
}

// streamResponse answers with the Responses API's typed events.
func (h *openAIHandler) streamResponse(w http.ResponseWriter, r *http.Request, userID string, p *responsePlan) {
	creqs := []chat.Request{p.chat} // on the heap, not in the stream's frame
	detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
		s := &responseStream{chunkWriter: chunkWriter{w: w, enc: sse.NewEncoder(w)}, plan: p, calls: map[int32]*streamItem{},
			save: func(out *chat.Outcome, parts []store.Part) error {
				return h.finishResponse(r.Context(), userID, p, out, parts)
			}}
		h.runStream(r, s, creqs, func(err error) { h.fail(w, r, err) })
	})
}

// finish stores the response (when asked to) and ends each item, then the
// response.
func (s *responseStream) finish(_ int, out *chat.Outcome) {
	if len(s.items) == 0 || (len(s.items) == 1 && s.items[0].fileSearch) {
		_ = s.message()
	}
	if err := s.save(out, s.parts()); err != nil {
		s.error(err)
		return
	}
	_ = s.close()
	end := "response.completed"
	if s.plan.resp.Status == "incomplete" {
		end = "response.incomplete"
	}
	_ = s.event(end, map[string]any{"response": &s.plan.resp})
}

// responseStream is the encoder of a streamed response; the keep-alive
// shares it (through the chunkWriter's lock).
type responseStream struct {
	chunkWriter
	plan *responsePlan
	save func(*chat.Outcome, []store.Part) error // completes the response and stores it
	seq  int
	// writeFrom is the first event number written: those before it a
	// resumed stream's client has already (0: all).
	writeFrom int
	items     []*streamItem // output items by output_index
	msg       *streamItem
	calls     map[int32]*streamItem // by the engine's call index
	n         int                   // calls so far
	// thought is the reasoning item open (more reasoning joins it until
	// text or a call comes); thoughts counts them.
	thought  *streamItem
	thoughts int
}

// streamItem is one output item as it streams: the message's text, or a
// call.
type streamItem struct {
	index      int
	id         string
	text       strings.Builder
	call       *llm.ToolCall
	reasoning  bool // text is reasoning
	fileSearch bool // the file_search call, done before the generation
}

// event writes one typed event: its type as the SSE event name and, first
// in the data as OpenAI puts it, with the next sequence number.
func (s *responseStream) event(typ string, fields map[string]any) error {
	if s.seq < s.writeFrom {
		s.seq++
		return nil
	}
	c := &s.chunkWriter
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open()
	c.scratch.Reset()
	fmt.Fprintf(&c.scratch, `{"type":%q,"sequence_number":%d`, typ, s.seq)
	s.seq++
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	if len(rest) > 2 {
		c.scratch.WriteByte(',')
		c.scratch.Write(rest[1:])
	} else {
		c.scratch.WriteByte('}')
	}
	return c.enc.WriteEvent(sse.Event{Event: typ, Data: c.scratch.String()})
}

func (s *responseStream) start(_ int, st *parleyv1.GenerationStarted) error {
	s.plan.resp.Model = st.GetModel()
	if err := s.event("response.created", map[string]any{"response": &s.plan.resp}); err != nil {
		return err
	}
	if err := s.event("response.in_progress", map[string]any{"response": &s.plan.resp}); err != nil {
		return err
	}
	if fs := s.plan.fileSearch; fs != nil {
		// The search ran before the generation: its item, whole.
		item := fs.item(s.plan.outID)
		s.items = append(s.items, &streamItem{index: 0, id: item.ID, fileSearch: true})
		running := item
		running.Status, running.Results = "in_progress", nil
		if err := s.event("response.output_item.added", map[string]any{"output_index": 0, "item": running}); err != nil {
			return err
		}
		for _, typ := range []string{"response.file_search_call.in_progress", "response.file_search_call.searching", "response.file_search_call.completed"} {
			if err := s.event(typ, map[string]any{"output_index": 0, "item_id": item.ID}); err != nil {
				return err
			}
		}
		return s.event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	}
	return nil
}

// delta writes the first choice's text to the message item and each tool
// call to a function_call item of its own.
func (s *responseStream) delta(_ int, d *parleyv1.GenerationDelta) error {
	if d.GetChoice() != 0 {
		return nil
	}
	if t := d.GetReasoning(); t != "" {
		if s.thought == nil {
			s.thought = &streamItem{index: len(s.items), id: reasoningItemID(s.plan.outID, s.thoughts), reasoning: true}
			s.thoughts++
			s.items = append(s.items, s.thought)
			if err := s.event("response.output_item.added", map[string]any{"output_index": s.thought.index,
				"item": responseReasoningItem{Type: "reasoning", ID: s.thought.id, Summary: []any{}, Content: []responseReasoningText{}, Status: "in_progress"}}); err != nil {
				return err
			}
			if err := s.event("response.content_part.added", map[string]any{"item_id": s.thought.id, "output_index": s.thought.index,
				"content_index": 0, "part": responseReasoningText{Type: "reasoning_text", Text: ""}}); err != nil {
				return err
			}
		}
		s.thought.text.WriteString(t)
		if err := s.event("response.reasoning_text.delta", map[string]any{"item_id": s.thought.id, "output_index": s.thought.index,
			"content_index": 0, "delta": t}); err != nil {
			return err
		}
	}
	if d.GetText() != "" || len(d.GetToolCalls()) > 0 {
		s.thought = nil
	}
	if t := d.GetText(); t != "" {
		if err := s.message(); err != nil {
			return err
		}
		s.msg.text.WriteString(t)
		if err := s.event("response.output_text.delta", map[string]any{"item_id": s.msg.id, "output_index": s.msg.index,
			"content_index": 0, "delta": t, "logprobs": []any{}}); err != nil {
			return err
		}
	}
	for _, tc := range d.GetToolCalls() {
		it := s.calls[tc.GetIndex()]
		if it == nil {
			it = &streamItem{index: len(s.items), id: callItemID(s.plan.outID, s.n), call: &llm.ToolCall{ID: tc.GetId(), Name: tc.GetName()}}
			s.n++
			s.items = append(s.items, it)
			s.calls[tc.GetIndex()] = it
			if err := s.event("response.output_item.added", map[string]any{"output_index": it.index, "item": responseFunctionCall{
				Type: "function_call", ID: it.id, CallID: it.call.ID, Name: it.call.Name, Status: "in_progress"}}); err != nil {
				return err
			}
		}
		if a := tc.GetArguments(); a != "" {
			it.call.Arguments += a
			if err := s.event("response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": it.index, "delta": a}); err != nil {
				return err
			}
		}
	}
	return nil
}

// message opens the message item, once.
func (s *responseStream) message() error {
	if s.msg != nil {
		return nil
	}
	s.msg = &streamItem{index: len(s.items), id: messageItemID(s.plan.outID)}
	s.items = append(s.items, s.msg)
	if err := s.event("response.output_item.added", map[string]any{"output_index": s.msg.index, "item": responseMessageItem{
		Type: "message", ID: s.msg.id, Status: "in_progress", Role: "assistant", Content: []any{}}}); err != nil {
		return err
	}
	return s.event("response.content_part.added", map[string]any{"item_id": s.msg.id, "output_index": s.msg.index,
		"content_index": 0, "part": responseTextPart("")})
}

// parts are the output so far as stored parts, in the items' order.
func (s *responseStream) parts() []store.Part {
	parts := make([]store.Part, 0, len(s.items))
	for _, it := range s.items {
		switch {
		case it.fileSearch:
		case it.call != nil:
			c := *it.call
			parts = append(parts, store.Part{ToolCall: &c})
		case it.reasoning:
			parts = append(parts, store.Part{Reasoning: it.text.String()})
		default:
			parts = append(parts, store.Part{Text: it.text.String()})
		}
	}
	return parts
}

// close ends each item, with its final form from the finished response.
func (s *responseStream) close() error {
	final := s.plan.resp.Output
	for i, it := range s.items {
		if i >= len(final) {
			break
		}
		if it.fileSearch {
			continue // ended at the start
		}
		switch {
		case it.call != nil:
			if err := s.event("response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": it.index,
				"arguments": it.call.Arguments, "name": it.call.Name}); err != nil {
				return err
			}
		case it.reasoning:
			text := it.text.String()
			if err := s.event("response.reasoning_text.done", map[string]any{"item_id": it.id, "output_index": it.index,
				"content_index": 0, "text": text}); err != nil {
				return err
			}
			if err := s.event("response.content_part.done", map[string]any{"item_id": it.id, "output_index": it.index,
				"content_index": 0, "part": responseReasoningText{Type: "reasoning_text", Text: text}}); err != nil {
				return err
			}
		default:
			text := it.text.String()
			if err := s.event("response.output_text.done", map[string]any{"item_id": it.id, "output_index": it.index,
				"content_index": 0, "text": text, "logprobs": []any{}}); err != nil {
				return err
			}
			if err := s.event("response.content_part.done", map[string]any{"item_id": it.id, "output_index": it.index,
				"content_index": 0, "part": responseTextPart(text)}); err != nil {
				return err
			}
		}
		if err := s.event("response.output_item.done", map[string]any{"output_index": it.index, "item": final[i]}); err != nil {
			return err
		}
	}
	return nil
}

// fail ends a stream whose generation failed or was cut (a worker failed,
// the server is stopping) with response.failed: never passed off as
// complete.
func (s *responseStream) fail(err error) {
	ce := new(connect.Error)
	msg := "the generation failed"
	if errors.As(err, &ce) {
		msg = ce.Message()
	}
	r := &s.plan.resp
	r.Status, r.Error = "failed", &responseError{Code: "server_error", Message: msg}
	r.Output = assistantItems(store.Message{ID: s.plan.outID, Parts: s.parts()}, "incomplete", false)
	_ = s.event("response.failed", map[string]any{"response": r})
}

// error ends a stream with an error event (OpenAI's form of an error once
// the stream has begun).
func (s *responseStream) error(err error) {
	_, body := openAIError(err)
	_ = s.event("error", map[string]any{"code": body.Error.Code, "message": body.Error.Message, "param": body.Error.Param})
}
