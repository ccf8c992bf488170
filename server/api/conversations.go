package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
)

// ConversationHandler serves ConversationService: the web channel.
type ConversationHandler struct {
	parleyv1connect.UnimplementedConversationServiceHandler
	Core  *chat.Core
	Pages PageTokens
	// Search, Shares and Attachments serve search, share links and export.
	Search      store.ConversationSearch
	Shares      store.Shares
	Attachments store.Attachments
	// Feedback keeps people's ratings of answers (nil: not kept).
	Feedback store.Feedback
	// Prompts keeps people's prompt libraries (nil: not kept).
	Prompts store.Prompts
}

const maxTitle = 200

// CreateConversation starts an empty conversation.
func (h *ConversationHandler) CreateConversation(ctx context.Context, req *connect.Request[parleyv1.CreateConversationRequest]) (*connect.Response[parleyv1.CreateConversationResponse], error) {
	p, _ := auth.FromContext(ctx)
	title, err := checkTitle(req.Msg.GetTitle())
	if err != nil {
		return nil, err
	}
	prompt, err := checkInstructions("system_prompt", req.Msg.GetSystemPrompt())
	if err != nil {
		return nil, err
	}
	model := req.Msg.GetModel()
	if model == "" {
		model = h.Core.Models.All()[0].ID
	} else if _, ok := h.Core.Models.Lookup(model); !ok {
		return nil, apierr.UnknownModel("model", model)
	}
	if id := req.Msg.GetProjectId(); id != "" {
		if h.Core.Projects == nil {
			return nil, apierr.FailedPrecondition("projects are not available on this server")
		}
		if _, err := h.Core.Projects.Get(ctx, p.UserID, id); errors.Is(err, store.ErrNotFound) {
			return nil, apierr.InvalidArgument("project_id", "no such project")
		} else if err != nil {
			return nil, apierr.Store(err)
		}
	}
	now := h.Core.Now()
	c := store.Conversation{ID: uuid.Must(uuid.NewV7()).String(), UserID: p.UserID, Title: title, Model: model, SystemPrompt: prompt,
		ProjectID: req.Msg.GetProjectId(), CreatedAt: now, UpdatedAt: now}
	if err := h.Core.Conversations.Create(ctx, c); err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.CreateConversationResponse{Conversation: h.toProto(ctx, c)}), nil
}

// ListConversations pages through the caller's conversations, newest activity first.
func (h *ConversationHandler) ListConversations(ctx context.Context, req *connect.Request[parleyv1.ListConversationsRequest]) (*connect.Response[parleyv1.ListConversationsResponse], error) {
	p, _ := auth.FromContext(ctx)
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	filter := store.ConversationFilter{ProjectID: req.Msg.GetProjectId()}
	list := "conversations:" + req.Msg.GetArchived().String()
	switch req.Msg.GetArchived() {
	case parleyv1.ArchivedFilter_ARCHIVED_FILTER_UNSPECIFIED, parleyv1.ArchivedFilter_ARCHIVED_FILTER_ACTIVE:
		filter.Archived = store.ArchiveActive
		list = "conversations:active"
	case parleyv1.ArchivedFilter_ARCHIVED_FILTER_ARCHIVED:
		filter.Archived = store.ArchiveArchived
	case parleyv1.ArchivedFilter_ARCHIVED_FILTER_ALL:
		filter.Archived = store.ArchiveAll
	default:
		return nil, apierr.InvalidArgument("archived", "unknown filter")
	}
	if filter.ProjectID != "" {
		list += ":project:" + filter.ProjectID
	}
	cursor, err := h.Pages.Open(p.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	convs, next, err := h.Core.Conversations.List(store.AllowStale(ctx), p.UserID, filter, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, apierr.Store(err)
	}
	res := &parleyv1.ListConversationsResponse{NextPageToken: h.Pages.Seal(p.UserID, list, next)}
	for _, c := range convs {
		res.Conversations = append(res.Conversations, h.toProto(ctx, c))
	}
	return connect.NewResponse(res), nil
}

// GetConversation returns one of the caller's conversations.
func (h *ConversationHandler) GetConversation(ctx context.Context, req *connect.Request[parleyv1.GetConversationRequest]) (*connect.Response[parleyv1.GetConversationResponse], error) {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetConversationResponse{Conversation: h.toProto(ctx, c)}), nil
}

