package compat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
)

// openAIRequest is the body of POST /v1/chat/completions, as far as Parley
// reads it. Fields it cannot honour are refused by name (see
// unsupportedParam), or dropped when the operator says so — never silently
// ignored.
type openAIRequest struct {
	Model               string          `json:"model"`
	Messages            []openAIMessage `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	User                string          `json:"user"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N                 *int                  `json:"n"`
	Logprobs          *bool                 `json:"logprobs"`
	TopLogprobs       *int                  `json:"top_logprobs"`
	Tools             []openAITool          `json:"tools"`
	ToolChoice        json.RawMessage       `json:"tool_choice"`
	ParallelToolCalls *bool                 `json:"parallel_tool_calls"`
	ResponseFormat    *openAIResponseFormat `json:"response_format"`
	// ReasoningEffort is passed on to a model that reasons, a hint to
	// one that does not.
	ReasoningEffort *string `json:"reasoning_effort"`
}

type openAIMessage struct {
	Role       string           `json:"role"`
	Content    json.RawMessage  `json:"content"`
	Name       string           `json:"name"`
	ToolCalls  []openAIToolCall `json:"tool_calls"`
	ToolCallID string           `json:"tool_call_id"`
	Refusal    *string          `json:"refusal"`
}

type openAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type openAITool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

type openAIResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

type openAIContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// readParams are the request fields Parley reads.
var readParams = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "max_completion_tokens": true,
	"temperature": true, "top_p": true, "stop": true, "seed": true, "user": true,
	"stream": true, "stream_options": true, "n": true, "logprobs": true, "top_logprobs": true,
	"tools": true, "tool_choice": true, "parallel_tool_calls": true, "response_format": true,
	"reasoning_effort": true,
}

// harmlessParams are accepted at the values that ask for nothing Parley
// would have to do: metadata (kept only with stored completions, which
// Parley does not make), store false, zero penalties, an empty logit_bias.
var harmlessParams = map[string]func(json.RawMessage) bool{
	"metadata":          func(json.RawMessage) bool { return true },
	"store":             func(v json.RawMessage) bool { return isJSON(v, "false", "null") },
	"presence_penalty":  func(v json.RawMessage) bool { return isJSON(v, "0", "0.0", "null") },
	"frequency_penalty": func(v json.RawMessage) bool { return isJSON(v, "0", "0.0", "null") },
	"logit_bias":        func(v json.RawMessage) bool { return isJSON(v, "{}", "null") },
	"service_tier":      func(v json.RawMessage) bool { return isJSON(v, `"auto"`, `"default"`, "null") },
	"function_call":     func(v json.RawMessage) bool { return isJSON(v, "null") },
	"functions":         func(v json.RawMessage) bool { return isJSON(v, "null", "[]") },
}

func (h *openAIHandler) parse(r *http.Request) (*openAIRequest, error) {
	var req openAIRequest
	if _, err := h.decodeBody(r, readParams, harmlessParams, &req); err != nil {
		return nil, err
	}
	switch {
	case req.MaxTokens != nil && req.MaxCompletionTokens != nil && *req.MaxTokens != *req.MaxCompletionTokens:
		return nil, apierr.InvalidArgument("max_tokens", "conflicts with max_completion_tokens; give one")
	case req.N != nil && (*req.N < 1 || *req.N > chat.MaxChoices):
		return nil, apierr.InvalidArgument("n", fmt.Sprintf("must be 1 to %d", chat.MaxChoices))
	}
	return &req, nil
}

// openAIFieldNames turns the core's field paths into the ones the caller
// sent.
var openAIFieldNames = []struct {
	re   *regexp.Regexp
	repl string
}{

	{regexp.MustCompile(`^tools\[(\d+)\]\.(name|description|parameters)$`), "tools[$1].function.$2"},
	{regexp.MustCompile(`^response_format\.(name|schema)$`), "response_format.json_schema.$1"},
	{regexp.MustCompile(`^messages\[(\d+)\]\.parts\[\d+\]\.(id|name|arguments)$`), "messages[$1].tool_calls"},
	{regexp.MustCompile(`^messages\[(\d+)\]\.parts\[\d+\]\.tool_call_id$`), "messages[$1].tool_call_id"},
	{regexp.MustCompile(`^messages\[(\d+)\]\.parts\[(\d+)\]`), "messages[$1].content[$2]"},
}

