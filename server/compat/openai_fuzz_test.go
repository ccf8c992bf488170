package compat

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/attach"
)

// FuzzOpenAIRequest: any body is either refused with invalid_argument naming
// a field, or turned into a core request — never a panic.
func FuzzOpenAIRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"developer","content":"x"}],"stop":["a","b"],"max_tokens":5,"max_completion_tokens":5,"temperature":0.5,"top_p":1,"seed":3,"n":1}`,
		`{"messages":null}`, `[]`, `null`, `{"n":2}`, `{"tools":[]}`, "\xff", `{"stop":7}`, `{"messages":[{"role":"user","content":{}}]}`,
	} {
		f.Add(seed)
	}
	h := &openAIHandler{&deps{}}
	checker := attach.NewChecker(attach.Limits{})
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		req, err := h.parse(r)
		if err != nil {
			return
		}
		_, _ = req.toChat(checker)
	})
}
