// Package batch runs the Batch API: a JSONL file of requests, checked whole
// before anything runs, whose lines then run on the GPU capacity that
// interactive traffic leaves idle, at the batch price, and whose answers and
// failures are written to an output and an error file as OpenAI writes them.
//
// A batch's state lives in the store (store.Batches). Any gateway may run
// any batch: one claims it with a lease it renews while it works, so a
// gateway that dies leaves the batch to another once the lease lapses. Each
// line runs through the same handler as the endpoint it names (the
// compatible surface's, in process, as the batch's owner), marked as a
// batch line (chat.WithBatchLine): it is scheduled at llm.PriorityIdle —
// it takes a worker only when one has slots to spare beyond a reserve kept
// for interactive arrivals, and is never queued — and as the window's end
// nears at llm.PriorityBackground, queued below every interactive request.
// A line is held, charged and recorded under its own id on every attempt,
// and its result is stored once (store.Batches.FinishBatchLine), so a line
// run again after a crash is charged once and answered once.
package batch

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/blob"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// Endpoints are the endpoints a batch may call.
var Endpoints = []string{"/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions"}

// Files is what the service needs of the Files API (attach.Service).
type Files interface {
	// File returns the caller's file, or not_found.
	File(ctx context.Context, userID, id string) (store.Attachment, error)
	// OpenFile returns the caller's ready file and its bytes.
	OpenFile(ctx context.Context, userID, id string) (store.Attachment, blob.Object, error)
	// WriteFile stores a file the server writes for its owner.
	WriteFile(ctx context.Context, userID, filename, purpose string, data []byte) (store.Attachment, error)
}

// Notifier is told of events for a user's webhooks (webhook.Service).
type Notifier interface {
	Emit(ctx context.Context, userID, typ, objectID string)
}

// Service creates, runs and reports batches.
type Service struct {
	Store   store.Batches
	Files   Files
	Catalog *models.Catalog
	// Exec serves a line's request as the endpoint it names would, for the
	// principal and batch line in the request's context
	// (compat.BatchHandler).
	Exec http.Handler
	// Events, when set, is told when a batch ends (batch.completed, …):
	// the webhooks.
	Events Notifier
	// IdleSlots, when set, says how many lines of a model the workers
	// would take on idle capacity now (scheduler.IdleSlots): lines are
	// sent only while it is positive, instead of being sent and refused.
	IdleSlots func(model string) int
	// Keys, when set, reads the key a batch was made with: the lines of an
	// organisation's key are held against its budgets and keep to its
	// models and rates, as the key's own requests do.
	Keys   func(ctx context.Context, keyID string) (store.APIKey, error)
	Config Config
	Logger *slog.Logger
	Now    func() time.Time

	wake chan struct{}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// CreateRequest is a new batch as a caller asks for it.
type CreateRequest struct {
	InputFileID, Endpoint, CompletionWindow string
	Metadata                                map[string]string
}

// Create checks and stores a batch of the caller's input file, status
// validating, and wakes the runner.
func (s *Service) Create(ctx context.Context, req CreateRequest) (store.Batch, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return store.Batch{}, apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return store.Batch{}, apierr.FailedPrecondition("batches are not available on this server")
	}
	switch {
	case req.InputFileID == "":
		return store.Batch{}, apierr.InvalidArgument("input_file_id", "is required: a file uploaded with purpose batch")
	case !validEndpoint(req.Endpoint):
		return store.Batch{}, apierr.InvalidArgument("endpoint", fmt.Sprintf("%q is not one of %v", req.Endpoint, Endpoints))
	case req.CompletionWindow != "" && req.CompletionWindow != "24h":
		return store.Batch{}, apierr.InvalidArgument("completion_window", fmt.Sprintf("%q: the only window is 24h", req.CompletionWindow))
	}
	if err := knowledge.CheckMetadata(req.Metadata); err != nil {
		return store.Batch{}, err
	}
	f, err := s.Files.File(ctx, p.UserID, req.InputFileID)
	if err != nil {
		return store.Batch{}, err
	}
	if f.Purpose != "batch" {
		return store.Batch{}, apierr.InvalidArgument("input_file_id", fmt.Sprintf("file %s has purpose %q; a batch's input is uploaded with purpose batch", f.ID, f.Purpose))
	}
	now := s.now()
	b := store.Batch{ID: newID(), UserID: p.UserID, APIKeyID: p.KeyID, Endpoint: req.Endpoint, InputFileID: f.ID,
		CompletionWindow: "24h", Status: store.BatchValidating, Metadata: req.Metadata, CreatedAt: now,
		ExpiresAt: now.Add(s.Config.window())}
	if err := s.Store.CreateBatch(ctx, b); err != nil {
		return store.Batch{}, s.internal(ctx, "creating a batch", err)
	}
	s.Wake()
	return b, nil
}

