package compat

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/detach"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/sse"
)

// anthropicHandler serves Anthropic's Messages API over the same core as
// every other surface: POST /v1/messages (whole and streamed) and POST
// /v1/messages/count_tokens. The official Anthropic SDKs work against it with
// base_url set to the gateway and a Parley API key as the api_key (sent as
// x-api-key).
type anthropicHandler struct{ *deps }

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
	// Thinking and OutputConfig, checked by anthropicHarmless, say whether
	// a model that reasons shows its reasoning (thinking enabled or
	// adaptive) and how hard it reasons.
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	OutputConfig *struct {
		Effort string `json:"effort"`
	} `json:"output_config"`
	// User is metadata.user_id.
	User string `json:"-"`
}

// showsThinking reports whether the request asks to see a model's
// reasoning, as thinking blocks.
func (req *anthropicRequest) showsThinking() bool {
	return req.Thinking != nil && (req.Thinking.Type == "enabled" || req.Thinking.Type == "adaptive")
}

// reasoningEffort is the request's thinking settings as the core's
// reasoning effort: output_config.effort (max is the most, xhigh), none
// when thinking is disabled, else the model's default.
func (req *anthropicRequest) reasoningEffort() string {
	switch {
	case req.OutputConfig != nil && req.OutputConfig.Effort == "max":
		return "xhigh"
	case req.OutputConfig != nil && req.OutputConfig.Effort != "":
		return req.OutputConfig.Effort
	case req.Thinking != nil && req.Thinking.Type == "disabled":
		return "none"
	}
	return ""
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

// anthropicMaxTokens is the largest max_tokens lowered to a smaller model's
// maximum rather than refused: the most any Claude model takes (128,000).
const anthropicMaxTokens = 128_000

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
// would have to do:
//   - thinking of any type: a model that reasons (the catalog's reasoning
//     capability) shows its reasoning as thinking blocks when thinking is
//     enabled or adaptive; one that does not answers a request to think by
//     answering;
//   - output_config.effort: how hard a model that reasons reasons, a hint
//     to one that does not;
//   - context_management edits that clear thinking blocks: there are none
//     to clear (other edits, which drop tool results from a long context,
//     would change what the model sees and are refused);
//   - service_tier, and the container, MCP and top_k settings when unset.
var anthropicHarmless = map[string]func(json.RawMessage) bool{
	"thinking": func(v json.RawMessage) bool {
		var t struct {
			Type         string `json:"type"`
			BudgetTokens *int   `json:"budget_tokens"`
		}
		if isJSON(v, "null") {
			return true
		}
		if json.Unmarshal(v, &t) != nil {
			return false
		}
		switch t.Type {
		case "disabled", "adaptive":
			return true
		case "enabled":
			return t.BudgetTokens == nil || *t.BudgetTokens >= 1
		}
		return false
	},
	"output_config": func(v json.RawMessage) bool {
		var c map[string]json.RawMessage
		if isJSON(v, "null") {
			return true
		}
		if json.Unmarshal(v, &c) != nil {
			return false
		}
		for k, e := range c {
			if k != "effort" || !isJSON(e, `"low"`, `"medium"`, `"high"`, `"max"`, "null") {
				return false
			}
		}
		return true
	},
	"context_management": func(v json.RawMessage) bool {
		var c struct {
			Edits []struct {
				Type string `json:"type"`
			} `json:"edits"`
		}
		if isJSON(v, "null") {
			return true
		}
		if json.Unmarshal(v, &c) != nil {
			return false
		}
		for _, e := range c.Edits {
			if !strings.HasPrefix(e.Type, "clear_thinking_") {
				return false
			}
		}
		return true
	},
	"service_tier": func(v json.RawMessage) bool { return isJSON(v, `"auto"`, `"standard_only"`, "null") },
	"top_k":        func(v json.RawMessage) bool { return isJSON(v, "null") },
	"container":    func(v json.RawMessage) bool { return isJSON(v, "null") },
	"mcp_servers":  func(v json.RawMessage) bool { return isJSON(v, "null", "[]") },
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

// A tool's defer_loading (the tool-search beta: load the definition when
// searched for) is accepted: Parley loads every tool up front.
var anthropicToolFields = map[string]bool{
	"type": true, "name": true, "description": true, "input_schema": true, "cache_control": true, "strict": true,
	"defer_loading": true,
}

// parse reads a Messages API body; count is true for count_tokens, which
// takes no generation settings.
func (h *anthropicHandler) parse(r *http.Request, count bool) (*anthropicRequest, error) {
	read := anthropicParams
	if count {
		read = anthropicCountParams
	}
	var req anthropicRequest
	fields, err := h.decodeBody(r, read, anthropicHarmless, &req)
	if err != nil {
		return nil, err
	}
	if m, ok := fields["metadata"]; ok && !isJSON(m, "null") {
		var meta map[string]json.RawMessage
		if json.Unmarshal(m, &meta) != nil {
			return nil, apierr.InvalidArgument("metadata", "must be an object")
		}
		for _, k := range slices.Sorted(maps.Keys(meta)) { // refused in a fixed order
			v := meta[k]
			if k != "user_id" {
				if err := h.unsupported(r, "metadata."+k); err != nil {
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
func (h *anthropicHandler) toChat(r *http.Request, req *anthropicRequest) (chat.Request, error) {
	cr := chat.Request{Request: llm.Request{Model: req.Model, Temperature: req.Temperature, TopP: req.TopP, Stop: req.StopSequences,
		ReasoningEffort: req.reasoningEffort()}, User: req.User}
	if req.MaxTokens != nil {
		cr.MaxOutputTokens = *req.MaxTokens
		// Up to the most any Claude model takes, max_tokens is an upper
		// bound lowered to the model's (see chat.Request.ClampOutput).
		cr.ClampOutput = *req.MaxTokens <= anthropicMaxTokens
	}
	pm := &promptMap{}
	cr.Rename = pm.rename
	if err := h.system(req.System, "system", "system", &cr, pm); err != nil {
		return cr, err
	}
	if len(req.Messages) == 0 {
		return cr, apierr.InvalidArgument("messages", "must not be empty")
	}
	inline := h.Core.Attachments.Inline()
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

// system maps the system prompt: a string or text blocks. at names it in
// errors ("system", or "messages[3].content" for a system message among the
// messages, which Claude Code sends) and key is the mapped message's field.
func (h *anthropicHandler) system(raw json.RawMessage, key, at string, cr *chat.Request, pm *promptMap) error {
	if len(raw) == 0 || isJSON(raw, "null") {
		return nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text != "" {
			cr.Messages = append(cr.Messages, llm.ChatMessage{Role: "system", Parts: []llm.Part{{Text: text}}})
			pm.add(key, []string{at})
		}
		return nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return apierr.InvalidArgument(at, "must be a string or an array of text blocks")
	}
	msg := llm.ChatMessage{Role: "system"}
	var fields []string
	for j, b := range blocks {
		field := fmt.Sprintf("%s[%d]", at, j)
		if b.Type != "text" {
			return apierr.InvalidArgument(field+".type", fmt.Sprintf("%q is not supported; a system prompt holds text blocks", b.Type))
		}
		msg.Parts = append(msg.Parts, llm.Part{Text: b.Text})
		fields = append(fields, field)
	}
	if len(msg.Parts) > 0 {
		cr.Messages = append(cr.Messages, msg)
		pm.add(key, fields)
	}
	return nil
}

// message maps one message. A user message's tool_result blocks become tool
// messages of their own (the core's form), in order with its other content.
func (h *anthropicHandler) message(r *http.Request, field string, m anthropicMessage, inline *attach.Checker, cr *chat.Request, pm *promptMap) error {
	switch m.Role {
	case "user", "assistant":
	case "system":
		// A system message among the messages (Claude Code sends its
		// environment so, after the user's) is a system message of the
		// core's, in place; the conversation still opens with a turn.
		if field == "messages[0]" {
			return apierr.InvalidArgument(field+".role", `"system" cannot open the messages; the system prompt is the top-level system field`)
		}
		return h.system(m.Content, field, field+".content", cr, pm)
	default:
		return apierr.InvalidArgument(field+".role", fmt.Sprintf("%q is not supported; use user, assistant or system", m.Role))
	}
	var text string
	switch {
	case len(m.Content) == 0 || isJSON(m.Content, "null"):
		return apierr.InvalidArgument(field+".content", "is required")
	case json.Unmarshal(m.Content, &text) == nil:
		if text == "" {
			return apierr.InvalidArgument(field+".content", "must not be empty")
		}
		cr.Messages = append(cr.Messages, llm.ChatMessage{Role: m.Role, Parts: []llm.Part{{Text: text}}})
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
	cur := llm.ChatMessage{Role: m.Role}
	var curFields []string
	flush := func() {
		if len(cur.Parts) > 0 {
			cr.Messages = append(cr.Messages, cur)
			pm.add(field, curFields)
		}
		cur, curFields = llm.ChatMessage{Role: m.Role}, nil
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
		var part llm.Part
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
			part.ToolCall = &llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: compact.String()}
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
			cr.Messages = append(cr.Messages, llm.ChatMessage{Role: "tool",
				Parts: []llm.Part{{ToolResult: &llm.ToolResult{ToolCallID: b.ToolUseID, Content: content}}}})
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
func (h *anthropicHandler) block(r *http.Request, field string, raw json.RawMessage) (b anthropicBlock, skip bool, err error) {
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
	for _, name := range slices.Sorted(maps.Keys(fields)) { // refused in a fixed order
		v := fields[name]
		if allowed[name] || name == "citations" && isJSON(v, "null", "[]") {
			continue
		}
		if err := h.unsupported(r, field+"."+name); err != nil {
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
func (h *anthropicHandler) tools(r *http.Request, req *anthropicRequest, cr *chat.Request) error {
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
		for _, name := range slices.Sorted(maps.Keys(fields)) { // refused in a fixed order
			if !anthropicToolFields[name] {
				if err := h.unsupported(r, field+"."+name); err != nil {
					return err
				}
			}
		}
		schema := bytes.TrimSpace(t.InputSchema)
		if len(schema) == 0 || isJSON(schema, "null") {
			return apierr.InvalidArgument(field+".input_schema", "is required")
		}
		cr.Tools = append(cr.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: schema, Strict: t.Strict != nil && *t.Strict})
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto":
		case "any":
			cr.ToolChoice.Mode = llm.ToolChoiceRequired
		case "tool":
			if tc.Name == "" {
				return apierr.InvalidArgument("tool_choice.name", "is required with type tool")
			}
			cr.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceFunction, Function: tc.Name}
		case "none":
			cr.ToolChoice.Mode = llm.ToolChoiceNone
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
func (h *anthropicHandler) Messages(w http.ResponseWriter, r *http.Request) {
	setAnthropicRequestID(w)
	req, creq, err := h.parseMessages(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Stream {
		h.stream(w, r, creq, req.showsThinking())
		return
	}
	h.complete(w, r, req, creq)
}

// parseMessages reads a Messages request and maps it to the core's. It
// and complete are functions of their own, so that their locals stay out
// of Messages' frame, which a stream keeps on its stack while it is open.
func (h *anthropicHandler) parseMessages(r *http.Request) (*anthropicRequest, *chat.Request, error) {
	req, err := h.parse(r, false)
	if err != nil {
		return nil, nil, err
	}
	creq, err := h.toChat(r, req)
	if err != nil {
		return nil, nil, err
	}
	return req, &creq, nil
}

// complete answers a Messages request that is not streamed.
func (h *anthropicHandler) complete(w http.ResponseWriter, r *http.Request, req *anthropicRequest, creq *chat.Request) {
	out, all, err := h.collect(r, *creq)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ch := all.Choice(0)
	body := anthropicResponse{ID: "msg_" + out.RequestID, Type: "message", Role: "assistant", Model: out.Model,
		Content: []any{}, Usage: anthropicFinalUsage(out.Usage)}
	body.StopReason = anthropicStopReason(out.Choices[0])
	if ch.Reasoning.Len() > 0 && req.showsThinking() {
		t := ch.Reasoning.String()
		body.Content = append(body.Content, anthropicThinking{Type: "thinking", Thinking: t, Signature: thinkingSignature(t)})
	}
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
func (h *anthropicHandler) CountTokens(w http.ResponseWriter, r *http.Request) {
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
	n, err := h.Core.CountPrompt(r.Context(), creq)
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

// anthropicThinking is a thinking block: the model's reasoning, and a
// signature a client sends back with it. Parley leaves earlier turns'
// thinking out of the prompt, so the signature is only a digest of the
// text (the block's shape requires one), not checked.
type anthropicThinking struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

func thinkingSignature(thinking string) string {
	sum := sha256.Sum256([]byte(thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
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
func anthropicFinalUsage(u llm.Usage) anthropicUsage {
	return anthropicUsage{InputTokens: u.PromptTokens - u.CachedTokens, CacheReadInputTokens: u.CachedTokens, OutputTokens: u.CompletionTokens}
}

// anthropicStopReason names how the message ended. Parley's engines do not
// say which stop sequence ended an answer, so a stop is end_turn.
func anthropicStopReason(r llm.FinishReason) *string {
	s := "end_turn"
	switch r {
	case llm.FinishLength:
		s = "max_tokens"
	case llm.FinishToolCalls:
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
func (h *anthropicHandler) stream(w http.ResponseWriter, r *http.Request, creq *chat.Request, thinking bool) {
	creqs := []chat.Request{*creq} // on the heap, not in the stream's frame
	detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
		enc := &anthropicStream{chunkWriter: chunkWriter{w: w, enc: sse.NewEncoder(w)}, callBlock: map[int32]int{}, cur: -1, thinking: thinking}
		h.runStream(r, enc, creqs, func(err error) { h.fail(w, r, err) })
	})
}

func (s *anthropicStream) start(_ int, st *parleyv1.GenerationStarted) error {
	// The prompt as the core counted it; the cache's share is known only at
	// the end (message_delta).
	msg := anthropicResponse{ID: "msg_" + st.GetRequestId(), Type: "message", Role: "assistant", Model: st.GetModel(),
		Content: []any{}, Usage: anthropicUsage{InputTokens: int(st.GetPromptTokens())}}
	return s.event("message_start", struct {
		Type    string            `json:"type"`
		Message anthropicResponse `json:"message"`
	}{"message_start", msg})
}

func (s *anthropicStream) finish(_ int, result *chat.Outcome) {
	_ = s.closeBlock()
	var end anthropicMessageDelta
	end.Type, end.Usage = "message_delta", anthropicFinalUsage(result.Usage)
	end.Delta.StopReason = anthropicStopReason(result.Choices[0])
	_ = s.event("message_delta", end)
	_ = s.event("message_stop", anthropicEvent{Type: "message_stop"})
}

// ping is the Messages API's keep-alive: a ping event.
func (s *anthropicStream) ping() error { return s.event("ping", anthropicEvent{Type: "ping"}) }

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
	anthropicThinkingDelta struct {
		Type     string `json:"type"`
		Thinking string `json:"thinking"`
	}
	anthropicSignatureDelta struct {
		Type      string `json:"type"`
		Signature string `json:"signature"`
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

// anthropicStream is the encoder of a streamed message; the keep-alive
// shares it (through the chunkWriter's lock).
type anthropicStream struct {
	chunkWriter
	blocks    int           // content blocks started so far
	cur       int           // the open block's index, -1 for none
	curKind   string        // the open block's type
	callBlock map[int32]int // a tool call's index → its block
	// thinking is whether reasoning is shown, as thinking blocks; the open
	// one's text so far is kept for its signature.
	thinking     bool
	thoughtSoFar strings.Builder
}

// delta writes one piece of the answer: reasoning (when shown) goes to a
// thinking block, text to a text block, each tool call to a tool_use block
// of its own, a block being opened (and the one before closed) when the
// kind changes.
func (s *anthropicStream) delta(_ int, d *parleyv1.GenerationDelta) error {
	if t := d.GetReasoning(); t != "" && s.thinking {
		if s.cur < 0 || s.curKind != "thinking" {
			if err := s.startBlock(anthropicThinking{Type: "thinking"}, "thinking"); err != nil {
				return err
			}
		}
		s.thoughtSoFar.WriteString(t)
		if err := s.event("content_block_delta", anthropicBlockEvent{Type: "content_block_delta", Index: s.cur,
			Delta: anthropicThinkingDelta{Type: "thinking_delta", Thinking: t}}); err != nil {
			return err
		}
	}
	if t := d.GetText(); t != "" {
		if s.cur < 0 || s.curKind != "text" {
			if err := s.startBlock(anthropicText{Type: "text", Text: ""}, "text"); err != nil {
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
			if err := s.startBlock(anthropicToolUse{Type: "tool_use", ID: tc.GetId(), Name: tc.GetName(), Input: json.RawMessage("{}")}, "tool_use"); err != nil {
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

func (s *anthropicStream) startBlock(block any, kind string) error {
	if err := s.closeBlock(); err != nil {
		return err
	}
	s.cur, s.curKind = s.blocks, kind
	s.blocks++
	return s.event("content_block_start", anthropicBlockEvent{Type: "content_block_start", Index: s.cur, ContentBlock: block})
}

func (s *anthropicStream) closeBlock() error {
	if s.cur < 0 {
		return nil
	}
	i := s.cur
	s.cur = -1
	if s.curKind == "thinking" {
		// A thinking block ends with its signature.
		sig := thinkingSignature(s.thoughtSoFar.String())
		s.thoughtSoFar.Reset()
		if err := s.event("content_block_delta", anthropicBlockEvent{Type: "content_block_delta", Index: i,
			Delta: anthropicSignatureDelta{Type: "signature_delta", Signature: sig}}); err != nil {
			return err
		}
	}
	return s.event("content_block_stop", anthropicBlockEvent{Type: "content_block_stop", Index: i})
}

// fail ends the stream with an error event.
func (s *anthropicStream) fail(err error) {
	_, body := anthropicError(err)
	_ = s.event("error", body)
}

// fail writes err as the Messages API's error JSON.
func (h *anthropicHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeAnthropicError(w, r, h.fix(r, err))
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

// writeAnthropicError writes err as the Messages API's error JSON with its
// HTTP status and Retry-After. It is also the error writer of the auth
// middleware on the Anthropic routes.
func writeAnthropicError(w http.ResponseWriter, _ *http.Request, err error) {
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
