package compat

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/knowledge"
)

// The file_search tool of /v1/responses: the gateway searches the caller's
// vector stores for the request's last user message before the generation,
// gives the model the passages as the result of a file_search call it made
// (numbered, to cite as [n]), and answers with a file_search_call output
// item and file_citation annotations on the text where it cites them.

// fileSearchTool is the tool's settings and, once run, its call.
type fileSearchTool struct {
	search  searchRequest
	stores  []string
	results bool // include: file_search_call.results
	echo    map[string]any

	// What the search found, once run.
	query string
	found []knowledge.Result
}

// parseFileSearch reads a file_search tool.
func parseFileSearch(raw json.RawMessage, field string, include []string) (*fileSearchTool, error) {
	var t struct {
		Type           string          `json:"type"`
		VectorStoreIDs []string        `json:"vector_store_ids"`
		MaxNumResults  *int            `json:"max_num_results"`
		Filters        json.RawMessage `json:"filters"`
		RankingOptions json.RawMessage `json:"ranking_options"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, apierr.InvalidArgument(field, "must be a file_search tool object")
	}
	if len(t.VectorStoreIDs) == 0 {
		return nil, apierr.InvalidArgument(field+".vector_store_ids", "must name at least one vector store")
	}
	fs := &fileSearchTool{stores: t.VectorStoreIDs, results: slices.Contains(include, "file_search_call.results")}
	fs.search.Query = json.RawMessage(`"x"`)
	fs.search.MaxNumResults = t.MaxNumResults
	if len(t.Filters) > 0 && string(t.Filters) != "null" {
		fs.search.Filters = &t.Filters
	}
	if len(t.RankingOptions) > 0 && string(t.RankingOptions) != "null" {
		if err := json.Unmarshal(t.RankingOptions, &fs.search.RankingOptions); err != nil {
			return nil, apierr.InvalidArgument(field+".ranking_options", "must be an object")
		}
	}
	if _, _, err := fs.search.query(fs.stores); err != nil { // checked now, before anything is run
		return nil, renameField(err, field)
	}
	fs.echo = map[string]any{"type": "file_search", "vector_store_ids": t.VectorStoreIDs, "max_num_results": t.MaxNumResults,
		"filters": json.RawMessage(orNull(t.Filters)), "ranking_options": json.RawMessage(orNull(t.RankingOptions))}
	return fs, nil
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// renameField puts a tool's field path before the field an error names.
func renameField(err error, field string) error {
	var fv parleyv1.FieldViolation
	if apierr.Detail(err, &fv) {
		return apierr.InvalidArgument(field+"."+fv.GetField(), fv.GetDescription())
	}
	return err
}

// runFileSearch searches for the last user message and adds the call and
// its result to the prompt.
func (h *openAIHandler) runFileSearch(r *http.Request, p *responsePlan) error {
	fs := p.fileSearch
	if fs == nil {
		return nil
	}
	msgs := p.chat.Messages
	for i := len(msgs) - 1; i >= 0 && fs.query == ""; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var b strings.Builder
		for _, part := range msgs[i].Parts {
			b.WriteString(part.Text)
		}
		fs.query = strings.TrimSpace(b.String())
	}
	if fs.query == "" {
		return apierr.InvalidArgument("input", "the file_search tool needs a user message with text to search for")
	}
	q, _, err := fs.search.query(fs.stores)
	if err != nil {
		return err
	}
	q.Text = fs.query
	if fs.found, err = h.Knowledge.Search(r.Context(), q); err != nil {
		return renameField(err, "tools.file_search")
	}
	p.chat.Messages = append(p.chat.Messages, chat.FileSearchMessages("fs_"+hexID(p.outID), fs.query, knowledge.Passages(fs.found))...)
	p.origins = append(p.origins, "tools.file_search", "tools.file_search")
	return nil
}

// fileSearchCall is the file_search_call output item.
type fileSearchCall struct {
	Type    string             `json:"type"`
	ID      string             `json:"id"`
	Status  string             `json:"status"`
	Queries []string           `json:"queries"`
	Results []fileSearchResult `json:"results"`
}

type fileSearchResult struct {
	FileID     string         `json:"file_id"`
	Filename   string         `json:"filename"`
	Score      float64        `json:"score"`
	Text       string         `json:"text"`
	Attributes map[string]any `json:"attributes"`
}

// item is the call as an output item (its results when include asks).
func (fs *fileSearchTool) item(outID string) fileSearchCall {
	c := fileSearchCall{Type: "file_search_call", ID: "fs_" + hexID(outID), Status: "completed", Queries: []string{fs.query}}
	if fs.results {
		c.Results = []fileSearchResult{}
		for _, res := range fs.found {
			attrs := res.Attributes
			if attrs == nil {
				attrs = map[string]any{}
			}
			c.Results = append(c.Results, fileSearchResult{FileID: res.FileID, Filename: res.Filename, Score: res.Score, Text: res.Text, Attributes: attrs})
		}
	}
	return c
}

// fileCitation is a file_citation annotation: the passage [n] cited at
// index of the text.
type fileCitation struct {
	Type     string `json:"type"`
	Index    int    `json:"index"`
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
}

// citations are the annotations of text: each [n] naming a passage found.
func (fs *fileSearchTool) citations(text string) []any {
	out := []any{}
	for _, c := range chat.Cites(text, len(fs.found)) {
		res := fs.found[c.Number-1]
		out = append(out, fileCitation{Type: "file_citation", Index: c.End, FileID: res.FileID, Filename: res.Filename})
	}
	return out
}
