package api

import (
	"context"
	"errors"
	"unicode"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// The bounds of a saved prompt.
const (
	maxPromptName = 64
	maxPromptText = 8000
)

func promptToProto(p store.SavedPrompt) *parleyv1.SavedPrompt {
	return &parleyv1.SavedPrompt{PromptId: p.ID, Name: p.Name, Text: p.Text, UpdateTime: timestamppb.New(p.UpdatedAt)}
}

// ListSavedPrompts lists the caller's prompt library.
func (h *ConversationHandler) ListSavedPrompts(ctx context.Context, _ *connect.Request[parleyv1.ListSavedPromptsRequest]) (*connect.Response[parleyv1.ListSavedPromptsResponse], error) {
	if h.Prompts == nil {
		return nil, apierr.FailedPrecondition("saved prompts are not kept on this server")
	}
	p, _ := auth.FromContext(ctx)
	list, err := h.Prompts.ListPrompts(ctx, p.UserID)
	if err != nil {
		return nil, apierr.Store(err)
	}
	res := &parleyv1.ListSavedPromptsResponse{}
	for _, x := range list {
		res.Prompts = append(res.Prompts, promptToProto(x))
	}
	return connect.NewResponse(res), nil
}

// promptName checks a prompt's name: 1 to 64 letters, digits, - or _.
func promptName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > maxPromptName {
		return apierr.InvalidArgument("name", "must be 1 to 64 letters, digits, - or _")
	}
	for _, r := range name {
		if r != '-' && r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return apierr.InvalidArgument("name", "must be 1 to 64 letters, digits, - or _ (no spaces: it follows / in the message box)")
		}
	}
	return nil
}

// SavePrompt adds a prompt to the caller's library or changes one.
func (h *ConversationHandler) SavePrompt(ctx context.Context, req *connect.Request[parleyv1.SavePromptRequest]) (*connect.Response[parleyv1.SavePromptResponse], error) {
	if h.Prompts == nil {
		return nil, apierr.FailedPrecondition("saved prompts are not kept on this server")
	}
	p, _ := auth.FromContext(ctx)
	if err := promptName(req.Msg.GetName()); err != nil {
		return nil, err
	}
	text := req.Msg.GetText()
	if !utf8.ValidString(text) || text == "" || utf8.RuneCountInString(text) > maxPromptText {
		return nil, apierr.InvalidArgument("text", "must be 1 to 8,000 characters of valid UTF-8")
	}
	sp := store.SavedPrompt{ID: req.Msg.GetPromptId(), UserID: p.UserID, Name: req.Msg.GetName(), Text: text, UpdatedAt: h.Core.Now().UTC()}
	var err error
	if sp.ID == "" {
		sp.ID = uuid.Must(uuid.NewV7()).String()
		err = h.Prompts.CreatePrompt(ctx, sp)
	} else {
		if _, perr := uuid.Parse(sp.ID); perr != nil {
			return nil, apierr.InvalidArgument("prompt_id", "is not a prompt id")
		}
		err = h.Prompts.UpdatePrompt(ctx, sp)
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		return nil, apierr.AlreadyExists("a saved prompt named " + sp.Name)
	case errors.Is(err, store.ErrNotFound):
		return nil, apierr.NotFound("saved prompt")
	case errors.Is(err, store.ErrQuotaExceeded):
		return nil, apierr.ResourceExhausted("you keep at most 200 saved prompts: delete one first", 0)
	case err != nil:
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.SavePromptResponse{Prompt: promptToProto(sp)}), nil
}

// DeleteSavedPrompt removes one of the caller's prompts.
func (h *ConversationHandler) DeleteSavedPrompt(ctx context.Context, req *connect.Request[parleyv1.DeleteSavedPromptRequest]) (*connect.Response[parleyv1.DeleteSavedPromptResponse], error) {
	if h.Prompts == nil {
		return nil, apierr.FailedPrecondition("saved prompts are not kept on this server")
	}
	p, _ := auth.FromContext(ctx)
	err := h.Prompts.DeletePrompt(ctx, p.UserID, req.Msg.GetPromptId())
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("saved prompt")
	} else if err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.DeleteSavedPromptResponse{}), nil
}
