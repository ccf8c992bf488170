package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"unicode"

	"github.com/parleyhq/parley/server/llm"
)

// This file is the simulated model's behaviour with tools and structured
// output. It is deterministic and honest about being a simulation: it calls a
// tool when told to (tool_choice required or a named function) or, in auto
// mode, when the last user message names the tool — with the arguments
// written after the name as a JSON object ("Read {"file_path": "/a.txt"}"),
// else arguments generated from the tool's schema; it answers a tool's result
// by quoting it; and its JSON is generated from the schema and checked
// against it by a real validator.

// answer is what one choice of a simulated completion will be: text, or tool
// calls.
type answer struct {
	text  string
	calls []llm.ToolCall
}

// compose decides choice's answer to req; it stops when ctx ends.
func (e *Engine) compose(ctx context.Context, req llm.Request, rng *rand.Rand) (answer, error) {
	if calls, err := e.toolCalls(ctx, req, rng); err != nil || len(calls) > 0 {
		return answer{calls: calls}, err
	}
	var b strings.Builder
	if results := trailingResults(req.Messages); len(results) > 0 {
		b.WriteString("(Simulated answer.) ")
		for _, r := range results {
			fmt.Fprintf(&b, "The %s tool returned: %s. ", r.name, r.content)
		}
		b.WriteString(corpusChain().write(rng, 10+rng.IntN(30)))
	} else {
		b.WriteString(corpusChain().write(rng, 20+rng.IntN(160)))
	}
	prose := b.String()
	switch req.ResponseFormat.Type {
	case llm.FormatJSONObject:
		doc, _ := json.Marshal(map[string]string{"answer": prose})
		return answer{text: string(doc)}, nil
	case llm.FormatJSONSchema:
		doc, err := SchemaValueContext(ctx, req.ResponseFormat.Schema, rng, wordsFrom(rng))
		if err != nil {
			return answer{}, fmt.Errorf("%w: response_format.json_schema.schema: %v", llm.ErrInvalidRequest, err)
		}
		return answer{text: doc}, nil
	}
	return answer{text: prose}, nil
}

// toolCalls returns the calls the simulated model makes, if any.
func (e *Engine) toolCalls(ctx context.Context, req llm.Request, rng *rand.Rand) ([]llm.ToolCall, error) {
	if len(req.Tools) == 0 || req.ToolChoice.Mode == llm.ToolChoiceNone {
		return nil, nil
	}
	var chosen []llm.Tool
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceFunction:
		for _, t := range req.Tools {
			if t.Name == req.ToolChoice.Function {
				chosen = append(chosen, t)
			}
		}
		if len(chosen) == 0 {
			return nil, fmt.Errorf("%w: tool_choice: no tool is named %q", llm.ErrInvalidRequest, req.ToolChoice.Function)
		}
	case llm.ToolChoiceRequired:
		if chosen = namedTools(req); len(chosen) == 0 {
			chosen = req.Tools[:1]
		}
	default:
		if last := lastTurn(req.Messages); last < 0 || req.Messages[last].Role != "user" {
			return nil, nil // after tool results: answer them
		}
		chosen = namedTools(req)
	}
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls && len(chosen) > 1 {
		chosen = chosen[:1]
	}
	calls := make([]llm.ToolCall, 0, len(chosen))
	said := lastUserText(req)
	for _, t := range chosen {
		if args := argsAfter(said, t.Name); args != "" {
			calls = append(calls, llm.ToolCall{ID: callID(rng), Name: t.Name, Arguments: args})
			continue
		}
		args, err := SchemaValueContext(ctx, t.Parameters, rng, wordsFrom(rng))
		if err != nil {
			return nil, fmt.Errorf("%w: tools[%s].parameters: %v", llm.ErrInvalidRequest, t.Name, err)
		}
		calls = append(calls, llm.ToolCall{ID: callID(rng), Name: t.Name, Arguments: args})
	}
	return calls, nil
}

// lastUserText is the text of the last user message.
func lastUserText(req llm.Request) string {
	var text strings.Builder
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "user" {
			for _, p := range m.Parts {
				text.WriteString(p.Text)
				text.WriteByte(' ')
			}
			break
		}
	}
	return text.String()
}

// argsAfter returns the JSON object written right after the first mention
// of name in said (spaces between), compacted, or "" when there is none.
func argsAfter(said, name string) string {
	for rest := said; ; {
		i := strings.Index(rest, name)
		if i < 0 {
			return ""
		}
		rest = rest[i+len(name):]
		after := strings.TrimLeft(rest, " \t")
		if !strings.HasPrefix(after, "{") {
			continue
		}
		var obj map[string]json.RawMessage
		dec := json.NewDecoder(strings.NewReader(after))
		if dec.Decode(&obj) != nil {
			continue
		}
		out, err := json.Marshal(obj)
		if err != nil {
			return ""
		}
		return string(out)
	}
}

// namedTools are the tools whose names the last user message mentions, in
// the order of the request's tools.
func namedTools(req llm.Request) []llm.Tool {
	said := lastUserText(req)
	var out []llm.Tool
	for _, t := range req.Tools {
		if t.Name != "" && strings.Contains(said, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// result is a tool's answer to one call.
type result struct{ name, content string }

// lastTurn is the index of the last message that is not a system message
// (system messages, such as an environment Claude Code sends after the
// user's, are context, not a turn), or -1.
func lastTurn(msgs []llm.ChatMessage) int {
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == "system" {
		i--
	}
	return i
}

// trailingResults are the tool results after the last assistant message,
// with the names of the calls they answer.
func trailingResults(msgs []llm.ChatMessage) []result {
	msgs = msgs[:lastTurn(msgs)+1]
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == "tool" {
		start--
	}
	if start == len(msgs) {
		return nil
	}
	names := map[string]string{}
	if start > 0 {
		for _, p := range msgs[start-1].Parts {
			if p.ToolCall != nil {
				names[p.ToolCall.ID] = p.ToolCall.Name
			}
		}
	}
	var out []result
	for _, m := range msgs[start:] {
		for _, p := range m.Parts {
			if p.ToolResult != nil {
				name := names[p.ToolResult.ToolCallID]
				if name == "" {
					name = "called"
				}
				out = append(out, result{name: name, content: p.ToolResult.Content})
			} else if p.Text != "" {
				out = append(out, result{name: "called", content: p.Text})
			}
		}
	}
	return out
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// callID is an OpenAI-style tool call id, deterministic in rng.
func callID(rng *rand.Rand) string {
	b := []byte("call_")
	for range 24 {
		b = append(b, idAlphabet[rng.IntN(len(idAlphabet))])
	}
	return string(b)
}

// corpusWords are the corpus's words without punctuation, for strings in
// generated JSON.
var corpusWords = sync.OnceValue(func() []string {
	var out []string
	for _, w := range strings.Fields(corpus) {
		w = strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) })
		if len(w) > 2 && strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) || r > unicode.MaxASCII }) < 0 {
			out = append(out, strings.ToLower(w))
		}
	}
	return out
})

// wordsFrom returns a source of n corpus words joined by spaces, drawn from
// rng.
func wordsFrom(rng *rand.Rand) func(n int) string {
	return func(n int) string {
		all := corpusWords()
		out := make([]string, max(n, 1))
		for i := range out {
			out[i] = all[rng.IntN(len(all))]
		}
		return strings.Join(out, " ")
	}
}
