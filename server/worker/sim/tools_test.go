package sim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/llm"
)

var weather = llm.Tool{Name: "get_weather", Description: "Current weather in a city", Parameters: []byte(`{
	"type": "object",
	"properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
	"required": ["location", "unit"], "additionalProperties": false}`)}

var clock = llm.Tool{Name: "get_time", Description: "Local time in a city", Parameters: []byte(`{
	"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`)}

// collected is one choice put back together from deltas.
type collected struct {
	text   strings.Builder
	calls  []llm.ToolCall
	tokens int
	finish llm.FinishReason
	lps    []llm.TokenLogprob
}

func run(t *testing.T, req llm.Request) (llm.Result, []*collected) {
	t.Helper()
	e := New(Config{TimeScale: 0})
	var choices []*collected
	res, err := e.Generate(t.Context(), &req, func(d llm.Delta) error {
		for len(choices) <= d.Choice {
			choices = append(choices, &collected{})
		}
		c := choices[d.Choice]
		c.text.WriteString(d.Text)
		c.tokens += d.Tokens
		c.lps = append(c.lps, d.Logprobs...)
		if d.Finish != "" {
			c.finish = d.Finish
		}
		for _, tc := range d.ToolCalls {
			for len(c.calls) <= tc.Index {
				c.calls = append(c.calls, llm.ToolCall{})
			}
			call := &c.calls[tc.Index]
			if tc.ID != "" {
				call.ID, call.Name = tc.ID, tc.Name
			}
			call.Arguments += tc.Arguments
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, choices
}

func ask(text string, tools ...llm.Tool) llm.Request {
	r := userRequest("sim-small", text, 1)
	r.Tools = tools
	return r
}

func TestToolCallsFollowTheChoiceAndTheSchema(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   llm.Request
		calls []string
	}{
		{"required calls the first tool", func() llm.Request {
			r := ask("Hello there", weather, clock)
			r.ToolChoice.Mode = llm.ToolChoiceRequired
			return r
		}(), []string{"get_weather"}},
		{"a named function", func() llm.Request {
			r := ask("Hello there", weather, clock)
			r.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceFunction, Function: "get_time"}
			return r
		}(), []string{"get_time"}},
		{"auto calls the tools the user names, in parallel", ask("Use get_time and get_weather for Paris", weather, clock), []string{"get_weather", "get_time"}},
		{"auto with no tool named answers", ask("Tell me a story", weather, clock), nil},
		{"parallel off makes one call", func() llm.Request {
			r := ask("Use get_time and get_weather", weather, clock)
			off := false
			r.ParallelToolCalls = &off
			return r
		}(), []string{"get_weather"}},
		{"none never calls", func() llm.Request {
			r := ask("Use get_weather", weather)
			r.ToolChoice.Mode = llm.ToolChoiceNone
			return r
		}(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, choices := run(t, tc.req)
			c := choices[0]
			if len(tc.calls) == 0 {
				if res.FinishReason != llm.FinishStop || c.text.Len() == 0 || len(c.calls) != 0 {
					t.Fatalf("finish %s, text %q, calls %v: want a text answer", res.FinishReason, c.text.String(), c.calls)
				}
				return
			}
			if res.FinishReason != llm.FinishToolCalls || c.text.Len() != 0 || len(c.calls) != len(tc.calls) {
				t.Fatalf("finish %s, text %q, calls %+v: want calls %v", res.FinishReason, c.text.String(), c.calls, tc.calls)
			}
			for i, call := range c.calls {
				tool := map[string]llm.Tool{"get_weather": weather, "get_time": clock}[call.Name]
				if call.Name != tc.calls[i] || !strings.HasPrefix(call.ID, "call_") {
					t.Fatalf("call %d is %+v, want %s", i, call, tc.calls[i])
				}
				if err := ValidateJSON(tool.Parameters, call.Arguments); err != nil {
					t.Fatalf("arguments %s do not fit the schema: %v", call.Arguments, err)
				}
			}
			if res.Usage.CompletionTokens != c.tokens || c.tokens == 0 {
				t.Fatalf("usage %d completion tokens, streamed %d", res.Usage.CompletionTokens, c.tokens)
			}
		})
	}
}

func TestToolResultsAreAnsweredInText(t *testing.T) {
	r := ask("What is the weather in Paris? use get_weather", weather)
	_, first := run(t, r)
	call := first[0].calls[0]
	r.Messages = append(r.Messages,
		llm.ChatMessage{Role: "assistant", Parts: []llm.Part{{ToolCall: &call}}},
		llm.ChatMessage{Role: "tool", Parts: []llm.Part{{ToolResult: &llm.ToolResult{ToolCallID: call.ID, Content: `{"temp": 21}`}}}})
	res, second := run(t, r)
	text := second[0].text.String()
	if res.FinishReason != llm.FinishStop || !strings.Contains(text, `The get_weather tool returned: {"temp": 21}`) {
		t.Fatalf("finish %s, text %q: want an answer quoting the result", res.FinishReason, text)
	}
	// Tool definitions and the call and result are part of the prompt.
	plain, _ := run(t, userRequest("sim-small", "What is the weather in Paris? use get_weather", 1))
	if res.Usage.PromptTokens <= plain.Usage.PromptTokens+20 {
		t.Fatalf("prompt with tools and results %d tokens, without %d", res.Usage.PromptTokens, plain.Usage.PromptTokens)
	}
}

func TestStructuredOutputValidates(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},
		"tags":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["name","age","tags"],"additionalProperties":false}`)
	r := userRequest("sim-small", "Describe a person", 3)
	r.ResponseFormat = llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "person", Schema: schema, Strict: true}
	res, c := run(t, r)
	if res.FinishReason != llm.FinishStop {
		t.Fatalf("finish %s", res.FinishReason)
	}
	if err := ValidateJSON(schema, c[0].text.String()); err != nil {
		t.Fatalf("%s: %v", c[0].text.String(), err)
	}
	r.ResponseFormat = llm.ResponseFormat{Type: llm.FormatJSONObject}
	_, c = run(t, r)
	var obj map[string]any
	if err := json.Unmarshal([]byte(c[0].text.String()), &obj); err != nil || len(obj) == 0 {
		t.Fatalf("json_object answer %q: %v", c[0].text.String(), err)
	}
}

func TestSeveralChoices(t *testing.T) {
	r := userRequest("sim-small", "Tell me a story", 5)
	r.N = 3
	res, c := run(t, r)
	one, single := run(t, userRequest("sim-small", "Tell me a story", 5))
	if len(c) != 3 {
		t.Fatalf("%d choices, want 3", len(c))
	}
	total := 0
	for i, ch := range c {
		if ch.finish != llm.FinishStop || ch.text.Len() == 0 {
			t.Fatalf("choice %d: finish %q text %q", i, ch.finish, ch.text.String())
		}
		total += ch.tokens
	}
	if c[0].text.String() != single[0].text.String() || c[1].text.String() == c[0].text.String() {
		t.Fatal("choice 0 should be the single answer and choice 1 another")
	}
	if res.Usage.PromptTokens != one.Usage.PromptTokens || res.Usage.CompletionTokens != total {
		t.Fatalf("usage %+v: want the prompt once (%d) and every choice's output (%d)", res.Usage, one.Usage.PromptTokens, total)
	}
	r.N = MaxChoices + 1
	if _, err := New(Config{}).Generate(t.Context(), &r, func(llm.Delta) error { return nil }); err == nil {
		t.Fatal("n over the bound was accepted")
	}
}

func TestLogprobs(t *testing.T) {
	r := userRequest("sim-small", "Hello", 2)
	r.Logprobs, r.TopLogprobs = true, 3
	_, c := run(t, r)
	var joined strings.Builder
	for _, lp := range c[0].lps {
		joined.Write(lp.Bytes)
		if lp.Logprob > 0 || len(lp.Top) != 3 || lp.Top[0].Logprob != lp.Logprob {
			t.Fatalf("bad logprob %+v", lp)
		}
		for _, alt := range lp.Top[1:] {
			if alt.Logprob > lp.Logprob {
				t.Fatalf("an alternative is likelier than the token chosen: %+v", lp)
			}
		}
	}
	if joined.String() != c[0].text.String() {
		t.Fatalf("logprob tokens %q != text %q", joined.String(), c[0].text.String())
	}
}

func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}

func TestEmbeddingsShareWords(t *testing.T) {
	e := New(Config{})
	res, err := e.Embed(t.Context(), llm.EmbedRequest{Model: "sim-embed", Inputs: []string{
		"The white rabbit ran down the hole", "A white rabbit with a pocket watch", "Quarterly revenue grew four percent",
		"The white rabbit ran down the hole",
	}})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Vectors
	if len(v) != 4 || len(v[0]) != EmbeddingDimensions || res.Usage.PromptTokens == 0 {
		t.Fatalf("%d vectors of %d, usage %+v", len(v), len(v[0]), res.Usage)
	}
	if n := cosine(v[0], v[0]); n < 0.999 || n > 1.001 {
		t.Fatalf("not unit length: %v", n)
	}
	near, far := cosine(v[0], v[1]), cosine(v[0], v[2])
	if near <= far+0.2 || cosine(v[0], v[3]) < 0.999 {
		t.Fatalf("shared words %.3f, none %.3f, same text %.3f", near, far, cosine(v[0], v[3]))
	}
	short, err := e.Embed(t.Context(), llm.EmbedRequest{Model: "sim-embed", Inputs: []string{"white rabbit"}, Dimensions: 64})
	if err != nil || len(short.Vectors[0]) != 64 {
		t.Fatalf("dimensions 64: %v %d", err, len(short.Vectors[0]))
	}
	if n := cosine(short.Vectors[0], short.Vectors[0]); n < 0.999 || n > 1.001 {
		t.Fatalf("shortened vector not renormalized: %v", n)
	}
	for _, bad := range []llm.EmbedRequest{{Model: "sim-small", Inputs: []string{"x"}}, {Model: "sim-embed"}, {Model: "sim-embed", Inputs: []string{"x"}, Dimensions: 9999}} {
		if _, err := e.Embed(t.Context(), bad); err == nil {
			t.Fatalf("%+v was accepted", bad)
		}
	}
}

func TestArgumentsWrittenAfterTheToolsName(t *testing.T) {
	for said, want := range map[string]string{
		`Please Read {"file_path": "/tmp/a.txt"} now`: `{"file_path":"/tmp/a.txt"}`,
		`Read the file, then Read {"file_path":"/b"}`: `{"file_path":"/b"}`,
		`Read {not json} and nothing else`:            ``,
		`Read`:                                        ``,
		`ReadMe {"x": 1}`:                             ``, // another word
	} {
		if got := argsAfter(said, "Read"); got != want {
			t.Errorf("argsAfter(%q) = %q, want %q", said, got, want)
		}
	}
}
