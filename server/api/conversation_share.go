package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// SharePath is where a share link is read: the web app's route, which
// calls GetSharedConversation.
const SharePath = "/share/"

// maxShareBytes and maxExportBytes bound what one share snapshot (a row
// of the store) and one export (built in memory) hold of messages.
const (
	maxShareBytes  = 16 << 20
	maxExportBytes = 64 << 20
)

// ShareConversation snapshots the caller's conversation under a public id.
func (h *ConversationHandler) ShareConversation(ctx context.Context, req *connect.Request[parleyv1.ShareConversationRequest]) (*connect.Response[parleyv1.ShareConversationResponse], error) {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return nil, err
	}
	msgs, err := h.allMessages(ctx, c.ID, maxShareBytes)
	if err != nil {
		return nil, err
	}
	snap := &parleyv1.SharedConversation{Title: c.Title, Model: c.Model}
	for _, m := range msgs {
		snap.Messages = append(snap.Messages, h.sharedMessage(ctx, c.UserID, m))
	}
	body, err := proto.Marshal(snap)
	if err != nil {
		return nil, apierr.Store(err)
	}
	s, err := h.Shares.Put(ctx, store.Share{ID: newShareID(), UserID: c.UserID, ConversationID: c.ID, Snapshot: body, CreatedAt: h.Core.Now()})
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("conversation")
	} else if err != nil {
		return nil, apierr.Store(err)
	}
	snap.ShareId, snap.SharedAt = s.ID, timestamppb.New(s.CreatedAt)
	return connect.NewResponse(&parleyv1.ShareConversationResponse{ShareId: s.ID, Path: SharePath + s.ID, Shared: snap}), nil
}

// UnshareConversation revokes the conversation's share link.
func (h *ConversationHandler) UnshareConversation(ctx context.Context, req *connect.Request[parleyv1.UnshareConversationRequest]) (*connect.Response[parleyv1.UnshareConversationResponse], error) {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return nil, err
	}
	ok, err := h.Shares.Delete(ctx, c.UserID, c.ID)
	if err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.UnshareConversationResponse{Unshared: ok}), nil
}

// GetSharedConversation reads a share link's snapshot; no credentials.
func (h *ConversationHandler) GetSharedConversation(ctx context.Context, req *connect.Request[parleyv1.GetSharedConversationRequest]) (*connect.Response[parleyv1.GetSharedConversationResponse], error) {
	id := req.Msg.GetShareId()
	if !validShareID(id) {
		return nil, apierr.InvalidArgument("share_id", "is not a share id")
	}
	s, err := h.Shares.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("shared conversation")
	} else if err != nil {
		return nil, apierr.Store(err)
	}
	snap := &parleyv1.SharedConversation{}
	if err := proto.Unmarshal(s.Snapshot, snap); err != nil {
		return nil, apierr.Store(err)
	}
	snap.ShareId, snap.SharedAt = s.ID, timestamppb.New(s.CreatedAt)
	return connect.NewResponse(&parleyv1.GetSharedConversationResponse{Shared: snap}), nil
}

// ExportConversation renders the caller's conversation as a file.
func (h *ConversationHandler) ExportConversation(ctx context.Context, req *connect.Request[parleyv1.ExportConversationRequest]) (*connect.Response[parleyv1.ExportConversationResponse], error) {
	format := req.Msg.GetFormat()
	if format != parleyv1.ExportFormat_EXPORT_FORMAT_MARKDOWN && format != parleyv1.ExportFormat_EXPORT_FORMAT_JSON {
		return nil, apierr.InvalidArgument("format", "must be EXPORT_FORMAT_MARKDOWN or EXPORT_FORMAT_JSON")
	}
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return nil, err
	}
	msgs, err := h.allMessages(ctx, c.ID, maxExportBytes)
	if err != nil {
		return nil, err
	}
	now := h.Core.Now()
	name := fileSlug(c.Title)
	if format == parleyv1.ExportFormat_EXPORT_FORMAT_JSON {
		body, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&parleyv1.ConversationExport{
			Conversation: h.toProto(ctx, c), Messages: msgs, ExportedAt: timestamppb.New(now),
		})
		if err != nil {
			return nil, apierr.Store(err)
		}
		return connect.NewResponse(&parleyv1.ExportConversationResponse{Filename: name + ".json", ContentType: "application/json", Content: body}), nil
	}
	turns := make([]exportTurn, 0, len(msgs))
	for _, m := range msgs {
		sm := h.sharedMessage(ctx, c.UserID, m)
		who := roleTitle(m.GetRole())
		if m.GetModel() != "" {
			who += " (" + m.GetModel() + ")"
		}
		turns = append(turns, exportTurn{Who: who, At: m.GetCreatedAt().AsTime(), Text: sm.Text, Attachments: sm.AttachmentFilenames})
	}
	md := exportMarkdown(c.Title, c.Model, now, turns)
	return connect.NewResponse(&parleyv1.ExportConversationResponse{
		Filename: name + ".md", ContentType: "text/markdown; charset=utf-8", Content: []byte(md),
	}), nil
}

// allMessages reads every message ListMessages would list, page by page,
// so share and export show what the conversation view shows; past
// maxBytes of messages it stops with failed_precondition.
func (h *ConversationHandler) allMessages(ctx context.Context, conversationID string, maxBytes int) ([]*parleyv1.ConversationMessage, error) {
	var out []*parleyv1.ConversationMessage
	token, size := "", 0
	for {
		res, err := h.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{
			ConversationId: conversationID, PageSize: 200, PageToken: token,
		}))
		if err != nil {
			return nil, err
		}
		for _, m := range res.Msg.GetMessages() {
			if size += proto.Size(m); size > maxBytes {
				return nil, apierr.FailedPrecondition(fmt.Sprintf("the conversation is over %d MiB, too large for this", maxBytes>>20))
			}
		}
		out = append(out, res.Msg.GetMessages()...)
		token = res.Msg.GetNextPageToken()
		if token == "" {
			return out, nil
		}
	}
}