func validEndpoint(e string) bool {
	for _, x := range Endpoints {
		if e == x {
			return true
		}
	}
	return false
}

// newID is a batch's id: "batch_" and 32 hex digits (a UUIDv7's).
func newID() string {
	u := uuid.Must(uuid.NewV7())
	return "batch_" + hex.EncodeToString(u[:])
}

// Get returns the caller's batch.
func (s *Service) Get(ctx context.Context, id string) (store.Batch, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return store.Batch{}, apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return store.Batch{}, apierr.FailedPrecondition("batches are not available on this server")
	}
	b, err := s.Store.GetBatch(ctx, p.UserID, id)
	if errors.Is(err, store.ErrNotFound) {
		return b, apierr.NotFound("batch")
	} else if err != nil {
		return b, s.internal(ctx, "reading a batch", err)
	}
	return b, nil
}

// List lists the caller's batches, newest first.
func (s *Service) List(ctx context.Context, page store.PageRequest) ([]store.Batch, string, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, "", apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return nil, "", apierr.FailedPrecondition("batches are not available on this server")
	}
	out, next, err := s.Store.ListBatches(ctx, p.UserID, page)
	if errors.Is(err, store.ErrInvalidArgument) {
		return nil, "", apierr.InvalidArgument("after", "is not a batch id of this list")
	} else if err != nil {
		return nil, "", s.internal(ctx, "listing batches", err)
	}
	return out, next, nil
}

// Cancel stops the caller's batch: no line starts from now; the runner
// ends it as cancelled.
func (s *Service) Cancel(ctx context.Context, id string) (store.Batch, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return store.Batch{}, apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return store.Batch{}, apierr.FailedPrecondition("batches are not available on this server")
	}
	b, err := s.Store.CancelBatch(ctx, p.UserID, id, s.now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return b, apierr.NotFound("batch")
	case errors.Is(err, store.ErrConflict):
		cur, _ := s.Store.GetBatch(ctx, p.UserID, id)
		return b, apierr.FailedPrecondition(fmt.Sprintf("the batch is %s: only a validating or in-progress batch can be cancelled", cur.Status))
	case err != nil:
		return b, s.internal(ctx, "cancelling a batch", err)
	}
	s.Wake()
	return b, nil
}

func (s *Service) internal(ctx context.Context, what string, err error) error {
	s.logger().ErrorContext(ctx, what, "err", err)
	return apierr.Internal()
}

// Open lists every user's batches that have not ended, oldest first, at
// most limit: the admin's view.
func (s *Service) Open(ctx context.Context, limit int) ([]store.Batch, error) {
	if s == nil || s.Store == nil {
		return nil, apierr.FailedPrecondition("batches are not available on this server")
	}
	out, err := s.Store.ListOpenBatches(ctx, limit)
	if err != nil {
		return nil, s.internal(ctx, "listing open batches", err)
	}
	return out, nil
}

// CancelAny cancels any user's batch: an admin's cancel, logged with the
// admin's id.
func (s *Service) CancelAny(ctx context.Context, id string) (store.Batch, error) {
	if s == nil || s.Store == nil {
		return store.Batch{}, apierr.FailedPrecondition("batches are not available on this server")
	}
	if id == "" {
		return store.Batch{}, apierr.InvalidArgument("batch_id", "is required")
	}
	b, err := s.Store.GetBatch(ctx, "", id)
	if errors.Is(err, store.ErrNotFound) {
		return b, apierr.NotFound("batch")
	} else if err != nil {
		return b, s.internal(ctx, "reading a batch", err)
	}
	admin, _ := auth.FromContext(ctx)
	s.logger().InfoContext(ctx, "an admin cancels a batch", "batch", id, "owner", b.UserID, "admin", admin.UserID)
	return s.Cancel(auth.WithPrincipal(ctx, auth.Principal{UserID: b.UserID, Channel: admin.Channel}), id)
}
