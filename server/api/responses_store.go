package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/worker"
)

// Stored responses live in the conversation store, with no table of their
// own. A chain of responses — each continuing the one before through
// previous_response_id — is one conversation of the caller's (archived, so
// it stays out of the web app's list). Its messages are each response's
// input items and one output message, whose Meta part holds the response's
// record: its settings as created, its own input messages and the output
// message of the response it continued. A response's id names its
// conversation and its output message (resp_ + both UUIDs in hex), so
// finding it is Conversations.Get (which is also the ownership check) and
// one read of the conversation's messages. The chain is walked through the
// records, not by position, so responses that branch from one response, or
// continue it at the same time, each see exactly their own history.

// responseRecord is what a stored response keeps besides its items.
type responseRecord struct {
	// Previous is the output message of the response this one continued;
	// empty for the first of a chain.
	Previous string `json:"previous,omitempty"`
	// Inputs are this response's input messages, in order.
	Inputs []string `json:"inputs"`
	// Response is the response object as created, without its output
	// (rebuilt from the output message's parts).
	Response responseObject `json:"response"`
}

// maxChainMessages bounds the messages read to find a stored response and
// its chain.
const maxChainMessages = 10_000

func hexID(id string) string { return strings.ReplaceAll(id, "-", "") }

// responseID is the id of the response whose output message is msgID in
// conversation convID.
func responseID(convID, msgID string) string { return "resp_" + hexID(convID) + hexID(msgID) }

// parseResponseID splits a response id into its conversation and output
// message ids.
func parseResponseID(id string) (convID, msgID string, ok bool) {
	h, found := strings.CutPrefix(id, "resp_")
	if !found || len(h) != 64 {
		return "", "", false
	}
	c, err1 := uuid.Parse(h[:32])
	m, err2 := uuid.Parse(h[32:])
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	return c.String(), m.String(), true
}

// errNoResponse is the answer for an id that names no response of the
// caller's: another user's looks the same as none.
func errNoResponse(id string) error {
	return connect.NewError(connect.CodeNotFound, fmt.Errorf("no response found with id %q", id))
}

// errNoPrevious is errNoResponse for previous_response_id, naming the field.
func errNoPrevious(id string) error {
	err := connect.NewError(connect.CodeNotFound, fmt.Errorf("previous response with id %q not found", id))
	if d, derr := connect.NewErrorDetail(&parleyv1.FieldViolation{Field: "previous_response_id", Description: "not found"}); derr == nil {
		err.AddDetail(d)
	}
	return err
}

// storedResponse is a stored response with the conversation it is in.
type storedResponse struct {
	conv store.Conversation
	all  []store.Message // the conversation's messages, oldest first
	out  store.Message   // the response's output message
	rec  responseRecord
}

// loadResponse finds the caller's stored response id; anything else is
// not_found.
func (h *OpenAIHandler) loadResponse(ctx context.Context, userID, id string) (*storedResponse, error) {
	convID, msgID, ok := parseResponseID(id)
	if !ok {
		return nil, errNoResponse(id)
	}
	conv, err := h.Core.Conversations.Get(ctx, userID, convID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoResponse(id)
	} else if err != nil {
		return nil, apierr.Internal()
	}
	s := &storedResponse{conv: conv}
	cursor := ""
	for len(s.all) < maxChainMessages {
		page, next, err := h.Core.Messages.List(ctx, convID, store.PageRequest{Size: 1000, Cursor: cursor})
		if err != nil {
			return nil, apierr.Internal()
		}
		s.all = append(s.all, page...)
		if cursor = next; next == "" {
			break
		}
	}
	for _, m := range s.all {
		if m.ID == msgID {
			if rec, ok := recordOf(m); ok {
				s.out, s.rec = m, rec
				return s, nil
			}
		}
	}
	return nil, errNoResponse(id)
}

// recordOf reads the response record a message holds, if it is a stored
// response's output.
func recordOf(m store.Message) (responseRecord, bool) {
	for _, p := range m.Parts {
		if p.Meta != "" {
			var rec responseRecord
			return rec, json.Unmarshal([]byte(p.Meta), &rec) == nil
		}
	}
	return responseRecord{}, false
}

// errBrokenChain reports a chain with a response deleted from it.
var errBrokenChain = errors.New("a response of the chain was deleted")

