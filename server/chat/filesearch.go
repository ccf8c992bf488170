package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

// File search, as every surface runs it: the gateway searches the caller's
// vector stores for the question before the generation and gives the model
// the passages as the result of a file_search call it made, numbered to be
// cited as [n]; the answer's markers then name the passages it cites.

// Retriever searches a user's vector stores (the knowledge service; main
// wires it). The caller is the context's principal: another user's store
// is not found.
type Retriever interface {
	Retrieve(ctx context.Context, q Retrieval) ([]Passage, error)
}

// Retrieval is one search of a user's vector stores.
type Retrieval struct {
	StoreIDs []string
	// Text is the question.
	Text string
	// Limit is the most passages (0: the retriever's default).
	Limit int
	// Filter keeps the chunks whose attributes match (nil: all).
	Filter *store.AttributeFilter
	// MinScore drops passages scored below it.
	MinScore float64
}

// Passage is one chunk found.
type Passage struct {
	FileID, Filename, StoreID string
	Text                      string
	Score                     float64
	Attributes                map[string]any
	Ordinal                   int
}

// MaxPassageBytes bounds each passage given to the model (and quoted in a
// citation).
const MaxPassageBytes = 4000

// FileSearchTool is the name of the call the passages answer.
const FileSearchTool = "file_search"

// FileSearchMessages are the call of file_search for query and its result,
// the passages numbered from 1, to follow the question in the prompt.
func FileSearchMessages(callID, query string, found []Passage) []llm.ChatMessage {
	args, _ := json.Marshal(map[string]string{"query": query})
	return []llm.ChatMessage{
		{Role: "assistant", Parts: []llm.Part{{ToolCall: &llm.ToolCall{ID: callID, Name: FileSearchTool, Arguments: string(args)}}}},
		{Role: "tool", Parts: []llm.Part{{ToolResult: &llm.ToolResult{ToolCallID: callID, Content: PassagesText(found)}}}},
	}
}

// PassagesText is the file search's result as the model reads it.
func PassagesText(found []Passage) string {
	var b strings.Builder
	if len(found) == 0 {
		b.WriteString("No passage of the files matches.")
	} else {
		b.WriteString("Passages from the user's files; cite one by its number in brackets, like [1].\n")
	}
	for i, p := range found {
		fmt.Fprintf(&b, "[%d] %s: %s\n", i+1, p.Filename, Quote(p.Text))
	}
	return b.String()
}

// Quote is a passage cut to MaxPassageBytes (at a character's start).
func Quote(text string) string {
	if len(text) <= MaxPassageBytes {
		return text
	}
	i := MaxPassageBytes
	for i > 0 && text[i]&0xC0 == 0x80 {
		i--
	}
	return text[:i]
}

// Cite is one marker [n] of an answer's text that names a passage.
type Cite struct {
	// Number is n: the passage is found[n-1].
	Number int
	// End is the index in the text just after the marker's "]".
	End int
}

// Cites are the markers [n] of text with n from 1 to count, in order.
func Cites(text string, count int) []Cite {
	var out []Cite
	for i := 0; i < len(text); i++ {
		if text[i] != '[' {
			continue
		}
		j, n := i+1, 0
		for j < len(text) && j-i <= 3 && text[j] >= '0' && text[j] <= '9' {
			n = n*10 + int(text[j]-'0')
			j++
		}
		if j < len(text) && text[j] == ']' && j > i+1 && n >= 1 && n <= count {
			out = append(out, Cite{Number: n, End: j + 1})
		}
	}
	return out
}

// Citations are the passages text cites, each once, by number.
func Citations(text string, found []Passage) []store.Citation {
	seen := map[int]bool{}
	var out []store.Citation
	for _, c := range Cites(text, len(found)) {
		if seen[c.Number] {
			continue
		}
		seen[c.Number] = true
		p := found[c.Number-1]
		out = append(out, store.Citation{Number: c.Number, FileID: p.FileID, Filename: p.Filename, Quote: Quote(p.Text), Score: p.Score})
	}
	slices.SortFunc(out, func(a, b store.Citation) int { return a.Number - b.Number })
	return out
}

// projectPassages is how many passages a project's chat retrieves for
// each question.
const projectPassages = 5

// project is the conversation's project, nil when it has none.
func (c *Core) project(ctx context.Context, userID string, conv store.Conversation) (*store.Project, error) {
	if conv.ProjectID == "" || c.Projects == nil {
		return nil, nil
	}
	p, err := c.Projects.Get(ctx, userID, conv.ProjectID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // deleted while its chat was open: answered as a plain chat
	} else if err != nil {
		return nil, apierr.Internal()
	}
	return &p, nil
}

// searchProject searches the project's files for the question (the last
// of stored) and puts the call and its passages after it.
func (c *Core) searchProject(ctx context.Context, project store.Project, stored []store.Message) ([]store.Message, []Passage, error) {
	if c.Retriever == nil || len(stored) == 0 {
		return stored, nil, nil
	}
	query := strings.TrimSpace(partsText(stored[len(stored)-1].Parts))
	if query == "" {
		return stored, nil, nil // an image alone: nothing to search for
	}
	found, err := c.Retriever.Retrieve(ctx, Retrieval{StoreIDs: []string{project.VectorStoreID}, Text: query, Limit: projectPassages})
	if connect.CodeOf(err) == connect.CodeNotFound {
		return stored, nil, nil // its store is gone (deleted with the project)
	} else if err != nil {
		return nil, nil, err
	}
	for _, m := range FileSearchMessages("fs_"+project.ID, query, found) {
		sm := store.Message{Role: m.Role}
		for _, part := range m.Parts {
			sm.Parts = append(sm.Parts, store.Part{ToolCall: part.ToolCall, ToolResult: part.ToolResult})
		}
		stored = append(stored, sm)
	}
	return stored, found, nil
}