// sharedMessage is a message as a share shows it: its text parts, and the
// file names of its attachments (the owner's, looked up as the owner).
func (h *ConversationHandler) sharedMessage(ctx context.Context, userID string, m *parleyv1.ConversationMessage) *parleyv1.SharedMessage {
	sm := &parleyv1.SharedMessage{Role: m.GetRole(), Model: m.GetModel(), CreatedAt: m.GetCreatedAt()}
	var texts []string
	for _, p := range m.GetParts() {
		switch k := p.GetKind().(type) {
		case *parleyv1.Part_Text:
			texts = append(texts, k.Text)
		case *parleyv1.Part_AttachmentId:
			name := "attachment"
			if a, err := h.Attachments.Get(ctx, userID, k.AttachmentId); err == nil && a.Filename != "" {
				name = a.Filename
			}
			sm.AttachmentFilenames = append(sm.AttachmentFilenames, name)
		}
	}
	sm.Text = strings.Join(texts, "\n\n")
	return sm
}

// exportTurn is one message of a Markdown export.
type exportTurn struct {
	Who         string // "Assistant (model)"
	At          time.Time
	Text        string
	Attachments []string // file names
}

// exportMarkdown writes a conversation as Markdown that is inert in any
// viewer: the title, the speakers and the file names are one line each with
// HTML and Markdown punctuation escaped, and each message's text sits in a
// fenced code block whose fence is longer than any run of backticks in it,
// so no message can close its block, inject HTML or forge a "## Assistant"
// turn of its own.
func exportMarkdown(title, model string, now time.Time, turns []exportTurn) string {
	if title == "" {
		title = "Untitled conversation"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n_Exported from Parley on %s · model %s_\n", mdInline(title), now.UTC().Format("2006-01-02 15:04 UTC"), mdInline(model))
	for _, t := range turns {
		fmt.Fprintf(&b, "\n## %s · %s\n\n", mdInline(t.Who), t.At.UTC().Format("2006-01-02 15:04 UTC"))
		if t.Text != "" {
			fence := strings.Repeat("`", max(3, longestRun(t.Text, '`')+1))
			b.WriteString(fence + "text\n" + t.Text + "\n" + fence + "\n")
		}
		for _, f := range t.Attachments {
			fmt.Fprintf(&b, "\n_[attachment: %s]_\n", mdInline(f))
		}
	}
	return b.String()
}

// mdInline is s as literal text on one Markdown line: line breaks become
// spaces, HTML's special characters become entities, and the Markdown
// punctuation that could open a link, an image, code or emphasis is
// backslash-escaped (the rest is inert in the middle of a line).
func mdInline(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case strings.ContainsRune("\\`*_[]", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

func roleTitle(r parleyv1.Role) string {
	switch r {
	case parleyv1.Role_ROLE_USER:
		return "User"
	case parleyv1.Role_ROLE_ASSISTANT:
		return "Assistant"
	case parleyv1.Role_ROLE_SYSTEM:
		return "System"
	case parleyv1.Role_ROLE_TOOL:
		return "Tool"
	}
	return "Message"
}

// newShareID returns 128 random bits in unpadded base64url: 22 characters
// no one can guess.
func newShareID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func validShareID(id string) bool {
	if len(id) != 22 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil
}

// fileSlug makes a download's base name from a title: ASCII letters and
// digits, lower-cased, other runs as one '-', at most 60 characters;
// "conversation" when nothing is left.
func fileSlug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= 60 {
				break
			}
		} else {
			dash = true
		}
	}
	if b.Len() == 0 {
		return "conversation"
	}
	return b.String()
}

// ExportPath is the download route of ExportConversation:
// GET /export/{conversation_id}?format=markdown|json, with the session
// cookie (or an API key), answering the file with a Content-Disposition
// that saves it under its name.
const ExportPath = "GET /export/{conversation_id}"

// ServeExport serves ExportPath over ExportConversation; errors are the
// Connect error JSON with its HTTP status.
func (h *ConversationHandler) ServeExport(w http.ResponseWriter, r *http.Request) {
	format := parleyv1.ExportFormat_EXPORT_FORMAT_UNSPECIFIED
	switch r.URL.Query().Get("format") {
	case "markdown", "md":
		format = parleyv1.ExportFormat_EXPORT_FORMAT_MARKDOWN
	case "json":
		format = parleyv1.ExportFormat_EXPORT_FORMAT_JSON
	}
	res, err := h.ExportConversation(r.Context(), connect.NewRequest(&parleyv1.ExportConversationRequest{
		ConversationId: r.PathValue("conversation_id"), Format: format,
	}))
	if err != nil {
		ce := downloadError(err)
		if ce.Code() == connect.CodeInvalidArgument && format == parleyv1.ExportFormat_EXPORT_FORMAT_UNSPECIFIED {
			ce = apierr.InvalidArgument("format", "must be markdown or json")
		}
		writeDownloadError(w, r, ce)
		return
	}
	downloadHeaders(w.Header(), res.Msg.GetContentType(), res.Msg.GetFilename())
	_, _ = w.Write(res.Msg.GetContent())
}
