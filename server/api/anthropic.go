package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/sse"
)

// AnthropicHandler serves Anthropic's Messages API over the same core as
// every other surface: POST /v1/messages (whole and streamed) and POST
// /v1/messages/count_tokens. The official Anthropic SDKs work against it with
// base_url set to the gateway and a Parley API key as the api_key (sent as
// x-api-key).
type AnthropicHandler struct {
	// OpenAI is the OpenAI-compatible surface whose core, keep-alive
	// interval, outage handling and unsupported-field setting (with its
	// dropped-fields counter) this one shares.
	OpenAI *OpenAIHandler
}

// anthropicRequest is the body of POST /v1/messages and of count_tokens, as
// far as Parley reads it.
type anthropicRequest struct {
	Model         string               `json:"model"`
	MaxTokens     *int64               `json:"max_tokens"`
	Messages      []anthropicMessage   `json:"messages"`
	System        json.RawMessage      `json:"system"`
	Tools         []json.RawMessage    `json:"tools"`
	ToolChoice    *anthropicToolChoice `json:"tool_choice"`
	StopSequences []string             `json:"stop_sequences"`
	Temperature   *float64             `json:"temperature"`
	TopP          *float64             `json:"top_p"`
	Stream        bool                 `json:"stream"`
	// User is metadata.user_id.
	User string `json:"-"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is one content block of a request message.
type anthropicBlock struct {
	Type      string           `json:"type"`
	Text      string           `json:"text"`
	Source    *anthropicSource `json:"source"`
	Title     string           `json:"title"`
	ID        string           `json:"id"`
	Name      string           `json:"name"`
	Input     json.RawMessage  `json:"input"`
	ToolUseID string           `json:"tool_use_id"`
	Content   json.RawMessage  `json:"content"`
	IsError   bool             `json:"is_error"`
}

type anthropicSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type anthropicTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      *bool           `json:"strict"`
}

type anthropicToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
}

// The top-level fields each endpoint reads.
var (
	anthropicParams = map[string]bool{
		"model": true, "max_tokens": true, "messages": true, "system": true, "tools": true, "tool_choice": true,
		"stop_sequences": true, "temperature": true, "top_p": true, "metadata": true, "stream": true,
	}
	anthropicCountParams = map[string]bool{
		"model": true, "messages": true, "system": true, "tools": true, "tool_choice": true,
	}
)

// anthropicHarmless are accepted at the values that ask for nothing Parley
// would have to do.
var anthropicHarmless = map[string]func(json.RawMessage) bool{
	"thinking": func(v json.RawMessage) bool {
		var t struct{ Type string }
		return isJSON(v, "null") || json.Unmarshal(v, &t) == nil && t.Type == "disabled"
	},
	"service_tier":       func(v json.RawMessage) bool { return isJSON(v, `"auto"`, `"standard_only"`, "null") },
	"top_k":              func(v json.RawMessage) bool { return isJSON(v, "null") },
	"container":          func(v json.RawMessage) bool { return isJSON(v, "null") },
	"mcp_servers":        func(v json.RawMessage) bool { return isJSON(v, "null", "[]") },
	"context_management": func(v json.RawMessage) bool { return isJSON(v, "null") },
}

// The fields of each content block kind; others are refused by name (or
// dropped). cache_control is a caching hint: Parley's prefix cache needs
// none, so it is accepted as asking for nothing.
var anthropicBlockFields = map[string]map[string]bool{
	"text":              {"type": true, "text": true, "cache_control": true},
	"image":             {"type": true, "source": true, "cache_control": true},
	"document":          {"type": true, "source": true, "title": true, "cache_control": true},
	"tool_use":          {"type": true, "id": true, "name": true, "input": true, "cache_control": true},
	"tool_result":       {"type": true, "tool_use_id": true, "content": true, "is_error": true, "cache_control": true},
	"thinking":          nil, // any: skipped (below)
	"redacted_thinking": nil,
}

var anthropicToolFields = map[string]bool{
	"type": true, "name": true, "description": true, "input_schema": true, "cache_control": true, "strict": true,
}

// parse reads a Messages API body; count is true for count_tokens, which
// takes no generation settings.
func (h *AnthropicHandler) parse(r *http.Request, count bool) (*anthropicRequest, error) {
	read := anthropicParams
	if count {
		read = anthropicCountParams
	}
	var req anthropicRequest
	fields, err := h.OpenAI.decodeBody(r, read, anthropicHarmless, &req)
	if err != nil {
		return nil, err
	}
	if m, ok := fields["metadata"]; ok && !isJSON(m, "null") {
		var meta map[string]json.RawMessage
		if json.Unmarshal(m, &meta) != nil {
			return nil, apierr.InvalidArgument("metadata", "must be an object")
		}
		for k, v := range meta {
			if k != "user_id" {
				if err := h.OpenAI.unsupported(r, "metadata."+k); err != nil {
					return nil, err
				}
				continue
			}
			if !isJSON(v, "null") && json.Unmarshal(v, &req.User) != nil {
				return nil, apierr.InvalidArgument("metadata.user_id", "must be a string")
			}
		}
	}
	if !count {
		switch {
		case req.MaxTokens == nil:
			return nil, apierr.InvalidArgument("max_tokens", "is required")
		case *req.MaxTokens < 1:
			return nil, apierr.InvalidArgument("max_tokens", "must be at least 1")
		case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1):
			return nil, apierr.InvalidArgument("temperature", "must be between 0 and 1")
		}
	}
	return &req, nil
}

// promptMap remembers where each message and part of the mapped request
// came from, so the core's errors name the fields as the caller sent them.
type promptMap struct {
	msgs  []string   // mapped message → its field ("system", "messages[2]")
	parts [][]string // mapped message, part → its field
}

func (pm *promptMap) add(msg string, parts []string) {
	pm.msgs = append(pm.msgs, msg)
	pm.parts = append(pm.parts, parts)
}

var (
	corePartField = regexp.MustCompile(`^messages\[(\d+)\](?:\.parts\[(\d+)\])?(.*)$`)
	coreToolField = regexp.MustCompile(`^tools\[(\d+)\]\.parameters$`)
	coreStopField = regexp.MustCompile(`^stop(\[\d+\])?$`)
	// The core's names of a part's fields, as Anthropic's blocks name them.
	anthropicPartFields = map[string]string{".arguments": ".input", ".tool_call_id": ".tool_use_id"}
)

// rename spells the core's field paths as the Messages API does.
func (pm *promptMap) rename(f string) string {
	switch {
	case f == "max_output_tokens":
		return "max_tokens"
	case f == "user":
		return "metadata.user_id"
	case coreStopField.MatchString(f):
		return "stop_sequences" + f[len("stop"):]
	case coreToolField.MatchString(f):
		return f[:len(f)-len("parameters")] + "input_schema"
	}
	m := corePartField.FindStringSubmatch(f)
	if m == nil {
		return f
	}
	i, _ := strconv.Atoi(m[1])
	if i >= len(pm.msgs) {
		return f
	}
	if m[2] == "" {
		return pm.msgs[i] + m[3]
	}
	j, _ := strconv.Atoi(m[2])
	if j >= len(pm.parts[i]) {
		return pm.msgs[i]
	}
	part, rest := pm.parts[i][j], m[3]
	if to, ok := anthropicPartFields[rest]; ok {
		rest = to
	}
	if rest == ".text" && !strings.HasSuffix(part, "]") {
		rest = "" // the content was a string, not a block
	}
	return part + rest
}

// toChat maps the request onto the core's.
func (h *AnthropicHandler) toChat(r *http.Request, req *anthropicRequest) (chat.Request, error) {
	cr := chat.Request{Model: req.Model, Temperature: req.Temperature, TopP: req.TopP, Stop: req.StopSequences, User: req.User}
	if req.MaxTokens != nil {
		cr.MaxOutputTokens = *req.MaxTokens
	}
	pm := &promptMap{}
	cr.Rename = pm.rename
	if err := h.system(req.System, &cr, pm); err != nil {
		return cr, err
	}
	if len(req.Messages) == 0 {
		return cr, apierr.InvalidArgument("messages", "must not be empty")
	}
	inline := h.OpenAI.Core.Attachments.Inline()
	for i, m := range req.Messages {
		if err := h.message(r, fmt.Sprintf("messages[%d]", i), m, inline, &cr, pm); err != nil {
			return cr, err
		}
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role == "assistant" {
		// Anthropic continues a final assistant message (a prefill); an
		// OpenAI-style engine would answer it with a new one instead.
		return cr, apierr.InvalidArgument(fmt.Sprintf("messages[%d].role", len(req.Messages)-1),
			"a final assistant message (prefill) is not supported by this server; end with a user message")
	}
	if err := h.tools(r, req, &cr); err != nil {
		return cr, err
	}
	return cr, nil
}

// system maps the system prompt: a string or text blocks.
func (h *AnthropicHandler) system(raw json.RawMessage, cr *chat.Request, pm *promptMap) error {
	if len(raw) == 0 || isJSON(raw, "null") {
		return nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text != "" {
			cr.Messages = append(cr.Messages, worker.ChatMessage{Role: "system", Parts: []worker.Part{{Text: text}}})
			pm.add("system", []string{"system"})
		}
		return nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return apierr.InvalidArgument("system", "must be a string or an array of text blocks")
	}
	msg := worker.ChatMessage{Role: "system"}
	var fields []string
	for j, b := range blocks {
		field := fmt.Sprintf("system[%d]", j)
		if b.Type != "text" {
			return apierr.InvalidArgument(field+".type", fmt.Sprintf("%q is not supported; the system prompt holds text blocks", b.Type))
		}
		msg.Parts = append(msg.Parts, worker.Part{Text: b.Text})
		fields = append(fields, field)
	}
	if len(msg.Parts) > 0 {
		cr.Messages = append(cr.Messages, msg)
		pm.add("system", fields)
	}
	return nil
}

// message maps one message. A user message's tool_result blocks become tool
// messages of their own (the core's form), in order with its other content.
func (h *AnthropicHandler) message(r *http.Request, field string, m anthropicMessage, inline *attach.Checker, cr *chat.Request, pm *promptMap) error {
	if m.Role != "user" && m.Role != "assistant" {
		return apierr.InvalidArgument(field+".role", fmt.Sprintf("%q is not supported; use user or assistant (the system prompt is the top-level system field)", m.Role))
	}
	var text string
	switch {
	case len(m.Content) == 0 || isJSON(m.Content, "null"):
		return apierr.InvalidArgument(field+".content", "is required")
	case json.Unmarshal(m.Content, &text) == nil:
		if text == "" {
			return apierr.InvalidArgument(field+".content", "must not be empty")
		}
		cr.Messages = append(cr.Messages, worker.ChatMessage{Role: m.Role, Parts: []worker.Part{{Text: text}}})
		pm.add(field, []string{field + ".content"})
		return nil
	}
	var raws []json.RawMessage
	if json.Unmarshal(m.Content, &raws) != nil {
		return apierr.InvalidArgument(field+".content", "must be a string or an array of content blocks")
	}
	if len(raws) == 0 {
		return apierr.InvalidArgument(field+".content", "must not be empty")
	}
	cur := worker.ChatMessage{Role: m.Role}
	var curFields []string
	flush := func() {
		if len(cur.Parts) > 0 {
			cr.Messages = append(cr.Messages, cur)
			pm.add(field, curFields)
		}
		cur, curFields = worker.ChatMessage{Role: m.Role}, nil
	}
	for j, raw := range raws {
		bf := fmt.Sprintf("%s.content[%d]", field, j)
		b, skip, err := h.block(r, bf, raw)
		if err != nil {
			return err
		}
		if skip {
			continue
		}
		var part worker.Part
		switch b.Type {
		case "text":
			if b.Text == "" {
				return apierr.InvalidArgument(bf+".text", "must not be empty")
			}
			part.Text = b.Text
		case "image", "document":
			if m.Role != "user" {
				return apierr.InvalidArgument(bf+".type", fmt.Sprintf("%s blocks belong in user messages", b.Type))
			}
			// Decoded and extracted only once the request is admitted.
			d, err := anthropicMedia(bf, b)
			if err != nil {
				return err
			}
			part = cr.Defer(len(cr.Messages), len(cur.Parts), d)
		case "tool_use":
			if m.Role != "assistant" {
				return apierr.InvalidArgument(bf+".type", "tool_use blocks belong in assistant messages")
			}
			args := bytes.TrimSpace(b.Input)
			var obj map[string]json.RawMessage
			if len(args) == 0 || json.Unmarshal(args, &obj) != nil || obj == nil {
				return apierr.InvalidArgument(bf+".input", "must be a JSON object")
			}
			var compact bytes.Buffer
			_ = json.Compact(&compact, args)
			part.ToolCall = &worker.ToolCall{ID: b.ID, Name: b.Name, Arguments: compact.String()}
		case "tool_result":
			if m.Role != "user" {
				return apierr.InvalidArgument(bf+".type", "tool_result blocks belong in user messages")
			}
			content, err := toolResultText(bf+".content", b.Content)
			if err != nil {
				return err
			}
			if b.IsError {
				// The core's tool results have no error flag: the model reads it.
				content = "Error: " + content
			}
			flush()
			cr.Messages = append(cr.Messages, worker.ChatMessage{Role: "tool",
				Parts: []worker.Part{{ToolResult: &worker.ToolResult{ToolCallID: b.ToolUseID, Content: content}}}})
			pm.add(field, []string{bf})
			continue
		}
		cur.Parts = append(cur.Parts, part)
		curFields = append(curFields, bf)
	}
	flush()
	return nil
}

// block reads one content block, refusing (or dropping) the fields and kinds
// Parley cannot honour. skip is true for a block to leave out: thinking from
// an earlier turn, which Anthropic too leaves out of the prompt when thinking
// is off.
func (h *AnthropicHandler) block(r *http.Request, field string, raw json.RawMessage) (b anthropicBlock, skip bool, err error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return b, false, apierr.InvalidArgument(field, "must be a content block object")
	}
	var typ string
	_ = json.Unmarshal(fields["type"], &typ)
	allowed, known := anthropicBlockFields[typ]
	switch {
	case !known:
		return b, false, apierr.InvalidArgument(field+".type", fmt.Sprintf("%q is not supported; use text, image, document, tool_use or tool_result", typ))
	case allowed == nil:
		return b, true, nil
	}
	for name, v := range fields {
		if allowed[name] || name == "citations" && isJSON(v, "null", "[]") {
			continue
		}
		if err := h.OpenAI.unsupported(r, field+"."+name); err != nil {
			return b, false, err
		}
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, false, apierr.InvalidArgument(field, "has a field of the wrong type")
	}
	return b, false, nil
}

// anthropicMedia reads an image or document block with a base64 source
// (or, for a document, a plain-text one) into a part the core prepares
// through the inline checker every surface uses, once the request is
// admitted.
func anthropicMedia(field string, b anthropicBlock) (chat.Deferred, error) {
	src := b.Source
	if src == nil {
		return chat.Deferred{}, apierr.InvalidArgument(field+".source", "is required")
	}
	d := chat.Deferred{Field: field + ".source", Kind: attach.KindDocument, MIME: src.MediaType, Filename: b.Title}
	if b.Type == "image" {
		d.Kind = attach.KindImage
	}
	switch src.Type {
	case "base64":
		d.DataURL, d.DataField = src.Data, field+".source.data" // decoded (or refused) once admitted
	case "text":
		if b.Type != "document" {
			return chat.Deferred{}, apierr.InvalidArgument(field+".source.type", `"text" sources are for documents`)
		}
		d.Data = []byte(src.Data)
	default:
		return chat.Deferred{}, apierr.InvalidArgument(field+".source.type", fmt.Sprintf("%q is not supported; send the data as base64 (URLs and files are not fetched)", src.Type))
	}
	return d, nil
}

// toolResultText reads a tool_result's content: a string, or text blocks
// joined.
func toolResultText(field string, content json.RawMessage) (string, error) {
	if len(content) == 0 || isJSON(content, "null") {
		return "", nil
	}
	var text string
	if json.Unmarshal(content, &text) == nil {
		return text, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return "", apierr.InvalidArgument(field, "must be a string or an array of text blocks")
	}
	var b bytes.Buffer
	for j, blk := range blocks {
		if blk.Type != "text" {
			return "", apierr.InvalidArgument(fmt.Sprintf("%s[%d].type", field, j), fmt.Sprintf("%q is not supported in a tool result; use text", blk.Type))
		}
		b.WriteString(blk.Text)
	}
	return b.String(), nil
}

// tools maps tools and tool_choice.
func (h *AnthropicHandler) tools(r *http.Request, req *anthropicRequest, cr *chat.Request) error {
	for i, raw := range req.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		var fields map[string]json.RawMessage
		var t anthropicTool
		if json.Unmarshal(raw, &fields) != nil || json.Unmarshal(raw, &t) != nil {
			return apierr.InvalidArgument(field, "must be a tool object")
		}
		if t.Type != "" && t.Type != "custom" {
			return apierr.InvalidArgument(field+".type", fmt.Sprintf("%q is not supported: Parley runs no server tools; define a custom tool with input_schema", t.Type))
		}
		for name := range fields {
			if !anthropicToolFields[name] {
				if err := h.OpenAI.unsupported(r, field+"."+name); err != nil {
					return err
				}
			}
		}
		schema := bytes.TrimSpace(t.InputSchema)
		if len(schema) == 0 || isJSON(schema, "null") {
			return apierr.InvalidArgument(field+".input_schema", "is required")
		}
		cr.Tools = append(cr.Tools, worker.Tool{Name: t.Name, Description: t.Description, Parameters: schema, Strict: t.Strict != nil && *t.Strict})
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto":
		case "any":
			cr.ToolChoice.Mode = worker.ToolChoiceRequired
		case "tool":
			if tc.Name == "" {
				return apierr.InvalidArgument("tool_choice.name", "is required with type tool")
			}
			cr.ToolChoice = worker.ToolChoice{Mode: worker.ToolChoiceFunction, Function: tc.Name}
		case "none":
			cr.ToolChoice.Mode = worker.ToolChoiceNone
		default:
			return apierr.InvalidArgument("tool_choice.type", fmt.Sprintf("%q is not auto, any, tool or none", tc.Type))
		}
		if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
			no := false
			cr.ParallelToolCalls = &no
		}
	}
	return nil
}

// Messages serves POST /v1/messages.
func (h *AnthropicHandler) Messages(w http.ResponseWriter, r *http.Request) {
	setAnthropicRequestID(w)
	req, err := h.parse(r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	creq, err := h.toChat(r, req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Stream {
		h.stream(w, r, creq)
		return
	}
	var all chat.Collector
	out, err := h.OpenAI.Core.Complete(r.Context(), creq, all.Emit)
	if err == nil {
		err = interrupted(out)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ch := all.Choice(0)
	body := anthropicResponse{ID: "msg_" + out.RequestID, Type: "message", Role: "assistant", Model: out.Model,
		Content: []any{}, Usage: anthropicFinalUsage(out.Usage)}
	body.StopReason = anthropicStopReason(out.Choices[0])
	if ch.Text.Len() > 0 {
		body.Content = append(body.Content, anthropicText{Type: "text", Text: ch.Text.String()})
	}
	for _, tc := range ch.ToolCalls {
		body.Content = append(body.Content, anthropicToolUse{Type: "tool_use", ID: tc.GetId(), Name: tc.GetName(), Input: toolInput(tc.GetArguments())})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// CountTokens serves POST /v1/messages/count_tokens: the prompt's tokens as
// the core counts them for the hold and the charge. Nothing is generated or
// charged.
func (h *AnthropicHandler) CountTokens(w http.ResponseWriter, r *http.Request) {
	setAnthropicRequestID(w)
	req, err := h.parse(r, true)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	creq, err := h.toChat(r, req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	n, err := h.OpenAI.Core.CountPrompt(r.Context(), creq)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		InputTokens int `json:"input_tokens"`
	}{n})
}

// anthropicResponse is a whole message as the Messages API answers it.
type anthropicResponse struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []any          `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type anthropicText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// anthropicFinalUsage is the usage of a finished generation. Anthropic's
// input_tokens leaves out the tokens read from the cache, which it counts on
// their own.
func anthropicFinalUsage(u worker.Usage) anthropicUsage {
	return anthropicUsage{InputTokens: u.PromptTokens - u.CachedTokens, CacheReadInputTokens: u.CachedTokens, OutputTokens: u.CompletionTokens}
}

// anthropicStopReason names how the message ended. Parley's engines do not
// say which stop sequence ended an answer, so a stop is end_turn.
func anthropicStopReason(r worker.FinishReason) *string {
	s := "end_turn"
	switch r {
	case worker.FinishLength:
		s = "max_tokens"
	case worker.FinishToolCalls:
		s = "tool_use"
	}
	return &s
}

// toolInput is a call's arguments as a tool_use block's input: the JSON
// object, {} for none, and the text as a JSON string when an engine made
// something that is not an object (so nothing is lost).
func toolInput(args string) json.RawMessage {
	a := bytes.TrimSpace([]byte(args))
	var obj map[string]json.RawMessage
	switch {
	case len(a) == 0:
		return json.RawMessage("{}")
	case json.Unmarshal(a, &obj) == nil && obj != nil:
		return a
	}
	s, _ := json.Marshal(args)
	return s
}

// stream answers with the Messages API's events: message_start, then per
// content block content_block_start, its deltas and content_block_stop,
// then message_delta and message_stop; ping events keep a quiet stream
// open, and a failure after the start is an error event. Headers are held
// back until the first event, so a request refused before it starts
// (overload, balance) still gets its HTTP status.
func (h *AnthropicHandler) stream(w http.ResponseWriter, r *http.Request, creq chat.Request) {
	out := &anthropicStream{chunkWriter: chunkWriter{w: w, enc: sse.NewEncoder(w)}, callBlock: map[int32]int{}, cur: -1}
	stop := keepAlive(h.OpenAI.PingInterval, func() error { return out.event("ping", anthropicEvent{Type: "ping"}) })
	defer stop()

	core := h.OpenAI.Core
	result, err := core.Complete(r.Context(), creq, func(ev *parleyv1.GenerationEvent) error {
		switch k := ev.GetKind().(type) {
		case *parleyv1.GenerationEvent_Started:
			// The prompt as the core counted it; the cache's share is known
			// only at the end (message_delta).
			msg := anthropicResponse{ID: "msg_" + k.Started.GetRequestId(), Type: "message", Role: "assistant", Model: k.Started.GetModel(),
				Content: []any{}, Usage: anthropicUsage{InputTokens: int(k.Started.GetPromptTokens())}}
			return out.event("message_start", struct {
				Type    string            `json:"type"`
				Message anthropicResponse `json:"message"`
			}{"message_start", msg})
		case *parleyv1.GenerationEvent_Delta:
			return out.delta(k.Delta)
		}
		return nil
	})
	if err != nil {
		if !out.started() {
			h.fail(w, r, err)
			return
		}
		out.error(err)
		return
	}
	if err := interrupted(result); err != nil {
		out.error(err)
		return
	}
	_ = out.closeBlock()
	var end anthropicMessageDelta
	end.Type, end.Usage = "message_delta", anthropicFinalUsage(result.Usage)
	end.Delta.StopReason = anthropicStopReason(result.Choices[0])
	_ = out.event("message_delta", end)
	_ = out.event("message_stop", anthropicEvent{Type: "message_stop"})
}

// The stream's events.
type (
	anthropicEvent struct {
		Type string `json:"type"`
	}
	anthropicBlockEvent struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock any    `json:"content_block,omitempty"`
		Delta        any    `json:"delta,omitempty"`
	}
	anthropicJSONDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	anthropicMessageDelta struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   *string `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage anthropicUsage `json:"usage"`
	}
)

// anthropicStream writes one message's events; the ping goroutine shares
// it (through the chunkWriter's lock).
type anthropicStream struct {
	chunkWriter
	blocks    int           // content blocks started so far
	cur       int           // the open block's index, -1 for none
	curText   bool          // whether the open block is text
	callBlock map[int32]int // a tool call's index → its block
}

// event writes one named event.
func (s *anthropicStream) event(name string, v any) error {
	c := &s.chunkWriter
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open()
	c.scratch.Reset()
	if err := json.NewEncoder(&c.scratch).Encode(v); err != nil {
		return err
	}
	return c.enc.WriteEvent(sse.Event{Event: name, Data: string(bytes.TrimSuffix(c.scratch.Bytes(), []byte("\n")))})
}

// delta writes one piece of the answer: text goes to a text block, each
// tool call to a tool_use block of its own, a block being opened (and the
// one before closed) when the kind changes.
func (s *anthropicStream) delta(d *parleyv1.GenerationDelta) error {
	if t := d.GetText(); t != "" {
		if s.cur < 0 || !s.curText {
			if err := s.startBlock(anthropicText{Type: "text", Text: ""}, true); err != nil {
				return err
			}
		}
		if err := s.event("content_block_delta", anthropicBlockEvent{Type: "content_block_delta", Index: s.cur,
			Delta: anthropicText{Type: "text_delta", Text: t}}); err != nil {
			return err
		}
	}
	for _, tc := range d.GetToolCalls() {
		index, seen := s.callBlock[tc.GetIndex()]
		if !seen {
			if err := s.startBlock(anthropicToolUse{Type: "tool_use", ID: tc.GetId(), Name: tc.GetName(), Input: json.RawMessage("{}")}, false); err != nil {
				return err
			}
			index = s.cur
			s.callBlock[tc.GetIndex()] = index
		}
		if args := tc.GetArguments(); args != "" {
			if err := s.event("content_block_delta", anthropicBlockEvent{Type: "content_block_delta", Index: index,
				Delta: anthropicJSONDelta{Type: "input_json_delta", PartialJSON: args}}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *anthropicStream) startBlock(block any, text bool) error {
	if err := s.closeBlock(); err != nil {
		return err
	}
	s.cur, s.curText = s.blocks, text
	s.blocks++
	return s.event("content_block_start", anthropicBlockEvent{Type: "content_block_start", Index: s.cur, ContentBlock: block})
}

func (s *anthropicStream) closeBlock() error {
	if s.cur < 0 {
		return nil
	}
	i := s.cur
	s.cur = -1
	return s.event("content_block_stop", anthropicBlockEvent{Type: "content_block_stop", Index: i})
}

// error ends the stream with an error event.
func (s *anthropicStream) error(err error) {
	_, body := anthropicError(err)
	_ = s.event("error", body)
}

// keepAlive calls ping every d until stopped (d <= 0: never), for streams
// whose keep-alive is an event of their own rather than chunkWriter's
// comment.
func keepAlive(d time.Duration, ping func() error) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	// A timer, not a goroutine with a ticker: an open stream then costs no
	// goroutine (and its stack) for its keep-alive.
	var (
		mu      sync.Mutex // held while pinging, so stop waits for a ping under way
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(d, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped && ping() == nil {
			t.Reset(d)
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		t.Stop()
	}
}

// fail writes err as the Messages API's error JSON.
func (h *AnthropicHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if h.OpenAI.Outage != nil {
		err = h.OpenAI.Outage.Fix(r.Context(), err)
	}
	WriteAnthropicError(w, r, err)
}

// setAnthropicRequestID repeats the gateway's request id under the name the
// Anthropic SDKs read it from (request-id), for their errors and logs.
func setAnthropicRequestID(w http.ResponseWriter) {
	if id := w.Header().Get("X-Request-Id"); id != "" {
		w.Header().Set("Request-Id", id)
	}
}

// anthropicErrorBody is the Messages API's error JSON.
type anthropicErrorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// WriteAnthropicError writes err as the Messages API's error JSON with its
// HTTP status and Retry-After. It is also the error writer of the auth
// middleware on the Anthropic routes.
func WriteAnthropicError(w http.ResponseWriter, _ *http.Request, err error) {
	status, body := anthropicError(err)
	if d, ok := apierr.RetryAfter(err); ok {
		w.Header().Set(apierr.RetryAfterHeader, strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
	if apierr.Detail(err, &parleyv1.InsufficientBalance{}) {
		// Retrying cannot help until the balance is topped up; the Anthropic
		// SDKs read this header before their own rules.
		w.Header().Set("X-Should-Retry", "false")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// anthropicError maps an error to the Messages API's status and error type.
// A balance too low is 400 invalid_request_error, as Anthropic answers it;
// overload and outages are 529 overloaded_error.
func anthropicError(err error) (int, anthropicErrorBody) {
	var body anthropicErrorBody
	body.Type = "error"
	ce := new(connect.Error)
	if !errors.As(err, &ce) {
		ce = apierr.Internal()
	}
	status, typ, msg := http.StatusInternalServerError, "api_error", ce.Message()
	var tooBig *bodyTooLarge
	switch ce.Code() {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange:
		status, typ = http.StatusBadRequest, "invalid_request_error"
		if errors.As(err, &tooBig) {
			status, typ = http.StatusRequestEntityTooLarge, "request_too_large"
		}
	case connect.CodeUnauthenticated:
		status, typ = http.StatusUnauthorized, "authentication_error"
	case connect.CodePermissionDenied:
		status, typ = http.StatusForbidden, "permission_error"
	case connect.CodeNotFound:
		status, typ = http.StatusNotFound, "not_found_error"
	case connect.CodeResourceExhausted:
		status, typ = http.StatusTooManyRequests, "rate_limit_error"
		var bal parleyv1.InsufficientBalance
		if apierr.Detail(ce, &bal) {
			status, typ = http.StatusBadRequest, "invalid_request_error"
			msg = fmt.Sprintf("Your credit balance is too low to access the Parley API (available %s, required %s). Top up your balance to continue.",
				apierr.USD(bal.GetAvailableNanos()), apierr.USD(bal.GetRequiredNanos()))
		}
	case connect.CodeUnavailable:
		status, typ = 529, "overloaded_error"
	case connect.CodeCanceled, connect.CodeDeadlineExceeded:
		status, typ = http.StatusGatewayTimeout, "timeout_error"
	}
	body.Error.Type, body.Error.Message = typ, msg
	return status, body
}