// context is the chain that ends with this response, oldest first: each
// response's input messages, then its output.
func (s *storedResponse) context() ([]store.Message, error) {
	byID := make(map[string]store.Message, len(s.all))
	for _, m := range s.all {
		byID[m.ID] = m
	}
	var segments [][]store.Message
	out, rec := s.out, s.rec
	for range len(s.all) + 1 { // a record naming itself cannot loop for ever
		seg := make([]store.Message, 0, len(rec.Inputs)+1)
		for _, id := range rec.Inputs {
			m, ok := byID[id]
			if !ok {
				return nil, errBrokenChain
			}
			seg = append(seg, m)
		}
		segments = append(segments, append(seg, out))
		if rec.Previous == "" {
			var chain []store.Message
			for i := len(segments) - 1; i >= 0; i-- {
				chain = append(chain, segments[i]...)
			}
			return chain, nil
		}
		prev, ok := byID[rec.Previous]
		if !ok {
			return nil, errBrokenChain
		}
		if rec, ok = recordOf(prev); !ok {
			return nil, errBrokenChain
		}
		out = prev
	}
	return nil, errBrokenChain
}

// object is the stored response as the API returns it.
func (s *storedResponse) object() *responseObject {
	obj := s.rec.Response
	obj.Output = responseOutput(s.out)
	return &obj
}

// saveResponse stores a response: its input messages, then its output
// message holding rec. The first of a chain makes its conversation. What
// cannot be stored whole is not left in part.
func (h *OpenAIHandler) saveResponse(ctx context.Context, userID string, conv store.Conversation, isNew bool, inputs []store.Message, out store.Message, rec responseRecord) error {
	ctx = context.WithoutCancel(ctx) // the generation is paid for: keep it even if the client left
	meta, err := json.Marshal(rec)
	if err != nil {
		return apierr.Internal()
	}
	now := h.Core.Now()
	if isNew {
		conv.Title = responseTitle(inputs)
		conv.Archived = true
		conv.CreatedAt, conv.UpdatedAt = now, now
		if err := h.Core.Conversations.Create(ctx, conv); err != nil {
			return apierr.Internal()
		}
	}
	var written []store.MessageKey
	undo := func() {
		if isNew {
			_ = h.Core.Conversations.Delete(ctx, userID, conv.ID)
			_ = h.Core.Messages.DeleteConversation(ctx, conv.ID)
			return
		}
		_ = h.Core.Messages.Delete(ctx, conv.ID, written)
	}
	out.Parts = append(out.Parts, store.Part{Meta: string(meta)})
	for i, m := range append(inputs, out) {
		m.ConversationID = conv.ID
		m.CreatedAt = now.Add(time.Duration(i)) // in order within the conversation
		if err := h.Core.Messages.Append(ctx, m); err != nil {
			undo()
			return apierr.Internal()
		}
		written = append(written, store.MessageKey{ID: m.ID, CreatedAt: m.CreatedAt})
	}
	if !isNew {
		_ = h.Core.Conversations.Touch(ctx, userID, conv.ID, now, "")
	}
	return nil
}

// responseTitle names a chain's conversation after its first user text.
func responseTitle(inputs []store.Message) string {
	for _, m := range inputs {
		if m.Role != "user" {
			continue
		}
		for _, p := range m.Parts {
			if t := strings.TrimSpace(p.Text); t != "" {
				t, _, _ = strings.Cut(t, "\n")
				if utf8.RuneCountInString(t) > 60 {
					t = strings.TrimSpace(string([]rune(t)[:57])) + "…"
				}
				return t
			}
		}
	}
	return "Responses API"
}

// deleteResponse removes a stored response: its input messages and its
// output, and the conversation with them when no response is left in it.
// A response that continued this one can no longer be continued.
func (h *OpenAIHandler) deleteResponse(ctx context.Context, userID string, s *storedResponse) error {
	gone := map[string]bool{s.out.ID: true}
	for _, id := range s.rec.Inputs {
		gone[id] = true
	}
	var keys []store.MessageKey
	left := false
	for _, m := range s.all {
		if gone[m.ID] {
			keys = append(keys, store.MessageKey{ID: m.ID, CreatedAt: m.CreatedAt})
		} else if _, ok := recordOf(m); ok {
			left = true
		}
	}
	if !left {
		if err := h.Core.Conversations.Delete(ctx, userID, s.conv.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return apierr.Internal()
		}
		if err := h.Core.Messages.DeleteConversation(ctx, s.conv.ID); err != nil {
			return apierr.Internal()
		}
		return nil
	}
	if err := h.Core.Messages.Delete(ctx, s.conv.ID, keys); err != nil {
		return apierr.Internal()
	}
	return nil
}

