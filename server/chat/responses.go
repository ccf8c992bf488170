package chat

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// Stored responses (OpenAI's Responses API with store) live in the
// conversation store, with no table of their own. A chain of responses —
// each continuing the one before — is one conversation of the caller's
// (archived, so it stays out of the web app's list). Its messages are each
// response's input messages and one output message, whose Meta part holds
// the response's record: its own input messages, the output message of the
// response it continued, and the surface's response object as created. The
// chain is walked through the records, not by position, so responses that
// branch from one response, or continue it at the same time, each see
// exactly their own history.

// StoredID names a stored response (or background generation) by its
// conversation and output message: prefix ("resp_", "gen_") and both UUIDs
// in hex, so finding it is one LoadResponse.
func StoredID(prefix, convID, msgID string) string {
	return prefix + strings.ReplaceAll(convID, "-", "") + strings.ReplaceAll(msgID, "-", "")
}

// ParseStoredID splits an id StoredID made with prefix into its
// conversation and output message ids.
func ParseStoredID(prefix, id string) (convID, msgID string, ok bool) {
	h, found := strings.CutPrefix(id, prefix)
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

// ResponseRecord is what a stored response keeps besides its messages.
type ResponseRecord struct {
	// Previous is the output message of the response this one continued;
	// empty for the first of a chain.
	Previous string `json:"previous,omitempty"`
	// Inputs are this response's input messages, in order.
	Inputs []string `json:"inputs"`
	// Response is the surface's response object as created (its JSON,
	// opaque to the core).
	Response json.RawMessage `json:"response"`
}

// StoredResponse is a stored response with the conversation it is in.
type StoredResponse struct {
	Conversation store.Conversation
	Messages     []store.Message // the conversation's messages, oldest first
	Output       store.Message   // the response's output message
	Record       ResponseRecord
}

var (
	// ErrNoResponse is a response that is not the caller's: none, or
	// another user's (which looks the same).
	ErrNoResponse = errors.New("no such stored response")
	// ErrBrokenChain reports a chain with a response deleted from it.
	ErrBrokenChain = errors.New("a response of the chain was deleted")
)

// maxChainMessages bounds the messages read to find a stored response and
// its chain.
const maxChainMessages = 10_000

// LoadResponse finds the caller's stored response whose output message is
// outputID in conversation convID: ErrNoResponse if there is none.
// Conversations.Get is the ownership check.
func (c *Core) LoadResponse(ctx context.Context, userID, convID, outputID string) (*StoredResponse, error) {
	conv, err := c.Conversations.Get(ctx, userID, convID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoResponse
	} else if err != nil {
		return nil, apierr.Internal()
	}
	s := &StoredResponse{Conversation: conv}
	cursor := ""
	for len(s.Messages) < maxChainMessages {
		page, next, err := c.Messages.List(ctx, convID, store.PageRequest{Size: 1000, Cursor: cursor})
		if err != nil {
			return nil, apierr.Internal()
		}
		s.Messages = append(s.Messages, page...)
		if cursor = next; next == "" {
			break
		}
	}
	for _, m := range s.Messages {
		if m.ID == outputID {
			if rec, ok := ResponseRecordOf(m); ok {
				s.Output, s.Record = m, rec
				return s, nil
			}
		}
	}
	return nil, ErrNoResponse
}

// ResponseRecordOf reads the response record a message holds, if it is a
// stored response's output.
func ResponseRecordOf(m store.Message) (ResponseRecord, bool) {
	for _, p := range m.Parts {
		if p.Meta != "" {
			var rec ResponseRecord
			return rec, json.Unmarshal([]byte(p.Meta), &rec) == nil
		}
	}
	return ResponseRecord{}, false
}

// Chain is the chain that ends with this response, oldest first: each
// response's input messages, then its output. ErrBrokenChain: a response
// of it was deleted.
func (s *StoredResponse) Chain() ([]store.Message, error) {
	byID := make(map[string]store.Message, len(s.Messages))
	for _, m := range s.Messages {
		byID[m.ID] = m
	}
	var segments [][]store.Message
	out, rec := s.Output, s.Record
	for range len(s.Messages) + 1 { // a record naming itself cannot loop for ever
		seg := make([]store.Message, 0, len(rec.Inputs)+1)
		for _, id := range rec.Inputs {
			m, ok := byID[id]
			if !ok {
				return nil, ErrBrokenChain
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
			return nil, ErrBrokenChain
		}
		if rec, ok = ResponseRecordOf(prev); !ok {
			return nil, ErrBrokenChain
		}
		out = prev
	}
	return nil, ErrBrokenChain
}

// SaveResponse stores a response: its input messages, then its output
// message holding rec. The first of a chain (isNew) makes its conversation.
// What cannot be stored whole is not left in part.
func (c *Core) SaveResponse(ctx context.Context, userID string, conv store.Conversation, isNew bool, inputs []store.Message, out store.Message, rec ResponseRecord) error {
	ctx = context.WithoutCancel(ctx) // the generation is paid for: keep it even if the client left
	meta, err := json.Marshal(rec)
	if err != nil {
		return apierr.Internal()
	}
	now := c.Now()
	var parts []store.Part
	for _, m := range inputs {
		parts = append(parts, m.Parts...)
	}
	// Its attachments are kept from now on: the chain may load them again.
	if err := c.Attachments.Reference(ctx, userID, parts); err != nil {
		return err
	}
	if isNew {
		conv.Title = responseTitle(inputs)
		conv.Archived = true
		conv.CreatedAt, conv.UpdatedAt = now, now
		if err := c.Conversations.Create(ctx, conv); err != nil {
			return apierr.Internal()
		}
	}
	var written []store.MessageKey
	undo := func() {
		if isNew {
			_ = c.Conversations.Delete(ctx, userID, conv.ID)
			_ = c.Messages.DeleteConversation(ctx, conv.ID)
			return
		}
		_ = c.Messages.Delete(ctx, conv.ID, written)
	}
	out.Parts = append(out.Parts, store.Part{Meta: string(meta)})
	for i, m := range append(inputs, out) {
		m.ConversationID = conv.ID
		m.CreatedAt = now.Add(time.Duration(i)) // in order within the conversation
		if err := c.Messages.Append(ctx, m); err != nil {
			undo()
			return apierr.Internal()
		}
		written = append(written, store.MessageKey{ID: m.ID, CreatedAt: m.CreatedAt})
	}
	if !isNew {
		_ = c.Conversations.Touch(ctx, userID, conv.ID, now, "")
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

// DeleteResponse removes a stored response: its input messages and its
// output, and the conversation with them when no response is left in it.
// A response that continued this one can no longer be continued.
func (c *Core) DeleteResponse(ctx context.Context, userID string, s *StoredResponse) error {
	gone := map[string]bool{s.Output.ID: true}
	for _, id := range s.Record.Inputs {
		gone[id] = true
	}
	var keys []store.MessageKey
	left := false
	for _, m := range s.Messages {
		if gone[m.ID] {
			keys = append(keys, store.MessageKey{ID: m.ID, CreatedAt: m.CreatedAt})
		} else if _, ok := ResponseRecordOf(m); ok {
			left = true
		}
	}
	if !left {
		if err := c.Conversations.Delete(ctx, userID, s.Conversation.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return apierr.Internal()
		}
		if err := c.Messages.DeleteConversation(ctx, s.Conversation.ID); err != nil {
			return apierr.Internal()
		}
		return nil
	}
	if err := c.Messages.Delete(ctx, s.Conversation.ID, keys); err != nil {
		return apierr.Internal()
	}
	return nil
}

// UpdateResponse rewrites a stored response's output message — a
// background response's, as it ends — with its parts, model, tokens and
// finish reason, holding rec.
func (c *Core) UpdateResponse(ctx context.Context, s *StoredResponse, out store.Message, rec ResponseRecord) error {
	ctx = context.WithoutCancel(ctx)
	meta, err := json.Marshal(rec)
	if err != nil {
		return apierr.Internal()
	}
	m := s.Output
	m.Parts = append(out.Parts, store.Part{Meta: string(meta)})
	m.Model, m.Tokens, m.FinishReason, m.Status = out.Model, out.Tokens, out.FinishReason, out.Status
	if err := c.Messages.Put(ctx, m); err != nil {
		return apierr.Internal()
	}
	return nil
}