// ListMessages pages through one branch of a conversation's message tree,
// root first: the active one, or the one through leaf_message_id (made
// active with make_current).
func (h *ConversationHandler) ListMessages(ctx context.Context, req *connect.Request[parleyv1.ListMessagesRequest]) (*connect.Response[parleyv1.ListMessagesResponse], error) {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return nil, err
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	if req.Msg.GetMakeCurrent() && req.Msg.GetLeafMessageId() == "" {
		return nil, apierr.InvalidArgument("leaf_message_id", "is required with make_current")
	}
	// A page token holds the branch's leaf and the last message of the
	// previous page, so paging goes on along the same branch even if the
	// active one changes meanwhile.
	list := "messages:" + c.ID
	cursor, err := h.Pages.Open(c.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	through, after := req.Msg.GetLeafMessageId(), ""
	if cursor != "" {
		through, after, _ = strings.Cut(cursor, "/")
	}
	branch, tree, err := h.Core.Branch(ctx, c, through, "leaf_message_id")
	if err != nil {
		return nil, err
	}
	leaf := ""
	if len(branch) > 0 {
		leaf = branch[len(branch)-1].ID
	}
	if req.Msg.GetMakeCurrent() && leaf != c.LeafID {
		if err := h.Core.Conversations.SetLeaf(ctx, c.UserID, c.ID, leaf); err != nil {
			return nil, apierr.Store(err)
		}
	}
	from := 0
	if after != "" {
		from = slices.IndexFunc(branch, func(m store.Message) bool { return m.ID == after }) + 1
		if from == 0 {
			return nil, apierr.InvalidArgument("page_token", "the branch no longer has this page")
		}
	}
	page := branch[from:]
	next := ""
	if len(page) > size {
		page = page[:size]
		next = leaf + "/" + page[size-1].ID
	}
	res := &parleyv1.ListMessagesResponse{NextPageToken: h.Pages.Seal(c.UserID, list, next), LeafMessageId: leaf}
	ratings := h.ratingsOf(ctx, c)
	for _, m := range page {
		pm := messageToProto(m)
		if r, ok := ratings[m.ID]; ok {
			pm.Feedback = ratingToProto(r)
		}
		pm.SiblingMessageIds = tree.Siblings(m.ID)
		pm.SiblingCount = int32(len(pm.SiblingMessageIds))
		pm.SiblingIndex = int32(slices.Index(pm.SiblingMessageIds, m.ID))
		res.Messages = append(res.Messages, pm)
	}
	return connect.NewResponse(res), nil
}

// messageToProto is a stored message as the API shows it.
func messageToProto(m store.Message) *parleyv1.ConversationMessage {
	pm := &parleyv1.ConversationMessage{
		MessageId: m.ID, ConversationId: m.ConversationID, Model: m.Model, Tokens: m.Tokens, ParentMessageId: m.ParentID,
		FinishReason: chat.FinishReasonToProto(llm.FinishReason(m.FinishReason)), CreatedAt: timestamppb.New(m.CreatedAt),
		Status: parleyv1.MessageStatus_MESSAGE_STATUS_COMPLETE,
	}
	switch m.Status {
	case store.MessageInProgress:
		pm.Status = parleyv1.MessageStatus_MESSAGE_STATUS_IN_PROGRESS
	case store.MessageInterrupted:
		pm.Status = parleyv1.MessageStatus_MESSAGE_STATUS_INTERRUPTED
	}
	switch m.Role {
	case "user":
		pm.Role = parleyv1.Role_ROLE_USER
	case "assistant":
		pm.Role = parleyv1.Role_ROLE_ASSISTANT
	case "system":
		pm.Role = parleyv1.Role_ROLE_SYSTEM
	case "tool":
		pm.Role = parleyv1.Role_ROLE_TOOL
	}
	for _, part := range m.Parts {
		switch {
		case part.AttachmentID != "":
			pm.Parts = append(pm.Parts, &parleyv1.Part{Kind: &parleyv1.Part_AttachmentId{AttachmentId: part.AttachmentID}})
		case part.Image != nil:
			pm.Parts = append(pm.Parts, &parleyv1.Part{Kind: &parleyv1.Part_Image{Image: &parleyv1.InlineImage{Data: part.Image.Data, MimeType: part.Image.MimeType}}})
		case part.ToolCall != nil:
			pm.Parts = append(pm.Parts, &parleyv1.Part{Kind: &parleyv1.Part_ToolCall{ToolCall: &parleyv1.ToolCall{
				Id: part.ToolCall.ID, Name: part.ToolCall.Name, Arguments: part.ToolCall.Arguments}}})
		case part.ToolResult != nil:
			pm.Parts = append(pm.Parts, &parleyv1.Part{Kind: &parleyv1.Part_ToolResult{ToolResult: &parleyv1.ToolResult{
				ToolCallId: part.ToolResult.ToolCallID, Content: part.ToolResult.Content}}})
		case part.Citation != nil:
			pm.Parts = append(pm.Parts, &parleyv1.Part{Kind: &parleyv1.Part_Citation{Citation: chat.CitationToProto(*part.Citation)}})
		case part.Meta != "", part.Reasoning != "":
			// A surface's own record, not content (the Responses API's),
			// and a model's reasoning (kept by the Responses API).
		default:
			pm.Parts = append(pm.Parts, &parleyv1.Part{Kind: &parleyv1.Part_Text{Text: part.Text}})
		}
	}
	return pm
}

// UpdateConversation renames or (un)archives a conversation.
func (h *ConversationHandler) UpdateConversation(ctx context.Context, req *connect.Request[parleyv1.UpdateConversationRequest]) (*connect.Response[parleyv1.UpdateConversationResponse], error) {
	p, _ := auth.FromContext(ctx)
	var patch store.ConversationPatch
	if req.Msg.Title != nil {
		title, err := checkTitle(req.Msg.GetTitle())
		if err != nil {
			return nil, err
		}
		patch.Title = &title
	}
	patch.Archived = req.Msg.Archived
	if req.Msg.SystemPrompt != nil {
		prompt, err := checkInstructions("system_prompt", req.Msg.GetSystemPrompt())
		if err != nil {
			return nil, err
		}
		patch.SystemPrompt = &prompt
	}
	patch.Pinned = req.Msg.Pinned
	if req.Msg.Folder != nil {
		folder := strings.TrimSpace(req.Msg.GetFolder())
		if !utf8.ValidString(folder) || utf8.RuneCountInString(folder) > 60 {
			return nil, apierr.InvalidArgument("folder", "must be valid UTF-8 of at most 60 characters (empty: no folder)")
		}
		patch.Folder = &folder
	}
	if patch.Title == nil && patch.Archived == nil && patch.SystemPrompt == nil && patch.Pinned == nil && patch.Folder == nil {
		return nil, apierr.InvalidArgument("title", "give a title, archived, system_prompt, pinned or folder to change")
	}
	if req.Msg.GetConversationId() == "" {
		return nil, apierr.InvalidArgument("conversation_id", "is required")
	}
	c, err := h.Core.Conversations.Update(ctx, p.UserID, req.Msg.GetConversationId(), patch, h.Core.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("conversation")
	} else if err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.UpdateConversationResponse{Conversation: h.toProto(ctx, c)}), nil
}

