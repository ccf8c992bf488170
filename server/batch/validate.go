package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// maxLineBytes bounds one line of an input file (a request with its
// images inline fits).
const maxLineBytes = 32 << 20

// maxErrors is the most validation errors a failed batch reports.
const maxErrors = 100

// inputLine is one line of an input file.
type inputLine struct {
	CustomID *string         `json:"custom_id"`
	Method   *string         `json:"method"`
	URL      *string         `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// Parse checks an input file line by line, as OpenAI does before a batch
// runs: each non-empty line a JSON object with a custom_id unique in the
// file, method POST, the batch's endpoint as its url, and a body naming a
// catalog model of the endpoint's kind and not asking to stream. It
// returns the lines, or every error found (at most maxErrors), each with
// its 1-based line number.
func Parse(r io.Reader, endpoint string, catalog *models.Catalog, maxLines int) ([]store.BatchLine, []store.BatchError) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	var lines []store.BatchLine
	var errs []store.BatchError
	seen := map[string]int{}
	fail := func(line int, code, param, format string, args ...any) {
		if len(errs) < maxErrors {
			errs = append(errs, store.BatchError{Code: code, Param: param, Line: line, Message: fmt.Sprintf(format, args...)})
		}
	}
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		if len(lines)+1 > maxLines {
			return nil, []store.BatchError{{Code: "too_many_lines", Message: fmt.Sprintf("the file has more than %d requests, the most one batch may hold", maxLines)}}
		}
		var in inputLine
		if !utf8.Valid(raw) {
			fail(n, "invalid_json", "", "line %d is not valid UTF-8", n)
			continue
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			fail(n, "invalid_json", "", "line %d is not a JSON object: %v", n, err)
			continue
		}
		switch {
		case in.CustomID == nil || *in.CustomID == "":
			fail(n, "missing_custom_id", "custom_id", "line %d has no custom_id", n)
			continue
		case len(*in.CustomID) > 512:
			fail(n, "invalid_custom_id", "custom_id", "line %d's custom_id is over 512 bytes", n)
			continue
		case seen[*in.CustomID] > 0:
			fail(n, "duplicate_custom_id", "custom_id", "line %d's custom_id %q is on line %d already", n, *in.CustomID, seen[*in.CustomID])
			continue
		}
		seen[*in.CustomID] = n
		switch {
		case in.Method == nil || *in.Method != "POST":
			fail(n, "invalid_method", "method", "line %d: method must be POST", n)
			continue
		case in.URL == nil || !validEndpoint(*in.URL):
			fail(n, "invalid_url", "url", "line %d: url must be one of %v", n, Endpoints)
			continue
		case *in.URL != endpoint:
			fail(n, "mismatched_endpoint", "url", "line %d's url %s is not the batch's endpoint %s", n, *in.URL, endpoint)
			continue
		}
		var body map[string]any
		if json.Unmarshal(in.Body, &body) != nil || body == nil {
			fail(n, "invalid_body", "body", "line %d has no body object", n)
			continue
		}
		if msg, param, code := checkBody(body, endpoint, catalog); msg != "" {
			fail(n, code, param, "line %d: %s", n, msg)
			continue
		}
		lines = append(lines, store.BatchLine{Index: len(lines), CustomID: *in.CustomID, Body: string(in.Body)})
	}
	if err := sc.Err(); err != nil {
		return nil, []store.BatchError{{Code: "invalid_json", Line: n + 1, Message: fmt.Sprintf("line %d could not be read: %v", n+1, err)}}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(lines) == 0 {
		return nil, []store.BatchError{{Code: "empty_file", Message: "the file holds no requests"}}
	}
	return lines, nil
}

// checkBody checks what a batch can know of a body before it runs: its
// model and that it does not stream. The endpoint checks the rest when the
// line runs (a bad field fails that line, in the error file).
func checkBody(body map[string]any, endpoint string, catalog *models.Catalog) (msg, param, code string) {
	name, _ := body["model"].(string)
	if name == "" {
		return "body.model is required", "body.model", "invalid_body"
	}
	m, ok := catalog.Lookup(name)
	if !ok {
		return fmt.Sprintf("model %q is not in the catalog", name), "body.model", "model_not_found"
	}
	if (endpoint == "/v1/embeddings") != m.Embeds() {
		kind := "a chat model"
		if m.Embeds() {
			kind = "an embedding model"
		}
		return fmt.Sprintf("%s is %s; %s takes the other kind", m.ID, kind, endpoint), "body.model", "invalid_body"
	}
	if s, ok := body["stream"].(bool); ok && s {
		return "stream is not supported in a batch", "body.stream", "invalid_body"
	}
	if b, ok := body["background"].(bool); ok && b {
		return "background is not supported in a batch (a batch is run in the background already)", "body.background", "invalid_body"
	}
	return "", "", ""
}
