package api

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/batch"
	"github.com/parleyhq/parley/server/store"
)

// BatchHandler serves BatchService over the batch service (server/batch),
// the same batches as /v1/batches.
type BatchHandler struct {
	Batches *batch.Service
	Pages   PageTokens
}

var batchStatuses = map[string]parleyv1.BatchStatus{
	store.BatchValidating: parleyv1.BatchStatus_BATCH_STATUS_VALIDATING, store.BatchInProgress: parleyv1.BatchStatus_BATCH_STATUS_IN_PROGRESS,
	store.BatchFinalizing: parleyv1.BatchStatus_BATCH_STATUS_FINALIZING, store.BatchCompleted: parleyv1.BatchStatus_BATCH_STATUS_COMPLETED,
	store.BatchFailed: parleyv1.BatchStatus_BATCH_STATUS_FAILED, store.BatchExpired: parleyv1.BatchStatus_BATCH_STATUS_EXPIRED,
	store.BatchCancelling: parleyv1.BatchStatus_BATCH_STATUS_CANCELLING, store.BatchCancelled: parleyv1.BatchStatus_BATCH_STATUS_CANCELLED,
}

func timeOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func requestBatchToProto(b store.Batch) *parleyv1.Batch {
	pb := &parleyv1.Batch{Id: b.ID, Endpoint: b.Endpoint, InputFileId: b.InputFileID, CompletionWindow: b.CompletionWindow,
		Status: batchStatuses[b.Status], OutputFileId: b.OutputFileID, ErrorFileId: b.ErrorFileID, Metadata: b.Metadata,
		RequestCounts: &parleyv1.BatchRequestCounts{Total: int64(b.Total), Completed: int64(b.Completed), Failed: int64(b.Failed)},
		CreatedAt:     timestamppb.New(b.CreatedAt), InProgressAt: timeOrNil(b.InProgressAt), FinalizingAt: timeOrNil(b.FinalizingAt),
		CompletedAt: timeOrNil(b.CompletedAt), FailedAt: timeOrNil(b.FailedAt), ExpiredAt: timeOrNil(b.ExpiredAt),
		CancellingAt: timeOrNil(b.CancellingAt), CancelledAt: timeOrNil(b.CancelledAt), ExpiresAt: timeOrNil(b.ExpiresAt),
		CostNanos: b.CostNanos}
	for _, e := range b.Errors {
		pb.Errors = append(pb.Errors, &parleyv1.BatchError{Code: e.Code, Message: e.Message, Param: e.Param, Line: int64(e.Line)})
	}
	return pb
}

// CreateBatch checks and queues a batch of the caller's input file.
func (h *BatchHandler) CreateBatch(ctx context.Context, req *connect.Request[parleyv1.CreateBatchRequest]) (*connect.Response[parleyv1.CreateBatchResponse], error) {
	m := req.Msg
	b, err := h.Batches.Create(ctx, batch.CreateRequest{InputFileID: m.GetInputFileId(), Endpoint: m.GetEndpoint(),
		CompletionWindow: m.GetCompletionWindow(), Metadata: m.GetMetadata()})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateBatchResponse{Batch: requestBatchToProto(b)}), nil
}

// GetBatch returns one of the caller's batches.
func (h *BatchHandler) GetBatch(ctx context.Context, req *connect.Request[parleyv1.GetBatchRequest]) (*connect.Response[parleyv1.GetBatchResponse], error) {
	b, err := h.Batches.Get(ctx, req.Msg.GetBatchId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetBatchResponse{Batch: requestBatchToProto(b)}), nil
}

// ListBatches pages through the caller's batches, newest first.
func (h *BatchHandler) ListBatches(ctx context.Context, req *connect.Request[parleyv1.ListBatchesRequest]) (*connect.Response[parleyv1.ListBatchesResponse], error) {
	p, _ := auth.FromContext(ctx)
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	cursor, err := h.Pages.Open(p.UserID, "batches", req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	list, next, err := h.Batches.List(ctx, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListBatchesResponse{NextPageToken: h.Pages.Seal(p.UserID, "batches", next)}
	for _, b := range list {
		res.Batches = append(res.Batches, requestBatchToProto(b))
	}
	return connect.NewResponse(res), nil
}

// CancelBatch stops one of the caller's batches.
func (h *BatchHandler) CancelBatch(ctx context.Context, req *connect.Request[parleyv1.CancelBatchRequest]) (*connect.Response[parleyv1.CancelBatchResponse], error) {
	b, err := h.Batches.Cancel(ctx, req.Msg.GetBatchId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CancelBatchResponse{Batch: requestBatchToProto(b)}), nil
}