// DeleteConversation deletes a conversation and its messages, stopping a
// generation in progress.
func (h *ConversationHandler) DeleteConversation(ctx context.Context, req *connect.Request[parleyv1.DeleteConversationRequest]) (*connect.Response[parleyv1.DeleteConversationResponse], error) {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return nil, err
	}
	if err := h.deleteConversation(ctx, c); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.DeleteConversationResponse{}), nil
}

// deleteConversation stops c's generation and deletes it with its messages.
func (h *ConversationHandler) deleteConversation(ctx context.Context, c store.Conversation) error {
	_, _ = h.Core.Cancel(ctx, c.ID)
	if err := h.Core.Conversations.Delete(ctx, c.UserID, c.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return apierr.Store(err)
	}
	if err := h.Core.Messages.DeleteConversation(ctx, c.ID); err != nil {
		return apierr.Store(err)
	}
	return nil
}

// SendMessage adds the caller's message and streams the answer. The answer
// outlives this call: if the client goes away it runs on and is stored, and
// StreamGeneration picks it up again.
func (h *ConversationHandler) SendMessage(ctx context.Context, req *connect.Request[parleyv1.SendMessageRequest], stream *connect.ServerStream[parleyv1.SendMessageResponse]) error {
	parts := make([]store.Part, 0, len(req.Msg.GetParts()))
	for i, part := range req.Msg.GetParts() {
		switch k := part.GetKind().(type) {
		case *parleyv1.Part_Text:
			parts = append(parts, store.Part{Text: k.Text})
		case *parleyv1.Part_AttachmentId:
			parts = append(parts, store.Part{AttachmentID: k.AttachmentId})
		default:
			return apierr.InvalidArgument(fmt.Sprintf("parts[%d]", i), "must be text or attachment_id on the web channel")
		}
	}
	convID, err := h.Core.Send(ctx, chat.SendRequest{
		ConversationID: req.Msg.GetConversationId(), Model: req.Msg.GetModel(), Parts: parts, MaxOutputTokens: req.Msg.GetMaxOutputTokens(), Temperature: req.Msg.Temperature,
		ParentID: req.Msg.ParentMessageId, ProjectID: req.Msg.GetProjectId(),
	})
	if err != nil {
		return err
	}
	return h.Core.Follow(ctx, convID, 0, func(ev *parleyv1.GenerationEvent) error {
		return stream.Send(&parleyv1.SendMessageResponse{Event: ev})
	})
}

