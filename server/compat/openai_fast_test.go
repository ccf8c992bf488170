package compat

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/compat/openaiwire"
)

// The hand-written delta chunk is byte for byte what encoding/json writes.
func TestDeltaChunkMatchesEncodingJSON(t *testing.T) {
	texts := []string{"", " the", "Hello, world!", `a "quoted" \ back`, "line\nbreak\ttab\r\b\f", "<b>&amp;</b>",
		"naïve café ☕ 日本", "\x00\x01\x1f\x7f", "bad \xff\xfe utf8", "\u2028\u2029", strings.Repeat("x", 300), "🙂 emoji"}
	for _, fp := range []string{"", "fp_1"} {
		for _, id := range []string{"chatcmpl-0191-abc", "chatcmpl-<&>"} {
			c := openaiwire.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: 1767225600, Model: "mock", SystemFingerprint: fp}
			for _, role := range []string{"", "assistant"} {
				for _, text := range texts {
					for _, index := range []int{0, 3} {
						c.Choices = []openaiwire.Choice{{Index: index, Delta: &openaiwire.Delta{Role: role, Content: text}}}
						var want bytes.Buffer
						if err := json.NewEncoder(&want).Encode(&c); err != nil {
							t.Fatal(err)
						}
						got := appendDeltaChunk(nil, &c, index, role, text)
						if string(got) != strings.TrimSuffix(want.String(), "\n") {
							t.Errorf("role %q text %q:\n got %s\nwant %s", role, text, got, want.String())
						}
					}
				}
			}
		}
	}
}

func FuzzDeltaChunk(f *testing.F) {
	f.Add("hello", "mock")
	f.Fuzz(func(t *testing.T, text, model string) {
		c := openaiwire.ChatCompletionChunk{ID: "chatcmpl-x", Object: "chat.completion.chunk", Created: 1, Model: model,
			Choices: []openaiwire.Choice{{Delta: &openaiwire.Delta{Content: text}}}}
		want, _ := json.Marshal(&c)
		if got := appendDeltaChunk(nil, &c, 0, "", text); string(got) != string(want) {
			t.Errorf("got %s want %s", got, want)
		}
	})
}
