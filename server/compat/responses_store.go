package compat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

// Stored responses are kept by the core (chat.Core.SaveResponse): a
// chain of responses is one conversation of the caller's, each response's
// output message holding its record. A response's id names its
// conversation and its output message (resp_ + both UUIDs in hex), so
// finding it is one chat.Core.LoadResponse.

func hexID(id string) string { return strings.ReplaceAll(id, "-", "") }

// responseID is the id of the response whose output message is msgID in
// conversation convID.
func responseID(convID, msgID string) string { return chat.StoredID("resp_", convID, msgID) }

// parseResponseID splits a response id into its conversation and output
// message ids.
func parseResponseID(id string) (convID, msgID string, ok bool) {
	return chat.ParseStoredID("resp_", id)
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

// storedResponse is a stored response with its response object as
// created (without its output, rebuilt from the output message's parts).
type storedResponse struct {
	*chat.StoredResponse
	resp responseObject
}

// loadResponse finds the caller's stored response id; anything else is
// not_found.
func (h *openAIHandler) loadResponse(ctx context.Context, userID, id string) (*storedResponse, error) {
	convID, msgID, ok := parseResponseID(id)
	if !ok {
		return nil, errNoResponse(id)
	}
	s, err := h.Core.LoadResponse(ctx, userID, convID, msgID)
	if errors.Is(err, chat.ErrNoResponse) {
		return nil, errNoResponse(id)
	} else if err != nil {
		return nil, err
	}
	out := &storedResponse{StoredResponse: s}
	if json.Unmarshal(s.Record.Response, &out.resp) != nil {
		return nil, errNoResponse(id)
	}
	return out, nil
}

// object is the stored response as the API returns it.
func (s *storedResponse) object() *responseObject {
	obj := s.resp
	obj.Output = responseOutput(s.Output)
	return &obj
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
	// responseReasoningItem is a model's reasoning: its text as
	// reasoning_text content, and no summary (Parley makes none).
	responseReasoningItem struct {
		Type    string                  `json:"type"`
		ID      string                  `json:"id"`
		Summary []any                   `json:"summary"`
		Content []responseReasoningText `json:"content"`
		Status  string                  `json:"status"`
	}
	responseReasoningText struct {
		Type string `json:"type"`
		Text string `json:"text"`
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

// reasoningItemID is the id of a message's k-th reasoning item.
func reasoningItemID(msgID string, k int) string {
	return fmt.Sprintf("rs_%s%02x", hexID(msgID), k)
}

func reasoningItem(id, text, status string) responseReasoningItem {
	return responseReasoningItem{Type: "reasoning", ID: id, Summary: []any{},
		Content: []responseReasoningText{{Type: "reasoning_text", Text: text}}, Status: status}
}

// responseOutput is a response's output items, from its output message.
func responseOutput(m store.Message) []any {
	status := "completed"
	if m.FinishReason == string(llm.FinishLength) {
		status = "incomplete"
	}
	return assistantItems(m, status, true)
}

// assistantItems are an assistant message's items in the order of its
// parts: its text as one message item, each tool call as a function_call.
// With always, a message without text or calls is an empty message item.
func assistantItems(m store.Message, status string, always bool) []any {
	items := []any{}
	calls, thoughts := 0, 0
	text := -1 // the message item's place in items
	for _, p := range m.Parts {
		switch {
		case p.Reasoning != "":
			items = append(items, reasoningItem(reasoningItemID(m.ID, thoughts), p.Reasoning, status))
			thoughts++
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
			if _, isOutput := chat.ResponseRecordOf(m); isOutput {
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