// RegenerateMessage streams a new version of an assistant message, as
// SendMessage streams an answer (and it, too, outlives this call).
func (h *ConversationHandler) RegenerateMessage(ctx context.Context, req *connect.Request[parleyv1.RegenerateMessageRequest], stream *connect.ServerStream[parleyv1.RegenerateMessageResponse]) error {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return err
	}
	if err := h.Core.Regenerate(ctx, chat.RegenerateRequest{ConversationID: c.ID, MessageID: req.Msg.GetMessageId(),
		Model: req.Msg.GetModel(), MaxOutputTokens: req.Msg.GetMaxOutputTokens(), Temperature: req.Msg.Temperature}); err != nil {
		return err
	}
	return h.Core.Follow(ctx, c.ID, 0, func(ev *parleyv1.GenerationEvent) error {
		return stream.Send(&parleyv1.RegenerateMessageResponse{Event: ev})
	})
}

// ContinueMessage goes on with an answer that stopped at its length limit,
// streaming the added text.
func (h *ConversationHandler) ContinueMessage(ctx context.Context, req *connect.Request[parleyv1.ContinueMessageRequest], stream *connect.ServerStream[parleyv1.ContinueMessageResponse]) error {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return err
	}
	if err := h.Core.Continue(ctx, chat.ContinueRequest{ConversationID: c.ID, MessageID: req.Msg.GetMessageId(),
		MaxOutputTokens: req.Msg.GetMaxOutputTokens(), Temperature: req.Msg.Temperature}); err != nil {
		return err
	}
	return h.Core.Follow(ctx, c.ID, 0, func(ev *parleyv1.GenerationEvent) error {
		return stream.Send(&parleyv1.ContinueMessageResponse{Event: ev})
	})
}