// toChat maps the OpenAI request onto the core's request.
func (req *openAIRequest) toChat(inline *attach.Checker) (chat.Request, error) {
	cr := chat.Request{Request: llm.Request{Model: req.Model, Temperature: req.Temperature, TopP: req.TopP, Seed: req.Seed,
		ParallelToolCalls: req.ParallelToolCalls}, User: req.User}
	maxName := "max_tokens"
	switch {
	case req.MaxCompletionTokens != nil:
		maxName = "max_completion_tokens"
		cr.MaxOutputTokens = *req.MaxCompletionTokens
		if cr.MaxOutputTokens <= 0 {
			return cr, apierr.InvalidArgument("max_completion_tokens", "must be positive")
		}
	case req.MaxTokens != nil:
		cr.MaxOutputTokens = *req.MaxTokens
		if cr.MaxOutputTokens <= 0 {
			return cr, apierr.InvalidArgument("max_tokens", "must be positive")
		}
	}
	cr.Rename = func(field string) string {
		if field == "max_output_tokens" {
			return maxName
		}
		for _, f := range openAIFieldNames {
			if f.re.MatchString(field) {
				return f.re.ReplaceAllString(field, f.repl)
			}
		}
		return field
	}
	if req.N != nil {
		cr.N = *req.N
	}
	if req.ReasoningEffort != nil {
		cr.ReasoningEffort = *req.ReasoningEffort
	}
	if req.Logprobs != nil {
		cr.Logprobs = *req.Logprobs
	}
	if req.TopLogprobs != nil {
		cr.TopLogprobs = *req.TopLogprobs
	}
	if len(req.Stop) > 0 && string(req.Stop) != "null" {
		var one string
		if err := json.Unmarshal(req.Stop, &one); err == nil {
			cr.Stop = []string{one}
		} else if err := json.Unmarshal(req.Stop, &cr.Stop); err != nil {
			return cr, apierr.InvalidArgument("stop", "must be a string or an array of strings")
		}
	}
	if err := req.tools(&cr); err != nil {
		return cr, err
	}
	if len(req.Messages) == 0 {
		return cr, apierr.InvalidArgument("messages", "must not be empty")
	}
	for i, m := range req.Messages {
		cm, err := m.toChat(fmt.Sprintf("messages[%d]", i), inline, &cr, i)
		if err != nil {
			return cr, err
		}
		cr.Messages = append(cr.Messages, cm)
	}
	return cr, nil
}

// tools maps tools, tool_choice and response_format.
func (req *openAIRequest) tools(cr *chat.Request) error {
	for i, t := range req.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return apierr.InvalidArgument(field+".type", fmt.Sprintf("%q is not supported; use function", t.Type))
		}
		if t.Function == nil {
			return apierr.InvalidArgument(field+".function", "is required")
		}
		tool := llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Strict: t.Function.Strict != nil && *t.Function.Strict}
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && string(p) != "null" {
			tool.Parameters = p
		}
		cr.Tools = append(cr.Tools, tool)
	}
	if tc := bytes.TrimSpace(req.ToolChoice); len(tc) > 0 && string(tc) != "null" {
		var mode string
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(tc, &mode) == nil:
			switch mode {
			case "auto":
			case "none", "required":
				cr.ToolChoice.Mode = llm.ToolChoiceMode(mode)
			default:
				return apierr.InvalidArgument("tool_choice", fmt.Sprintf("%q is not auto, none or required", mode))
			}
		case json.Unmarshal(tc, &named) == nil && named.Type == "function" && named.Function.Name != "":
			cr.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceFunction, Function: named.Function.Name}
		default:
			return apierr.InvalidArgument("tool_choice", `must be "auto", "none", "required" or {"type":"function","function":{"name":...}}`)
		}
		if cr.ToolChoice.Mode == llm.ToolChoiceRequired && len(cr.Tools) == 0 {
			return apierr.InvalidArgument("tool_choice", "required needs tools")
		}
	}
	if f := req.ResponseFormat; f != nil {
		switch f.Type {
		case "text", "":
		case "json_object":
			cr.ResponseFormat.Type = llm.FormatJSONObject
		case "json_schema":
			if f.JSONSchema == nil {
				return apierr.InvalidArgument("response_format.json_schema", "is required with type json_schema")
			}
			cr.ResponseFormat = llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: f.JSONSchema.Name,
				Schema: bytes.TrimSpace(f.JSONSchema.Schema), Strict: f.JSONSchema.Strict != nil && *f.JSONSchema.Strict}
		default:
			return apierr.InvalidArgument("response_format.type", fmt.Sprintf("%q is not text, json_object or json_schema", f.Type))
		}
	}
	return nil
}

