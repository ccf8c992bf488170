package chat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/schemabudget"
)

// Bounds on the API channel's generation options.
const (
	// MaxTools bounds the tools one request may offer (OpenAI's own limit).
	MaxTools = 128
	// MaxSchemaBytes bounds one tool's parameters or a response schema.
	MaxSchemaBytes = 64 << 10
	// MaxChoices bounds n.
	MaxChoices = 8
	// MaxTopLogprobs bounds top_logprobs.
	MaxTopLogprobs = 20
)

// namePattern is what a tool's or a response schema's name may be.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validateOptions checks the request's tools, tool choice, response format,
// n and logprobs, naming the field at fault as the caller spelled it. Each
// schema must fit a completion of maxOut tokens (see schemabudget).
func validateOptions(req *Request, maxOut int64) error {
	if len(req.Tools) > MaxTools {
		return apierr.InvalidArgument("tools", fmt.Sprintf("%d tools; at most %d", len(req.Tools), MaxTools))
	}
	names := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		switch {
		case !namePattern.MatchString(t.Name):
			return apierr.InvalidArgument(field+".name", "must be 1 to 64 of a-z, A-Z, 0-9, _ and -")
		case names[t.Name]:
			return apierr.InvalidArgument(field+".name", fmt.Sprintf("%q is offered twice", t.Name))
		case !utf8.ValidString(t.Description):
			return apierr.InvalidArgument(field+".description", "is not valid UTF-8")
		}
		names[t.Name] = true
		if err := validateSchema(field+".parameters", t.Parameters, maxOut); err != nil {
			return err
		}
	}
	switch tc := req.ToolChoice; tc.Mode {
	case llm.ToolChoiceAuto, llm.ToolChoiceNone:
	case llm.ToolChoiceRequired:
		if len(req.Tools) == 0 {
			return apierr.InvalidArgument("tool_choice", "required needs tools")
		}
	case llm.ToolChoiceFunction:
		if !names[tc.Function] {
			return apierr.InvalidArgument("tool_choice", fmt.Sprintf("names %q, which is not one of the tools", tc.Function))
		}
	default:
		return apierr.InvalidArgument("tool_choice", fmt.Sprintf("%q is not auto, none, required or a function", tc.Mode))
	}
	switch f := req.ResponseFormat; f.Type {
	case llm.FormatText, llm.FormatJSONObject:
	case llm.FormatJSONSchema:
		if !namePattern.MatchString(f.Name) {
			return apierr.InvalidArgument("response_format.name", "must be 1 to 64 of a-z, A-Z, 0-9, _ and -")
		}
		if len(f.Schema) == 0 {
			return apierr.InvalidArgument("response_format.schema", "is required")
		}
		if err := validateSchema("response_format.schema", f.Schema, maxOut); err != nil {
			return err
		}
	default:
		return apierr.InvalidArgument("response_format.type", fmt.Sprintf("%q is not text, json_object or json_schema", f.Type))
	}
	if req.N < 0 || req.N > MaxChoices {
		return apierr.InvalidArgument("n", fmt.Sprintf("must be 1 to %d", MaxChoices))
	}
	switch {
	case req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs:
		return apierr.InvalidArgument("top_logprobs", fmt.Sprintf("must be 0 to %d", MaxTopLogprobs))
	case req.TopLogprobs > 0 && !req.Logprobs:
		return apierr.InvalidArgument("top_logprobs", "needs logprobs")
	}
	return nil
}

// reasoningEfforts are the reasoning efforts a request may ask for.
var reasoningEfforts = []string{"", "none", "minimal", "low", "medium", "high", "xhigh"}

// checkCapabilities refuses what the model cannot do: tools for a model
// without CapTools, a JSON response format for one without
// CapStructuredOutput. A reasoning effort is a hint, accepted for any model
// (Complete passes it on only to models that reason).
func checkCapabilities(req *Request, m *models.Model) error {
	switch {
	case len(req.Tools) > 0 && !m.Can(models.CapTools):
		return apierr.InvalidArgument("tools", m.ID+" does not call tools (its catalog entry's capabilities do not include tools)")
	case req.ResponseFormat.Type != llm.FormatText && !m.Can(models.CapStructuredOutput):
		return apierr.InvalidArgument("response_format", m.ID+" does not answer in JSON (its catalog entry's capabilities do not include structured_output)")
	case !slices.Contains(reasoningEfforts, req.ReasoningEffort):
		return apierr.InvalidArgument("reasoning_effort", fmt.Sprintf("%q is not none, minimal, low, medium, high or xhigh", req.ReasoningEffort))
	}
	return nil
}

// validateSchema checks that a JSON Schema is a JSON object within bounds:
// its size in bytes, then the budgets of docs/schema-budget.md for a
// completion of maxOut tokens, naming the keyword at fault by its path under
// field. Whether the engine can follow it is the engine's to say.
func validateSchema(field string, schema []byte, maxOut int64) error {
	if len(schema) == 0 {
		return nil
	}
	if len(schema) > MaxSchemaBytes {
		return apierr.InvalidArgument(field, fmt.Sprintf("is %d bytes as JSON; at most %d", len(schema), MaxSchemaBytes))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil {
		return apierr.InvalidArgument(field, "must be a JSON Schema object")
	}
	if v := schemabudget.Check(schema, maxOut); v != nil {
		return apierr.InvalidArgument(schemaField(field, v.Path), v.Reason)
	}
	return nil
}

// schemaField is the path of a keyword inside the schema at field.
func schemaField(field, path string) string {
	if path == "" || path[0] == '[' {
		return field + path
	}
	return field + "." + path
}

// schemaFieldBase splits the path of a keyword inside a request's schema
// into the schema's own field (e.g. tools[0].parameters) and the rest, so a
// surface renames the first and keeps the rest as the caller wrote it.
var schemaFieldBase = regexp.MustCompile(`^(response_format\.schema|tools\[\d+\]\.parameters)([.\[].*)$`)

// validateCall checks a tool call the caller sends back in the history.
func validateCall(field string, c *llm.ToolCall) error {
	switch {
	case c.ID == "" || len(c.ID) > 256:
		return apierr.InvalidArgument(field+".id", "must be 1 to 256 bytes")
	case !namePattern.MatchString(c.Name):
		return apierr.InvalidArgument(field+".name", "must be 1 to 64 of a-z, A-Z, 0-9, _ and -")
	case !utf8.ValidString(c.Arguments):
		return apierr.InvalidArgument(field+".arguments", "is not valid UTF-8")
	}
	return nil
}