// GetCustomInstructions returns the caller's custom instructions.
func (h *ConversationHandler) GetCustomInstructions(ctx context.Context, _ *connect.Request[parleyv1.GetCustomInstructionsRequest]) (*connect.Response[parleyv1.GetCustomInstructionsResponse], error) {
	p, _ := auth.FromContext(ctx)
	text, err := h.Core.Conversations.Instructions(ctx, p.UserID)
	if err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.GetCustomInstructionsResponse{Instructions: text}), nil
}

// SetCustomInstructions replaces the caller's custom instructions.
func (h *ConversationHandler) SetCustomInstructions(ctx context.Context, req *connect.Request[parleyv1.SetCustomInstructionsRequest]) (*connect.Response[parleyv1.SetCustomInstructionsResponse], error) {
	p, _ := auth.FromContext(ctx)
	text, err := checkInstructions("instructions", req.Msg.GetInstructions())
	if err != nil {
		return nil, err
	}
	if err := h.Core.Conversations.SetInstructions(ctx, p.UserID, text, h.Core.Now()); err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.SetCustomInstructionsResponse{Instructions: text}), nil
}

// StreamGeneration replays a generation's events after after_seq and follows
// it live to the end.
func (h *ConversationHandler) StreamGeneration(ctx context.Context, req *connect.Request[parleyv1.StreamGenerationRequest], stream *connect.ServerStream[parleyv1.StreamGenerationResponse]) error {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return err
	}
	return h.Core.Follow(ctx, c.ID, req.Msg.GetAfterSeq(), func(ev *parleyv1.GenerationEvent) error {
		return stream.Send(&parleyv1.StreamGenerationResponse{Event: ev})
	})
}

// CancelGeneration stops the conversation's generation, from any connection.
func (h *ConversationHandler) CancelGeneration(ctx context.Context, req *connect.Request[parleyv1.CancelGenerationRequest]) (*connect.Response[parleyv1.CancelGenerationResponse], error) {
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return nil, err
	}
	cancelled, err := h.Core.Cancel(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CancelGenerationResponse{Cancelled: cancelled}), nil
}

// own returns the caller's conversation id, or not_found for anyone else's.
func (h *ConversationHandler) own(ctx context.Context, id string) (store.Conversation, error) {
	p, _ := auth.FromContext(ctx)
	if id == "" {
		return store.Conversation{}, apierr.InvalidArgument("conversation_id", "is required")
	}
	c, err := h.Core.Conversations.Get(ctx, p.UserID, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, apierr.NotFound("conversation")
	} else if err != nil {
		return c, apierr.Store(err)
	}
	return c, nil
}

func (h *ConversationHandler) toProto(ctx context.Context, c store.Conversation) *parleyv1.Conversation {
	return &parleyv1.Conversation{
		ConversationId: c.ID, Title: c.Title, Model: c.Model, Archived: c.Archived,
		CreatedAt: timestamppb.New(c.CreatedAt), UpdatedAt: timestamppb.New(c.UpdatedAt),
		Generating: h.Core.Generating(ctx, c.ID), SystemPrompt: c.SystemPrompt, CurrentMessageId: c.LeafID,
		ProjectId: c.ProjectID, TitleGenerated: c.TitleGenerated, Pinned: c.Pinned, Folder: c.Folder,
	}
}

func checkTitle(t string) (string, error) {
	t = strings.TrimSpace(t)
	if !utf8.ValidString(t) || utf8.RuneCountInString(t) > maxTitle {
		return "", apierr.InvalidArgument("title", fmt.Sprintf("must be valid UTF-8 of at most %d characters", maxTitle))
	}
	return t, nil
}

// checkInstructions trims custom instructions or a system prompt and
// checks their length; field names them in the error.
func checkInstructions(field, t string) (string, error) {
	t = strings.TrimSpace(t)
	if !utf8.ValidString(t) {
		return "", apierr.InvalidArgument(field, "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(t); n > chat.MaxInstructions {
		return "", apierr.InvalidArgument(field, fmt.Sprintf("is %d characters, over the limit of %d", n, chat.MaxInstructions))
	}
	return t, nil
}