// toChat maps one message, message i of cr: system, developer (as system),
// user, assistant (text and/or tool calls) or tool (a tool result). Images
// are deferred (cr.Defer): decoded only once the request is admitted.
func (m *openAIMessage) toChat(field string, inline *attach.Checker, cr *chat.Request, i int) (llm.ChatMessage, error) {
	cm := llm.ChatMessage{Role: m.Role}
	switch m.Role {
	case "system", "user", "assistant":
	case "developer":
		cm.Role = "system"
	case "tool":
		if m.ToolCallID == "" {
			return cm, apierr.InvalidArgument(field+".tool_call_id", "is required in a tool message")
		}
		text, err := textParts(field+".content", m.Content, "text", "a tool message")
		if err != nil {
			return cm, err
		}
		cm.Parts = []llm.Part{{ToolResult: &llm.ToolResult{ToolCallID: m.ToolCallID, Content: text}}}
		return cm, nil
	default:
		return cm, apierr.InvalidArgument(field+".role", fmt.Sprintf("%q is not supported; use system, developer, user, assistant or tool", m.Role))
	}
	if len(m.ToolCalls) > 0 && m.Role != "assistant" {
		return cm, apierr.InvalidArgument(field+".tool_calls", "only assistant messages have tool calls")
	}
	null := len(m.Content) == 0 || string(m.Content) == "null"
	var text string
	var parts []openAIContentPart
	switch {
	case null && len(m.ToolCalls) > 0:
	case null:
		return cm, apierr.InvalidArgument(field+".content", "is required")
	case json.Unmarshal(m.Content, &text) == nil:
		if text == "" && len(m.ToolCalls) == 0 {
			return cm, apierr.InvalidArgument(field+".content", "must not be empty")
		}
		if text != "" {
			cm.Parts = []llm.Part{{Text: text}}
		}
	case json.Unmarshal(m.Content, &parts) == nil:
		if len(parts) == 0 && len(m.ToolCalls) == 0 {
			return cm, apierr.InvalidArgument(field+".content", "must not be empty")
		}
		for j, p := range parts {
			pf := fmt.Sprintf("%s.content[%d]", field, j)
			switch p.Type {
			case "text":
				cm.Parts = append(cm.Parts, llm.Part{Text: p.Text})
			case "image_url":
				if p.ImageURL == nil {
					return cm, apierr.InvalidArgument(pf+".image_url", "is required")
				}
				payload, mime, err := splitDataURL(p.ImageURL.URL)
				if err != nil {
					return cm, apierr.InvalidArgument(pf+".image_url.url", err.Error())
				}
				cm.Parts = append(cm.Parts, cr.Defer(i, len(cm.Parts), chat.Deferred{
					Field: pf + ".image_url", Kind: attach.KindImage, DataURL: payload, MIME: mime}))
			default:
				return cm, apierr.InvalidArgument(pf+".type", fmt.Sprintf("%q is not supported; use text or image_url", p.Type))
			}
		}
	default:
		return cm, apierr.InvalidArgument(field+".content", "must be a string or an array of content parts")
	}
	for j, c := range m.ToolCalls {
		cf := fmt.Sprintf("%s.tool_calls[%d]", field, j)
		if c.Type != "" && c.Type != "function" {
			return cm, apierr.InvalidArgument(cf+".type", fmt.Sprintf("%q is not supported; use function", c.Type))
		}
		if c.ID == "" {
			return cm, apierr.InvalidArgument(cf+".id", "is required")
		}
		cm.Parts = append(cm.Parts, llm.Part{ToolCall: &llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments}})
	}
	return cm, nil
}

// textParts reads content that is a string, or an array of parts of type
// partType whose texts are joined (a tool message's content, a Responses
// function_call_output); holder names what holds it in errors.
func textParts(field string, content json.RawMessage, partType, holder string) (string, error) {
	var text string
	if json.Unmarshal(content, &text) == nil {
		return text, nil
	}
	var parts []struct{ Type, Text string }
	if json.Unmarshal(content, &parts) != nil {
		return "", apierr.InvalidArgument(field, fmt.Sprintf("must be a string or an array of %s parts", partType))
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != partType {
			return "", apierr.InvalidArgument(fmt.Sprintf("%s[%d].type", field, j), fmt.Sprintf("%s holds %s parts only", holder, partType))
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// parseDataURL decodes a base64 data URL; remote URLs are not fetched.
func parseDataURL(u string) ([]byte, string, error) {
	payload, mime, err := splitDataURL(u)
	if err != nil {
		return nil, "", err
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, "", errors.New("is not valid base64")
	}
	return data, mime, nil
}

// splitDataURL checks the form of a base64 data URL and returns its
// payload, still encoded, and its MIME type.
func splitDataURL(u string) (payload, mime string, err error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", errors.New("must be a data: URL (remote images are not fetched)")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	mime, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isB64 {
		return "", "", errors.New("must be a base64 data URL")
	}
	return payload, mime, nil
}
