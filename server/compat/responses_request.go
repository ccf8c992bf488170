package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

// responsesRequest is the body of POST /v1/responses (OpenAI's Responses
// API), as far as Parley reads it. As on /v1/chat/completions, a field Parley
// cannot honour is refused by name, or dropped when the operator says so.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Text               *responsesText    `json:"text"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	User               string            `json:"user"`
	SafetyIdentifier   string            `json:"safety_identifier"`
	Metadata           map[string]string `json:"metadata"`
	Stream             bool              `json:"stream"`
	Background         bool              `json:"background"`
	Store              *bool             `json:"store"`
	PreviousResponseID string            `json:"previous_response_id"`
	// Include, checked by responsesHarmlessParams: file_search_call.results
	// puts the file search's results in its output item.
	Include []string `json:"include"`
	// Reasoning, checked by reasoningHint: its effort is passed on to a
	// model that reasons.
	Reasoning *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
}

// reasoningEffort is reasoning.effort, or "" for the model's default.
func (req *responsesRequest) reasoningEffort() string {
	if req.Reasoning != nil && req.Reasoning.Effort != nil {
		return *req.Reasoning.Effort
	}
	return ""
}

type responsesText struct {
	Format    *responseFormat `json:"format"`
	Verbosity *string         `json:"verbosity"`
}

// responsesTool is a tool as the Responses API spells it: flat, not under
// "function".
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// responsesItem is one input item: a message (with or without type
// "message"), a function call the model made, or a function's output. id
// and status, which the SDKs send back with earlier output, are ignored.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

type responsesContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
	FileData string `json:"file_data"`
}

// responsesReadParams are the request fields Parley reads.
var responsesReadParams = map[string]bool{
	"model": true, "input": true, "instructions": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "text": true, "max_output_tokens": true, "temperature": true,
	"top_p": true, "user": true, "safety_identifier": true, "metadata": true, "stream": true,
	"store": true, "background": true, "previous_response_id": true,
}

// responsesHarmlessParams are accepted at the values that ask for nothing
// Parley would have to do: reasoning settings (the effort is passed on to a
// model that reasons, whose reasoning comes as reasoning items; a summary is
// a hint, as Parley makes none), nothing extra to include but encrypted
// reasoning (Parley keeps none to encrypt: reasoning items carry the text), not in
// the background, no truncation, no log probabilities. stream_options only
// asks for obfuscation padding (Parley sends none), prompt_cache_key is a
// routing hint (Parley keeps prefix affinity by itself) and client_metadata
// is the client's own (Codex sends its session ids there).
var responsesHarmlessParams = map[string]func(json.RawMessage) bool{
	"reasoning": reasoningHint,
	"include": func(v json.RawMessage) bool {
		var inc []string
		if isJSON(v, "null") {
			return true
		}
		if json.Unmarshal(v, &inc) != nil {
			return false
		}
		for _, x := range inc {
			if x != "reasoning.encrypted_content" && x != "file_search_call.results" {
				return false
			}
		}
		return true
	},
	"client_metadata": func(v json.RawMessage) bool {
		var m map[string]json.RawMessage
		return isJSON(v, "null") || json.Unmarshal(v, &m) == nil
	},
	"truncation":             func(v json.RawMessage) bool { return isJSON(v, `"disabled"`, "null") },
	"service_tier":           func(v json.RawMessage) bool { return isJSON(v, `"auto"`, `"default"`, "null") },
	"max_tool_calls":         func(v json.RawMessage) bool { return isJSON(v, "null") },
	"top_logprobs":           func(v json.RawMessage) bool { return isJSON(v, "0", "null") },
	"stream_options":         func(json.RawMessage) bool { return true },
	"prompt_cache_key":       func(json.RawMessage) bool { return true },
	"prompt_cache_retention": func(v json.RawMessage) bool { return isJSON(v, "null") },
	"conversation":           func(v json.RawMessage) bool { return isJSON(v, "null") },
	"prompt":                 func(v json.RawMessage) bool { return isJSON(v, "null") },
	"context_management":     func(v json.RawMessage) bool { return isJSON(v, "null", "[]") },
}

