package batch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley/server/models"
)

func catalog(t *testing.T) *models.Catalog {
	t.Helper()
	c, err := models.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every bad line is reported with its line number (blank lines counted,
// not turned into requests); a good file's lines keep their bodies byte
// for byte (a seed past 2^53 is not rounded).
func TestParse(t *testing.T) {
	good := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"sim-small","seed":9007199254740993,"messages":[]}}

{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"sim-large"}}
`
	lines, errs := Parse(strings.NewReader(good), "/v1/chat/completions", catalog(t), 10)
	if len(errs) != 0 || len(lines) != 2 || lines[1].Index != 1 || lines[1].CustomID != "b" || !strings.Contains(lines[0].Body, "9007199254740993") {
		t.Fatalf("a good file: %+v %+v", lines, errs)
	}
	bad := strings.Join([]string{
		`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"sim-small"}}`,
		`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"sim-small"}}`,
		`{"method":"POST","url":"/v1/chat/completions","body":{"model":"sim-small"}}`,
		`{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"sim-embed"}}`,
		`{"custom_id":"d","method":"POST","url":"/v1/chat/completions","body":{"model":"sim-small","stream":true}}`,
		`{"custom_id":"e","method":"POST","url":"/v1/chat/completions","body":"text"}`,
		`{"custom_id":"f","method":"POST","url":"/v1/moderations","body":{}}`,
		"{\"custom_id\":\"g\xff\"}",
	}, "\n")
	_, errs = Parse(strings.NewReader(bad), "/v1/chat/completions", catalog(t), 10)
	got := ""
	for _, e := range errs {
		got += fmt.Sprintf("%d:%s ", e.Line, e.Code)
	}
	want := "2:duplicate_custom_id 3:missing_custom_id 4:invalid_body 5:invalid_body 6:invalid_body 7:invalid_url 8:invalid_json "
	if got != want {
		t.Fatalf("errors %q, want %q", got, want)
	}
	if _, errs := Parse(strings.NewReader(good), "/v1/chat/completions", catalog(t), 1); len(errs) != 1 || errs[0].Code != "too_many_lines" {
		t.Fatalf("past the line bound: %+v", errs)
	}
	if _, errs := Parse(strings.NewReader("\n\n"), "/v1/chat/completions", catalog(t), 10); len(errs) != 1 || errs[0].Code != "empty_file" {
		t.Fatalf("an empty file: %+v", errs)
	}
}
