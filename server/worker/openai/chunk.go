package openai

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/server/compat/openaiwire"
)

// chunkParser decodes the upstream's chunks. Nearly every chunk of a
// stream is one shape — {"id":…,"object":…,"created":…,"model":…,
// "choices":[{"index":0,"delta":{"content":"…"},"logprobs":null,
// "finish_reason":null}]} — and a general JSON decode of each costs more
// than the rest of the worker's per-token work, so that shape is read by
// a small scanner into storage reused from chunk to chunk. Anything else
// (tool calls, log probabilities, usage, escapes it does not take, keys it
// does not know the meaning of) goes to encoding/json, so the result is
// always what json.Unmarshal gives for the fields the engine reads
// (chunk_test.go checks both agree).
type chunkParser struct {
	chunk   openaiwire.ChatCompletionChunk
	deltas  []openaiwire.Delta
	finish  []string
	choices []openaiwire.Choice
	// scan reads the chunk at hand; kept here, as the callbacks it is
	// handed to would otherwise move it to the heap for every chunk.
	scan scanner
}

// parse decodes data. The chunk it returns is valid until the next call.
func (p *chunkParser) parse(data []byte) (*openaiwire.ChatCompletionChunk, error) {
	if p.fast(data) {
		return &p.chunk, nil
	}
	var c openaiwire.ChatCompletionChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// fast reads data when it is of the common shape, reporting whether it
// was.
func (p *chunkParser) fast(data []byte) bool {
	p.scan = scanner{b: data}
	s := &p.scan
	p.chunk = openaiwire.ChatCompletionChunk{}
	p.choices, p.deltas, p.finish = p.choices[:0], p.deltas[:0], p.finish[:0]
	sawChoices := false
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "id", "object", "model", "system_fingerprint":
			// Not read by the engine, but of a type encoding/json checks.
			return s.null() || s.skipStr()
		case "created":
			if s.null() {
				return true
			}
			_, ok := s.int()
			return ok
		case "choices":
			if sawChoices {
				return false
			}
			sawChoices = true
			return s.array(p.choice)
		}
		return !knownKey(key, chunkKeys) && s.skip()
	})
	if !ok || !s.end() {
		return false
	}
	// The deltas and finish reasons are stored apart: point at them now
	// that the slices no longer grow.
	for i, d, f := 0, 0, 0; i < len(p.choices); i++ {
		if p.choices[i].Delta != nil {
			p.choices[i].Delta = &p.deltas[d]
			d++
		}
		if p.choices[i].FinishReason != nil {
			p.choices[i].FinishReason = &p.finish[f]
			f++
		}
	}
	p.chunk.Choices = p.choices
	return true
}

// Keys encoding/json would match case-insensitively to a field: one of
// these spelled another way is left to it.
var (
	chunkKeys  = []string{"id", "object", "created", "model", "system_fingerprint", "choices", "usage"}
	choiceKeys = []string{"index", "delta", "message", "logprobs", "finish_reason"}
	deltaKeys  = []string{"role", "content", "reasoning_content", "reasoning", "refusal", "tool_calls"}
)

func knownKey(key []byte, keys []string) bool {
	for _, k := range keys {
		if strings.EqualFold(string(key), k) {
			return true
		}
	}
	return false
}

// choice reads one element of "choices".
func (p *chunkParser) choice(s *scanner) bool {
	var ch openaiwire.Choice
	var seen [2]bool // delta, finish_reason
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			n, ok := s.int()
			ch.Index = n
			return ok
		case "delta":
			if seen[0] {
				return false
			}
			seen[0] = true
			if s.null() {
				return true
			}
			var d openaiwire.Delta
			if !p.delta(s, &d) {
				return false
			}
			p.deltas = append(p.deltas, d)
			ch.Delta = &p.deltas[len(p.deltas)-1]
			return true
		case "logprobs":
			return s.null() // log probabilities: encoding/json's
		case "finish_reason":
			if seen[1] {
				return false
			}
			seen[1] = true
			if s.null() {
				return true
			}
			v, ok := s.str()
			if !ok {
				return false
			}
			p.finish = append(p.finish, v)
			ch.FinishReason = &p.finish[len(p.finish)-1]
			return true
		case "stop_reason", "matched_stop", "text_offset":
			return s.skip()
		}
		return !knownKey(key, choiceKeys) && s.skip()
	})
	if ok {
		p.choices = append(p.choices, ch)
	}
	return ok
}

