package api

import (
	"context"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// maxOpenBatches bounds AdminService.ListOpenBatches.
const maxOpenBatches = 200

// ListOpenBatches lists every user's batches that have not ended.
func (h *AdminHandler) ListOpenBatches(ctx context.Context, _ *connect.Request[parleyv1.ListOpenBatchesRequest]) (*connect.Response[parleyv1.ListOpenBatchesResponse], error) {
	open, err := h.Batches.Open(ctx, maxOpenBatches)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListOpenBatchesResponse{OwnerEmails: map[string]string{}}
	emails := map[string]string{}
	for _, b := range open {
		res.Batches = append(res.Batches, requestBatchToProto(b))
		if _, ok := emails[b.UserID]; !ok {
			emails[b.UserID] = ""
			if u, err := h.Auth.UserByID(ctx, b.UserID); err == nil {
				emails[b.UserID] = u.Email
			} else if connect.CodeOf(err) != connect.CodeNotFound {
				return nil, err
			}
		}
		if e := emails[b.UserID]; e != "" {
			res.OwnerEmails[b.ID] = e
		}
	}
	return connect.NewResponse(res), nil
}

// CancelBatch cancels any user's batch.
func (h *AdminHandler) CancelBatch(ctx context.Context, req *connect.Request[parleyv1.AdminServiceCancelBatchRequest]) (*connect.Response[parleyv1.AdminServiceCancelBatchResponse], error) {
	b, err := h.Batches.CancelAny(ctx, req.Msg.GetBatchId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.AdminServiceCancelBatchResponse{Batch: requestBatchToProto(b)}), nil
}
