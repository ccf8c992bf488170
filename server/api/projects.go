package api

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/store"
)

// ProjectHandler serves ProjectService: the web chat's projects, each with
// its own vector store (its files) in server/knowledge.
type ProjectHandler struct {
	// Projects is nil, or Knowledge is, where the server keeps no projects
	// (no vector index): every method is then failed_precondition.
	Projects  store.Projects
	Knowledge *knowledge.Service
	// Conversations deletes a project's chats with it.
	Conversations *ConversationHandler
	Pages         PageTokens
	Now           func() time.Time
}

// MaxProjects bounds one user's projects.
const MaxProjects = 100

const maxProjectName = 100

func (h *ProjectHandler) caller(ctx context.Context) (string, error) {
	if h.Projects == nil || h.Knowledge == nil {
		return "", apierr.FailedPrecondition("projects are not available on this server (they need a vector index)")
	}
	p, ok := auth.FromContext(ctx)
	if !ok {
		return "", apierr.Unauthenticated("no credentials")
	}
	return p.UserID, nil
}

func checkProjectName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", apierr.InvalidArgument("name", "is required")
	case !utf8.ValidString(name):
		return "", apierr.InvalidArgument("name", "is not valid UTF-8")
	case utf8.RuneCountInString(name) > maxProjectName:
		return "", apierr.InvalidArgument("name", "is over 100 characters")
	}
	return name, nil
}

// toProto is the project with its files' counts, read from its store.
func (h *ProjectHandler) toProto(ctx context.Context, p store.Project) *parleyv1.Project {
	o := &parleyv1.Project{ProjectId: p.ID, Name: p.Name, Instructions: p.Instructions, VectorStoreId: p.VectorStoreID,
		CreatedAt: timestamppb.New(p.CreatedAt), UpdatedAt: timestamppb.New(p.UpdatedAt), FileCounts: countsToProto(store.VectorStoreFileCounts{})}
	if v, err := h.Knowledge.Stores.GetVectorStore(ctx, p.UserID, p.VectorStoreID); err == nil {
		o.FileCounts, o.UsageBytes = countsToProto(v.Counts), v.UsageBytes
	}
	return o
}

func projectNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("project")
	}
	return apierr.Store(err)
}

// CreateProject makes a project and its vector store.
func (h *ProjectHandler) CreateProject(ctx context.Context, req *connect.Request[parleyv1.CreateProjectRequest]) (*connect.Response[parleyv1.CreateProjectResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	name, err := checkProjectName(req.Msg.GetName())
	if err != nil {
		return nil, err
	}
	instructions, err := checkInstructions("instructions", req.Msg.GetInstructions())
	if err != nil {
		return nil, err
	}
	// The store first: a project never names a store that is not there. A
	// project refused at the count leaves the store, deleted again.
	v, err := h.Knowledge.CreateStore(ctx, userID, store.VectorStore{Name: "project: " + name, Web: true}, nil)
	if err != nil {
		return nil, err
	}
	now := h.Now()
	p := store.Project{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Name: name, Instructions: instructions,
		VectorStoreID: v.ID, CreatedAt: now, UpdatedAt: now}
	if err := h.Projects.Create(ctx, p, MaxProjects); err != nil {
		_ = h.Knowledge.DeleteStore(context.WithoutCancel(ctx), userID, v.ID)
		if errors.Is(err, store.ErrQuotaExceeded) {
			return nil, apierr.FailedPrecondition("you have 100 projects, the most there can be; delete one first")
		}
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.CreateProjectResponse{Project: h.toProto(ctx, p)}), nil
}

// ListProjects pages through the caller's projects.
func (h *ProjectHandler) ListProjects(ctx context.Context, req *connect.Request[parleyv1.ListProjectsRequest]) (*connect.Response[parleyv1.ListProjectsResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	cursor, err := h.Pages.Open(userID, "projects", req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	list, next, err := h.Projects.List(ctx, userID, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, apierr.Store(err)
	}
	res := &parleyv1.ListProjectsResponse{NextPageToken: h.Pages.Seal(userID, "projects", next)}
	for _, p := range list {
		res.Projects = append(res.Projects, h.toProto(ctx, p))
	}
	return connect.NewResponse(res), nil
}

func (h *ProjectHandler) own(ctx context.Context, id string) (store.Project, error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return store.Project{}, err
	}
	if id == "" {
		return store.Project{}, apierr.InvalidArgument("project_id", "is required")
	}
	p, err := h.Projects.Get(ctx, userID, id)
	if err != nil {
		return p, projectNotFound(err)
	}
	return p, nil
}

// GetProject returns one of the caller's projects.
func (h *ProjectHandler) GetProject(ctx context.Context, req *connect.Request[parleyv1.GetProjectRequest]) (*connect.Response[parleyv1.GetProjectResponse], error) {
	p, err := h.own(ctx, req.Msg.GetProjectId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetProjectResponse{Project: h.toProto(ctx, p)}), nil
}

// UpdateProject renames a project or replaces its instructions.
func (h *ProjectHandler) UpdateProject(ctx context.Context, req *connect.Request[parleyv1.UpdateProjectRequest]) (*connect.Response[parleyv1.UpdateProjectResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	var patch store.ProjectPatch
	if req.Msg.Name != nil {
		name, err := checkProjectName(req.Msg.GetName())
		if err != nil {
			return nil, err
		}
		patch.Name = &name
	}
	if req.Msg.Instructions != nil {
		instructions, err := checkInstructions("instructions", req.Msg.GetInstructions())
		if err != nil {
			return nil, err
		}
		patch.Instructions = &instructions
	}
	if patch.Name == nil && patch.Instructions == nil {
		return nil, apierr.InvalidArgument("name", "give a name or instructions to change")
	}
	if req.Msg.GetProjectId() == "" {
		return nil, apierr.InvalidArgument("project_id", "is required")
	}
	p, err := h.Projects.Update(ctx, userID, req.Msg.GetProjectId(), patch, h.Now())
	if err != nil {
		return nil, projectNotFound(err)
	}
	return connect.NewResponse(&parleyv1.UpdateProjectResponse{Project: h.toProto(ctx, p)}), nil
}

// DeleteProject deletes the project's chats, then the project, then its
// vector store. A failure part-way leaves a project that a retry deletes.
func (h *ProjectHandler) DeleteProject(ctx context.Context, req *connect.Request[parleyv1.DeleteProjectRequest]) (*connect.Response[parleyv1.DeleteProjectResponse], error) {
	p, err := h.own(ctx, req.Msg.GetProjectId())
	if err != nil {
		return nil, err
	}
	for {
		convs, _, err := h.Conversations.Core.Conversations.List(ctx, p.UserID,
			store.ConversationFilter{ProjectID: p.ID, Archived: store.ArchiveAll}, store.PageRequest{Size: store.MaxPageSize})
		if err != nil {
			return nil, apierr.Store(err)
		}
		if len(convs) == 0 {
			break
		}
		for _, c := range convs {
			if err := h.Conversations.deleteConversation(ctx, c); err != nil {
				return nil, err
			}
		}
	}
	if err := h.Projects.Delete(ctx, p.UserID, p.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, apierr.Store(err)
	}
	if err := h.Knowledge.DeleteStore(ctx, p.UserID, p.VectorStoreID); err != nil && connect.CodeOf(err) != connect.CodeNotFound {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.DeleteProjectResponse{}), nil
}