// reasoningHint accepts a reasoning setting of known keys and values: effort
// (none … xhigh), summary and generate_summary (auto, concise, detailed,
// none), and context (Codex's all_turns): hints a model that does not
// reason follows by answering.
func reasoningHint(v json.RawMessage) bool {
	if isJSON(v, "null") {
		return true
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(v, &r) != nil {
		return false
	}
	for k, x := range r {
		ok := isJSON(x, "null")
		switch k {
		case "effort":
			ok = ok || isJSON(x, `"none"`, `"minimal"`, `"low"`, `"medium"`, `"high"`, `"xhigh"`)
		case "summary", "generate_summary":
			ok = ok || isJSON(x, `"auto"`, `"concise"`, `"detailed"`, `"none"`)
		case "context":
			ok = ok || isJSON(x, `"all_turns"`, `"current_turn"`)
		}
		if !ok {
			return false
		}
	}
	return true
}

// Bounds on metadata, as OpenAI sets them.
const (
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

// parseResponses reads and checks the body of POST /v1/responses.
func (h *openAIHandler) parseResponses(r *http.Request) (*responsesRequest, error) {
	var req responsesRequest
	if _, err := h.decodeBody(r, responsesReadParams, responsesHarmlessParams, &req); err != nil {
		return nil, err
	}
	if len(req.Metadata) > maxMetadataPairs {
		return nil, apierr.InvalidArgument("metadata", fmt.Sprintf("has %d pairs; at most %d", len(req.Metadata), maxMetadataPairs))
	}
	for k, v := range req.Metadata {
		switch {
		case k == "" || utf8.RuneCountInString(k) > maxMetadataKey:
			return nil, apierr.InvalidArgument("metadata", fmt.Sprintf("a key must be 1 to %d characters", maxMetadataKey))
		case utf8.RuneCountInString(v) > maxMetadataValue:
			return nil, apierr.InvalidArgument("metadata."+k, fmt.Sprintf("is over %d characters", maxMetadataValue))
		}
	}
	if v := req.Text; v != nil && v.Verbosity != nil && *v.Verbosity != "low" && *v.Verbosity != "medium" && *v.Verbosity != "high" {
		// low and high are hints, followed by answering (Codex sends low).
		return nil, apierr.InvalidArgument("text.verbosity", "must be low, medium or high")
	}
	if req.User == "" {
		req.User = req.SafetyIdentifier
	}
	return &req, nil
}

// stores says whether the response is to be stored (OpenAI's default: yes).
func (req *responsesRequest) stores() bool { return req.Store == nil || *req.Store }

// responsesChat maps the request's settings onto the core's request (the
// messages are planResponse's to add), and returns the function tools as
// the response echoes them.
func (h *openAIHandler) responsesChat(r *http.Request, req *responsesRequest) (chat.Request, []any, *fileSearchTool, error) {
	var echoed []any
	var fs *fileSearchTool
	cr := chat.Request{Request: llm.Request{Model: req.Model, Temperature: req.Temperature, TopP: req.TopP, ParallelToolCalls: req.ParallelToolCalls,
		ReasoningEffort: req.reasoningEffort()}, User: req.User}
	if req.MaxOutputTokens != nil {
		if cr.MaxOutputTokens = *req.MaxOutputTokens; cr.MaxOutputTokens <= 0 {
			return cr, nil, nil, apierr.InvalidArgument("max_output_tokens", "must be positive")
		}
	}
	for i, raw := range req.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		var t responsesTool
		if err := json.Unmarshal(raw, &t); err != nil {
			return cr, nil, nil, apierr.InvalidArgument(field, "must be a tool object")
		}
		if t.Type == "file_search" && h.Knowledge != nil {
			if fs != nil {
				return cr, nil, nil, apierr.InvalidArgument(field, "a second file_search tool; give one, with every vector store")
			}
			var err error
			if fs, err = parseFileSearch(raw, field, req.Include); err != nil {
				return cr, nil, nil, err
			}
			echoed = append(echoed, fs.echo)
			continue
		}
		if t.Type != "function" {
			// A built-in tool (web_search, file_search, code_interpreter…)
			// runs on OpenAI's side; Parley has none.
			if h.Unsupported == UnsupportedDrop {
				h.dropped(r, "tools") // counted under the field: tool types are the client's words
				continue
			}
			return cr, nil, nil, apierr.InvalidArgument(field+".type", fmt.Sprintf("%q is not supported by this server; only function tools are (an operator can drop such tools with --openai-unsupported=drop)", t.Type))
		}
		tool := llm.Tool{Name: t.Name, Strict: t.Strict != nil && *t.Strict}
		if t.Description != nil {
			tool.Description = *t.Description
		}
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && string(p) != "null" {
			tool.Parameters = p
		}
		cr.Tools = append(cr.Tools, tool)
		echoed = append(echoed, responseTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: tool.Parameters, Strict: t.Strict})
	}
	if tc := bytes.TrimSpace(req.ToolChoice); len(tc) > 0 && string(tc) != "null" {
		var mode string
		var named struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		switch {
		case json.Unmarshal(tc, &mode) == nil:
			switch mode {
			case "auto":
			case "none", "required":
				cr.ToolChoice.Mode = llm.ToolChoiceMode(mode)
			default:
				return cr, nil, nil, apierr.InvalidArgument("tool_choice", fmt.Sprintf("%q is not auto, none or required", mode))
			}
		case json.Unmarshal(tc, &named) == nil && named.Type == "function" && named.Name != "":
			cr.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceFunction, Function: named.Name}
		default:
			return cr, nil, nil, apierr.InvalidArgument("tool_choice", `must be "auto", "none", "required" or {"type":"function","name":...}`)
		}
	}
	if req.Text != nil && req.Text.Format != nil {
		switch f := req.Text.Format; f.Type {
		case "text", "":
		case "json_object":
			cr.ResponseFormat.Type = llm.FormatJSONObject
		case "json_schema":
			cr.ResponseFormat = llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: f.Name,
				Schema: bytes.TrimSpace(f.Schema), Strict: f.Strict != nil && *f.Strict}
		default:
			return cr, nil, nil, apierr.InvalidArgument("text.format.type", fmt.Sprintf("%q is not text, json_object or json_schema", f.Type))
		}
	}
	return cr, echoed, fs, nil
}

