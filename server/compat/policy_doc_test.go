package compat

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// Every request field a surface reads or accepts is named in its page of
// docs/api, so the field policy written there covers what the code does;
// the e2e tests (TestAnthropicFieldPolicy, TestOpenAIFieldPolicy) check
// each policy's rows against the running gateway.
func TestFieldPolicyDocumented(t *testing.T) {
	for _, c := range []struct {
		doc  string
		read map[string]bool
	}{
		{"anthropic.md", anthropicParams},
		{"responses.md", responsesReadParams},
		{"chat-completions.md", readParams},
	} {
		data, err := os.ReadFile("../../docs/api/" + c.doc)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(data)
		names := slices.Collect(maps.Keys(c.read))
		switch c.doc {
		case "anthropic.md":
			names = append(names, slices.Collect(maps.Keys(anthropicHarmless))...)
		case "responses.md":
			names = append(names, slices.Collect(maps.Keys(responsesHarmlessParams))...)
		case "chat-completions.md":
			names = append(names, slices.Collect(maps.Keys(harmlessParams))...)
		}
		slices.Sort(names)
		for _, name := range names {
			if !strings.Contains(doc, "`"+name) {
				t.Errorf("docs/api/%s does not name the field `%s`", c.doc, name)
			}
		}
	}
}