// The items of a response as the API shows them.
type (
	responseMessageItem struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []any  `json:"content"`
	}
	responseOutputText struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
		Logprobs    []any  `json:"logprobs"`
	}
	responseInputText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	responseInputImage struct {
		Type     string  `json:"type"`
		ImageURL *string `json:"image_url"`
		FileID   *string `json:"file_id"`
		Detail   string  `json:"detail"`
	}
	responseFunctionCall struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
	responseFunctionCallOutput struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
		Status string `json:"status"`
	}
)

func responseTextPart(text string) responseOutputText {
	return responseOutputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// Item ids: a message's text is msg_<message id>, its k-th tool call
// fc_<message id><k>, a tool result fco_<message id>.
func messageItemID(msgID string) string { return "msg_" + hexID(msgID) }
func callItemID(msgID string, k int) string {
	return fmt.Sprintf("fc_%s%02x", hexID(msgID), k)
}

// responseOutput is a response's output items, from its output message.
func responseOutput(m store.Message) []any {
	status := "completed"
	if m.FinishReason == string(worker.FinishLength) {
		status = "incomplete"
	}
	return assistantItems(m, status, true)
}

// assistantItems are an assistant message's items in the order of its
// parts: its text as one message item, each tool call as a function_call.
// With always, a message without text or calls is an empty message item.
func assistantItems(m store.Message, status string, always bool) []any {
	items := []any{}
	calls := 0
	text := -1 // the message item's place in items
	for _, p := range m.Parts {
		switch {
		case p.ToolCall != nil:
			items = append(items, responseFunctionCall{Type: "function_call", ID: callItemID(m.ID, calls), CallID: p.ToolCall.ID,
				Name: p.ToolCall.Name, Arguments: p.ToolCall.Arguments, Status: status})
			calls++
		case p.Meta != "":
		case text < 0:
			text = len(items)
			items = append(items, responseMessageItem{Type: "message", ID: messageItemID(m.ID), Status: status, Role: "assistant",
				Content: []any{responseTextPart(p.Text)}})
		default:
			item := items[text].(responseMessageItem)
			t := item.Content[0].(responseOutputText)
			t.Text += p.Text
			item.Content[0] = t
		}
	}
	if always && len(items) == 0 {
		items = append(items, responseMessageItem{Type: "message", ID: messageItemID(m.ID), Status: status, Role: "assistant",
			Content: []any{responseTextPart("")}})
	}
	return items
}

// responseInputItems are stored messages as input items.
func responseInputItems(msgs []store.Message) []any {
	items := []any{}
	for _, m := range msgs {
		switch m.Role {
		case "tool":
			for _, p := range m.Parts {
				if r := p.ToolResult; r != nil {
					items = append(items, responseFunctionCallOutput{Type: "function_call_output", ID: "fco_" + hexID(m.ID),
						CallID: r.ToolCallID, Output: r.Content, Status: "completed"})
				}
			}
		case "assistant":
			if _, isOutput := recordOf(m); isOutput {
				items = append(items, responseOutput(m)...)
			} else {
				items = append(items, assistantItems(m, "completed", false)...)
			}
		default:
			content := []any{}
			for _, p := range m.Parts {
				switch {
				case p.Image != nil:
					url := "data:" + p.Image.MimeType + ";base64," + base64.StdEncoding.EncodeToString(p.Image.Data)
					content = append(content, responseInputImage{Type: "input_image", ImageURL: &url, Detail: "auto"})
				case p.AttachmentID != "":
					id := p.AttachmentID
					content = append(content, responseInputImage{Type: "input_image", FileID: &id, Detail: "auto"})
				case p.Meta == "":
					content = append(content, responseInputText{Type: "input_text", Text: p.Text})
				}
			}
			items = append(items, responseMessageItem{Type: "message", ID: messageItemID(m.ID), Status: "completed", Role: m.Role, Content: content})
		}
	}
	return items
}

// responseItemID is an input item's id, for paging.
func responseItemID(item any) string {
	switch it := item.(type) {
	case responseMessageItem:
		return it.ID
	case responseFunctionCall:
		return it.ID
	case responseFunctionCallOutput:
		return it.ID
	}
	return ""
}
