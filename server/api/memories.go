package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/store"
)

// MemoryHandler serves MemoryService: what web chat users asked to be
// remembered (server/chat chooses which join a message).
type MemoryHandler struct {
	// Memories is nil where the backend keeps none: every method is then
	// failed_precondition.
	Memories store.Memories
	Pages    PageTokens
	Now      func() time.Time
}

// maxMemoryText bounds one memory, in characters.
const maxMemoryText = 1000

func (h *MemoryHandler) caller(ctx context.Context) (string, error) {
	if h.Memories == nil {
		return "", apierr.FailedPrecondition("memory is not available on this server")
	}
	p, ok := auth.FromContext(ctx)
	if !ok {
		return "", apierr.Unauthenticated("no credentials")
	}
	return p.UserID, nil
}

func checkMemoryText(t string) (string, error) {
	t = strings.TrimSpace(t)
	switch {
	case t == "":
		return "", apierr.InvalidArgument("text", "is required")
	case !utf8.ValidString(t):
		return "", apierr.InvalidArgument("text", "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(t); n > maxMemoryText {
		return "", apierr.InvalidArgument("text", fmt.Sprintf("is %d characters, over the limit of %d", n, maxMemoryText))
	}
	return t, nil
}

func memoryToProto(m store.Memory) *parleyv1.Memory {
	return &parleyv1.Memory{MemoryId: m.ID, Text: m.Text, CreatedAt: timestamppb.New(m.CreatedAt), UpdatedAt: timestamppb.New(m.UpdatedAt)}
}

func memoryError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("memory")
	}
	return apierr.Store(err)
}

// CreateMemory saves a memory.
func (h *MemoryHandler) CreateMemory(ctx context.Context, req *connect.Request[parleyv1.CreateMemoryRequest]) (*connect.Response[parleyv1.CreateMemoryResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	text, err := checkMemoryText(req.Msg.GetText())
	if err != nil {
		return nil, err
	}
	now := h.Now()
	m := store.Memory{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Text: text, CreatedAt: now, UpdatedAt: now}
	if err := h.Memories.Create(ctx, m, chat.MaxMemories); errors.Is(err, store.ErrQuotaExceeded) {
		return nil, apierr.FailedPrecondition(fmt.Sprintf("you have %d memories, the most there can be; delete one first", chat.MaxMemories))
	} else if err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.CreateMemoryResponse{Memory: memoryToProto(m)}), nil
}

// ListMemories pages through the caller's memories.
func (h *MemoryHandler) ListMemories(ctx context.Context, req *connect.Request[parleyv1.ListMemoriesRequest]) (*connect.Response[parleyv1.ListMemoriesResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	cursor, err := h.Pages.Open(userID, "memories", req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	list, next, err := h.Memories.List(ctx, userID, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, apierr.Store(err)
	}
	res := &parleyv1.ListMemoriesResponse{NextPageToken: h.Pages.Seal(userID, "memories", next)}
	for _, m := range list {
		res.Memories = append(res.Memories, memoryToProto(m))
	}
	return connect.NewResponse(res), nil
}

// UpdateMemory replaces a memory's text.
func (h *MemoryHandler) UpdateMemory(ctx context.Context, req *connect.Request[parleyv1.UpdateMemoryRequest]) (*connect.Response[parleyv1.UpdateMemoryResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetMemoryId() == "" {
		return nil, apierr.InvalidArgument("memory_id", "is required")
	}
	text, err := checkMemoryText(req.Msg.GetText())
	if err != nil {
		return nil, err
	}
	m, err := h.Memories.Update(ctx, userID, req.Msg.GetMemoryId(), text, h.Now())
	if err != nil {
		return nil, memoryError(err)
	}
	return connect.NewResponse(&parleyv1.UpdateMemoryResponse{Memory: memoryToProto(m)}), nil
}

// DeleteMemory forgets a memory.
func (h *MemoryHandler) DeleteMemory(ctx context.Context, req *connect.Request[parleyv1.DeleteMemoryRequest]) (*connect.Response[parleyv1.DeleteMemoryResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetMemoryId() == "" {
		return nil, apierr.InvalidArgument("memory_id", "is required")
	}
	if err := h.Memories.Delete(ctx, userID, req.Msg.GetMemoryId()); err != nil {
		return nil, memoryError(err)
	}
	return connect.NewResponse(&parleyv1.DeleteMemoryResponse{}), nil
}

// GetMemorySettings says whether memory is on.
func (h *MemoryHandler) GetMemorySettings(ctx context.Context, _ *connect.Request[parleyv1.GetMemorySettingsRequest]) (*connect.Response[parleyv1.GetMemorySettingsResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	on, err := h.Memories.Enabled(ctx, userID)
	if err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.GetMemorySettingsResponse{Settings: &parleyv1.MemorySettings{Enabled: on}}), nil
}

// UpdateMemorySettings turns memory on or off.
func (h *MemoryHandler) UpdateMemorySettings(ctx context.Context, req *connect.Request[parleyv1.UpdateMemorySettingsRequest]) (*connect.Response[parleyv1.UpdateMemorySettingsResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetSettings() == nil {
		return nil, apierr.InvalidArgument("settings", "is required")
	}
	on := req.Msg.GetSettings().GetEnabled()
	if err := h.Memories.SetEnabled(ctx, userID, on, h.Now()); err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.UpdateMemorySettingsResponse{Settings: &parleyv1.MemorySettings{Enabled: on}}), nil
}