// delta reads a choice's "delta" object.
func (p *chunkParser) delta(s *scanner, d *openaiwire.Delta) bool {
	var seen [5]bool
	return s.object(func(key []byte) bool {
		var dst *string
		var i int
		switch string(key) {
		case "role":
			dst, i = &d.Role, 0
		case "content":
			dst, i = &d.Content, 1
		case "reasoning_content":
			dst, i = &d.ReasoningContent, 2
		case "refusal":
			dst, i = &d.Refusal, 3
		case "reasoning":
			dst, i = &d.Reasoning, 4
		default:
			return !knownKey(key, deltaKeys) && s.skip() // tool_calls: encoding/json's
		}
		if seen[i] {
			return false
		}
		seen[i] = true
		if s.null() {
			return true
		}
		v, ok := s.str()
		*dst = v
		return ok
	})
}

// scanner reads JSON values from b. Every method reports false on input
// it does not take, whether malformed or merely unusual; the caller then
// leaves the whole chunk to encoding/json.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// object reads an object, calling field with each key positioned at its
// value.
func (s *scanner) object(field func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		start := s.i + 1
		if !s.skipString() {
			return false
		}
		key := s.b[start : s.i-1]
		if strings.IndexByte(string(key), '\\') >= 0 || s.peek() != ':' {
			return false
		}
		s.i++
		if !field(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling elem with each element.
func (s *scanner) array(elem func(*scanner) bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !elem(s) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// null reads a null, if that is what comes next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string: plain UTF-8 as it is, one with escapes through
// encoding/json.
func (s *scanner) str() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	start := s.i
	if !s.skipString() {
		return "", false
	}
	raw := s.b[start+1 : s.i-1]
	for _, c := range raw {
		if c == '\\' {
			var v string
			if json.Unmarshal(s.b[start:s.i], &v) != nil {
				return "", false
			}
			return v, true
		}
	}
	if !utf8.Valid(raw) {
		return "", false // encoding/json replaces the bad bytes
	}
	return string(raw), true
}

// skipStr moves past a string, checking it as encoding/json would.
func (s *scanner) skipStr() bool {
	if s.peek() != '"' {
		return false
	}
	start := s.i
	if !s.skipString() {
		return false
	}
	return strings.IndexByte(string(s.b[start:s.i]), '\\') < 0 || json.Valid(s.b[start:s.i])
}

// int reads a small non-negative integer (no fraction or exponent).
func (s *scanner) int() (int, bool) {
	s.ws()
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == start || s.i-start > 18 || (s.b[start] == '0' && s.i-start > 1) || (s.i < len(s.b) && strings.IndexByte(".eE-+", s.b[s.i]) >= 0) {
		return 0, false
	}
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	return n, err == nil
}

// skipString moves past the string starting at s.i (its opening quote).
func (s *scanner) skipString() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '\\':
			j++
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		}
	}
	return false
}

// skip moves past one value of any kind: the values skipped are ones the
// engine does not read, but they must still be JSON, as encoding/json
// would insist.
func (s *scanner) skip() bool {
	s.ws()
	start := s.i
	plain, ok := s.skipValue()
	return ok && (plain || json.Valid(s.b[start:s.i]))
}

// skipValue moves past one value, checking only its brackets, strings and
// scalars; plain reports a string without escapes or a scalar, which need
// no further check.
func (s *scanner) skipValue() (plain, ok bool) {
	depth := 0
	plain = true
	for {
		switch c := s.peek(); c {
		case '"':
			start := s.i
			if !s.skipString() {
				return false, false
			}
			if strings.IndexByte(string(s.b[start:s.i]), '\\') >= 0 {
				plain = false
			}
		case '{', '[':
			depth++
			plain = false
			s.i++
		case '}', ']':
			if depth == 0 {
				return false, false
			}
			depth--
			s.i++
		case ',', ':':
			if depth == 0 {
				return false, false
			}
			s.i++
		case 0:
			return false, false
		default: // a number, true, false or null
			start := s.i
			for s.i < len(s.b) && !strings.ContainsRune(" \t\r\n,:]}[{\"", rune(s.b[s.i])) {
				s.i++
			}
			if !scalar(s.b[start:s.i]) {
				return false, false
			}
		}
		if depth == 0 {
			return plain, true
		}
	}
}

// scalar reports whether b is a JSON number, true, false or null.
func scalar(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	digits := len(b) > 0 && len(b) < 19 && (b[0] != '0' || len(b) == 1)
	for _, c := range b {
		digits = digits && c >= '0' && c <= '9'
	}
	return digits || (len(b) > 0 && json.Valid(b))
}