// responsesFieldNames turns the core's field paths into the ones the caller
// sent (messages are renamed by their origin, see responsePlan.rename).
var responsesFieldNames = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^response_format\.`), "text.format."},
	{regexp.MustCompile(`^messages$`), "input"},
}

// inputMessages reads the input (a string, or a list of items) as the
// messages to store, each with the field it came from. Inline images are
// checked and fitted here, as they will be stored.
func (req *responsesRequest) inputMessages(inline *attach.Checker) (msgs []store.Message, fields []string, err error) {
	in := bytes.TrimSpace(req.Input)
	if len(in) == 0 || string(in) == "null" {
		return nil, nil, apierr.InvalidArgument("input", "is required")
	}
	var text string
	if json.Unmarshal(in, &text) == nil {
		if text == "" {
			return nil, nil, apierr.InvalidArgument("input", "must not be empty")
		}
		return []store.Message{newInputMessage("user", store.Part{Text: text})}, []string{"input"}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(in, &items) != nil {
		return nil, nil, apierr.InvalidArgument("input", "must be a string or a list of input items")
	}
	if len(items) == 0 {
		return nil, nil, apierr.InvalidArgument("input", "must not be empty")
	}
	defer func() {
		if err == nil && len(msgs) == 0 {
			msgs, fields, err = nil, nil, apierr.InvalidArgument("input", "holds only reasoning items; give a message or a function call output")
		}
	}()
	msgs = make([]store.Message, 0, len(items))
	fields = make([]string, 0, len(items))
	for i, raw := range items {
		field := fmt.Sprintf("input[%d]", i)
		if isReasoningItem(raw) {
			// Earlier reasoning a client sends back (Codex does, with
			// store false): the model is given none, as chat templates
			// leave earlier turns' reasoning out.
			continue
		}
		m, err := responseInputItem(field, raw, inline)
		if err != nil {
			return nil, nil, err
		}
		msgs, fields = append(msgs, m), append(fields, field)
	}
	return msgs, fields, nil
}

// isReasoningItem reports whether an input item is a reasoning item.
func isReasoningItem(raw json.RawMessage) bool {
	var it struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &it) == nil && it.Type == "reasoning"
}

// newInputMessage is an input message to store, with its id.
func newInputMessage(role string, parts ...store.Part) store.Message {
	return store.Message{ID: uuid.Must(uuid.NewV7()).String(), Role: role, Parts: parts}
}

// responseInputItem reads one input item as a message to store.
func responseInputItem(field string, raw json.RawMessage, inline *attach.Checker) (store.Message, error) {
	var it responsesItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return store.Message{}, apierr.InvalidArgument(field, "must be an input item object")
	}
	switch it.Type {
	case "", "message":
		return responseInputMessage(field, it, inline)
	case "function_call":
		switch {
		case it.CallID == "":
			return store.Message{}, apierr.InvalidArgument(field+".call_id", "is required")
		case it.Name == "":
			return store.Message{}, apierr.InvalidArgument(field+".name", "is required")
		}
		return newInputMessage("assistant", store.Part{ToolCall: &llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}}), nil
	case "function_call_output":
		if it.CallID == "" {
			return store.Message{}, apierr.InvalidArgument(field+".call_id", "is required")
		}
		out, err := textParts(field+".output", it.Output, "input_text", "a function's output")
		if err != nil {
			return store.Message{}, err
		}
		return newInputMessage("tool", store.Part{ToolResult: &llm.ToolResult{ToolCallID: it.CallID, Content: out}}), nil
	case "item_reference":
		return store.Message{}, apierr.InvalidArgument(field+".type", "item_reference is not supported by this server; send the item itself, or continue with previous_response_id")
	}
	return store.Message{}, apierr.InvalidArgument(field+".type", fmt.Sprintf("%q is not supported; use message, function_call or function_call_output", it.Type))
}

// responseInputMessage reads a message item: a role and its content.
func responseInputMessage(field string, it responsesItem, inline *attach.Checker) (store.Message, error) {
	role := it.Role
	switch role {
	case "user", "system", "assistant":
	case "developer":
		role = "system"
	case "":
		return store.Message{}, apierr.InvalidArgument(field+".role", "is required")
	default:
		return store.Message{}, apierr.InvalidArgument(field+".role", fmt.Sprintf("%q is not supported; use user, system, developer or assistant", it.Role))
	}
	m := newInputMessage(role)
	var text string
	var parts []responsesContent
	switch {
	case json.Unmarshal(it.Content, &text) == nil:
		if text == "" {
			return m, apierr.InvalidArgument(field+".content", "must not be empty")
		}
		m.Parts = []store.Part{{Text: text}}
		return m, nil
	case json.Unmarshal(it.Content, &parts) == nil:
		if len(parts) == 0 {
			return m, apierr.InvalidArgument(field+".content", "must not be empty")
		}
	default:
		return m, apierr.InvalidArgument(field+".content", "must be a string or a list of content parts")
	}
	for j, p := range parts {
		pf := fmt.Sprintf("%s.content[%d]", field, j)
		switch {
		case p.Type == "input_text" || p.Type == "output_text":
			m.Parts = append(m.Parts, store.Part{Text: p.Text})
		case role == "assistant":
			return m, apierr.InvalidArgument(pf+".type", fmt.Sprintf("%q is not supported in an assistant message; use output_text", p.Type))
		case p.Type == "input_image" && p.FileID != "":
			m.Parts = append(m.Parts, store.Part{AttachmentID: p.FileID})
		case p.Type == "input_image":
			if p.ImageURL == "" {
				return m, apierr.InvalidArgument(pf+".image_url", "is required (a data: URL), or give file_id (an uploaded attachment)")
			}
			data, mime, err := parseDataURL(p.ImageURL)
			if err != nil {
				return m, apierr.InvalidArgument(pf+".image_url", err.Error())
			}
			img, cerr := inline.InlineImage(pf, data, mime)
			if cerr != nil {
				return m, cerr
			}
			m.Parts = append(m.Parts, store.Part{Image: &store.Image{Data: img.Data, MimeType: img.MimeType, Width: img.Width, Height: img.Height}})
		case p.Type == "input_file" && p.FileID != "":
			m.Parts = append(m.Parts, store.Part{AttachmentID: p.FileID})
		case p.Type == "input_file":
			return m, apierr.InvalidArgument(pf+".file_id", "is required: upload the file with AttachmentService and give its id (inline file_data is not supported)")
		default:
			return m, apierr.InvalidArgument(pf+".type", fmt.Sprintf("%q is not supported; use input_text, input_image or input_file", p.Type))
		}
	}
	return m, nil
}
