package compat

import (
	"net/http/httptest"
	"strings"
	"testing"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
)

func TestCompletionsMapping(t *testing.T) {
	h := &openAIHandler{&deps{Core: &chat.Core{}}}
	parse := func(body string) ([]chat.Request, error) {
		_, creqs, err := h.parseCompletions(httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body)))
		return creqs, err
	}
	creqs, err := parse(`{"model":"m","prompt":["a","b"],"n":2,"stop":"x","seed":4,"user":"u","logprobs":3,"temperature":0.2}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(creqs) != 2 {
		t.Fatalf("%d requests", len(creqs))
	}
	for i, cr := range creqs {
		if cr.Model != "m" || cr.N != 2 || len(cr.Stop) != 1 || cr.Stop[0] != "x" || *cr.Seed != 4 || cr.User != "u" ||
			!cr.Logprobs || cr.TopLogprobs != 3 || *cr.Temperature != 0.2 || cr.MaxOutputTokens != defaultCompletionTokens ||
			len(cr.Messages) != 1 || cr.Messages[0].Role != "user" || cr.Messages[0].Parts[0].Text != []string{"a", "b"}[i] {
			t.Errorf("request %d: %+v", i, cr)
		}
		// The core's field names come back as the legacy request's.
		for core, caller := range map[string]string{
			"max_output_tokens":         "max_tokens",
			"top_logprobs":              "logprobs",
			"messages":                  []string{"prompt[0]", "prompt[1]"}[i],
			"messages[0].parts[0].text": []string{"prompt[0]", "prompt[1]"}[i],
			"stop[0]":                   "stop[0]",
		} {
			if got := cr.Rename(core); got != caller {
				t.Errorf("Rename(%s) = %s, want %s", core, got, caller)
			}
		}
	}
	one, err := parse(`{"model":"m","prompt":"a","max_tokens":7}`)
	if err != nil || len(one) != 1 || one[0].MaxOutputTokens != 7 || one[0].Logprobs || one[0].Rename("messages") != "prompt" {
		t.Fatalf("%+v %v", one, err)
	}
	for body, field := range map[string]string{
		`{"model":"m","prompt":"a","suffix":"z"}`:         "suffix",
		`{"model":"m","prompt":"a","best_of":2}`:          "best_of",
		`{"model":"m","prompt":"a","echo":true}`:          "echo",
		`{"model":"m","prompt":"a","logprobs":9}`:         "logprobs",
		`{"model":"m","prompt":"a","max_tokens":0}`:       "max_tokens",
		`{"model":"m","prompt":"a","stop":3}`:             "stop",
		`{"model":"m","prompt":[[1,2]]}`:                  "prompt",
		`{"model":"m","prompt":[]}`:                       "prompt",
		`{"model":"m","prompt":""}`:                       "prompt",
		`{"model":"m","prompt":["a",""]}`:                 "prompt[1]",
		`{"model":"m","prompt":"a","n":0}`:                "n",
		`{"model":"m","prompt":"a","tools":[]}`:           "tools",
		`{"model":"m","prompt":"a","max_tokens":"seven"}`: "max_tokens",
	} {
		_, err := parse(body)
		var fv parleyv1.FieldViolation
		if err == nil || !apierr.Detail(err, &fv) || fv.GetField() != field {
			t.Errorf("%s: %v, want a violation of %s", body, err, field)
		}
	}
	// With --openai-unsupported=drop, the fields Parley cannot honour go.
	h.Unsupported = UnsupportedDrop
	if _, err := parse(`{"model":"m","prompt":"a","suffix":"z","best_of":3}`); err != nil {
		t.Fatal(err)
	}
}
