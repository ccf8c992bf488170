package chat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/worker"
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
// n and logprobs, naming the field at fault as the caller spelled it.
func validateOptions(req *Request) error {
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
		if err := validateSchema(field+".parameters", t.Parameters); err != nil {
			return err
		}
	}
	switch tc := req.ToolChoice; tc.Mode {
	case worker.ToolChoiceAuto, worker.ToolChoiceNone:
	case worker.ToolChoiceRequired:
		if len(req.Tools) == 0 {
			return apierr.InvalidArgument("tool_choice", "required needs tools")
		}
	case worker.ToolChoiceFunction:
		if !names[tc.Function] {
			return apierr.InvalidArgument("tool_choice", fmt.Sprintf("names %q, which is not one of the tools", tc.Function))
		}
	default:
		return apierr.InvalidArgument("tool_choice", fmt.Sprintf("%q is not auto, none, required or a function", tc.Mode))
	}
	switch f := req.ResponseFormat; f.Type {
	case worker.FormatText, worker.FormatJSONObject:
	case worker.FormatJSONSchema:
		if !namePattern.MatchString(f.Name) {
			return apierr.InvalidArgument("response_format.name", "must be 1 to 64 of a-z, A-Z, 0-9, _ and -")
		}
		if len(f.Schema) == 0 {
			return apierr.InvalidArgument("response_format.schema", "is required")
		}
		if err := validateSchema("response_format.schema", f.Schema); err != nil {
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

// validateSchema checks that a JSON Schema is a JSON object within bounds.
// Whether the engine can follow it is the engine's to say.
func validateSchema(field string, schema []byte) error {
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
	return nil
}

// validateCall checks a tool call the caller sends back in the history.
func validateCall(field string, c *worker.ToolCall) error {
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
