package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/store"
)

// VectorStoreHandler serves VectorStoreService over server/knowledge, the
// same stores and code as /v1/vector_stores.
type VectorStoreHandler struct {
	// Knowledge is nil where there is no vector index: every method is
	// then failed_precondition.
	Knowledge *knowledge.Service
	Pages     PageTokens
	Now       func() time.Time
}

func (h *VectorStoreHandler) caller(ctx context.Context) (string, error) {
	if h.Knowledge == nil {
		return "", apierr.FailedPrecondition("vector stores are not available on this server")
	}
	p, ok := auth.FromContext(ctx)
	if !ok {
		return "", apierr.Unauthenticated("no credentials")
	}
	return p.UserID, nil
}

func (h *VectorStoreHandler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func chunkingOf(c *parleyv1.Chunking) knowledge.Chunking {
	if c.GetMaxChunkTokens() == 0 && c.GetOverlapTokens() == 0 {
		return knowledge.Auto
	}
	return knowledge.Chunking{Tokens: int(c.GetMaxChunkTokens()), Overlap: int(c.GetOverlapTokens())}
}

func countsToProto(c store.VectorStoreFileCounts) *parleyv1.FileCounts {
	return &parleyv1.FileCounts{InProgress: int64(c.InProgress), Completed: int64(c.Completed), Failed: int64(c.Failed),
		Cancelled: int64(c.Cancelled), Total: int64(c.Total())}
}

var storeStatuses = map[string]parleyv1.VectorStoreStatus{
	knowledge.BatchInProgress: parleyv1.VectorStoreStatus_VECTOR_STORE_STATUS_IN_PROGRESS,
	knowledge.BatchCompleted:  parleyv1.VectorStoreStatus_VECTOR_STORE_STATUS_COMPLETED,
	knowledge.BatchCancelled:  parleyv1.VectorStoreStatus_VECTOR_STORE_STATUS_COMPLETED,
	"expired":                 parleyv1.VectorStoreStatus_VECTOR_STORE_STATUS_EXPIRED,
}

var fileStatuses = map[string]parleyv1.VectorStoreFileStatus{
	store.FileInProgress: parleyv1.VectorStoreFileStatus_VECTOR_STORE_FILE_STATUS_IN_PROGRESS,
	store.FileCompleted:  parleyv1.VectorStoreFileStatus_VECTOR_STORE_FILE_STATUS_COMPLETED,
	store.FileFailed:     parleyv1.VectorStoreFileStatus_VECTOR_STORE_FILE_STATUS_FAILED,
	store.FileCancelled:  parleyv1.VectorStoreFileStatus_VECTOR_STORE_FILE_STATUS_CANCELLED,
}

func vectorStoreToProto(v store.VectorStore, now time.Time) *parleyv1.VectorStore {
	o := &parleyv1.VectorStore{VectorStoreId: v.ID, Name: v.Name, Metadata: v.Metadata, Status: storeStatuses[knowledge.StoreStatus(v, now)],
		FileCounts: countsToProto(v.Counts), UsageBytes: v.UsageBytes, EmbeddingModel: v.EmbeddingModel,
		CreatedAt: timestamppb.New(v.CreatedAt), LastActiveAt: timestamppb.New(v.LastActiveAt)}
	if v.ExpiresAfter > 0 {
		o.ExpiresAfterDays = int32(v.ExpiresAfter / (24 * time.Hour))
		o.ExpiresAt = timestamppb.New(v.ExpiresAt())
	}
	return o
}

func structOf(m map[string]any) *structpb.Struct {
	if len(m) == 0 {
		return nil
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil // attributes are checked on the way in: strings, numbers, booleans
	}
	return s
}

func vectorStoreFileToProto(f store.VectorStoreFile) *parleyv1.VectorStoreFile {
	return &parleyv1.VectorStoreFile{FileId: f.FileID, VectorStoreId: f.StoreID, Status: fileStatuses[f.Status], LastError: f.LastError,
		Attributes: structOf(f.Attributes), Chunking: &parleyv1.Chunking{MaxChunkTokens: int32(f.ChunkTokens), OverlapTokens: int32(f.OverlapTokens)},
		UsageBytes: f.UsageBytes, BatchId: f.BatchID, CreatedAt: timestamppb.New(f.CreatedAt)}
}

func batchToProto(b knowledge.FileBatch) *parleyv1.FileBatch {
	return &parleyv1.FileBatch{BatchId: b.ID, VectorStoreId: b.StoreID, Status: storeStatuses[b.Status], FileCounts: countsToProto(b.Counts),
		CreatedAt: timestamppb.New(b.CreatedAt)}
}

func storeNotFound(err error) error {
	if err != nil && errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("vector store")
	}
	return err
}

// CreateVectorStore makes a store with files to ingest.
func (h *VectorStoreHandler) CreateVectorStore(ctx context.Context, req *connect.Request[parleyv1.CreateVectorStoreRequest]) (*connect.Response[parleyv1.CreateVectorStoreResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	if err := knowledge.CheckMetadata(m.GetMetadata()); err != nil {
		return nil, err
	}
	v := store.VectorStore{Name: m.GetName(), Metadata: m.GetMetadata()}
	if d := m.GetExpiresAfterDays(); d != 0 {
		if v.ExpiresAfter, err = knowledge.ExpiryDays("expires_after_days", int64(d)); err != nil {
			return nil, err
		}
	}
	if len(m.GetFileIds()) > knowledge.MaxFilesPerBatch {
		return nil, apierr.InvalidArgument("file_ids", fmt.Sprintf("%d files; at most %d (add more with AddFiles)", len(m.GetFileIds()), knowledge.MaxFilesPerBatch))
	}
	files := make([]knowledge.NewFile, len(m.GetFileIds()))
	for i, id := range m.GetFileIds() {
		files[i] = knowledge.NewFile{FileID: id, Chunking: chunkingOf(m.GetChunking())}
	}
	created, err := h.Knowledge.CreateStore(ctx, userID, v, files)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateVectorStoreResponse{VectorStore: vectorStoreToProto(created, h.now())}), nil
}

// ListVectorStores lists the caller's stores, newest first.
func (h *VectorStoreHandler) ListVectorStores(ctx context.Context, req *connect.Request[parleyv1.ListVectorStoresRequest]) (*connect.Response[parleyv1.ListVectorStoresResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	cursor, err := h.Pages.Open(userID, "vector_stores", req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	items, next, err := h.Knowledge.Stores.ListVectorStores(ctx, userID, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListVectorStoresResponse{}
	now := h.now()
	for _, v := range items {
		res.VectorStores = append(res.VectorStores, vectorStoreToProto(v, now))
	}
	if next != "" {
		res.NextPageToken = h.Pages.Seal(userID, "vector_stores", next)
	}
	return connect.NewResponse(res), nil
}

// GetVectorStore returns a store with its file counts.
func (h *VectorStoreHandler) GetVectorStore(ctx context.Context, req *connect.Request[parleyv1.GetVectorStoreRequest]) (*connect.Response[parleyv1.GetVectorStoreResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := h.Knowledge.Stores.GetVectorStore(ctx, userID, req.Msg.GetVectorStoreId())
	if err != nil {
		return nil, storeNotFound(err)
	}
	return connect.NewResponse(&parleyv1.GetVectorStoreResponse{VectorStore: vectorStoreToProto(v, h.now())}), nil
}

// UpdateVectorStore changes a store's name, metadata or expiry.
func (h *VectorStoreHandler) UpdateVectorStore(ctx context.Context, req *connect.Request[parleyv1.UpdateVectorStoreRequest]) (*connect.Response[parleyv1.UpdateVectorStoreResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	var meta map[string]string
	if m.GetReplaceMetadata() {
		if meta = m.GetMetadata(); meta == nil {
			meta = map[string]string{}
		}
		if err := knowledge.CheckMetadata(meta); err != nil {
			return nil, err
		}
	} else if len(m.GetMetadata()) > 0 {
		return nil, apierr.InvalidArgument("replace_metadata", "must be set to change metadata (it replaces all of it)")
	}
	var exp *time.Duration
	if m.ExpiresAfterDays != nil {
		var d time.Duration
		if m.GetExpiresAfterDays() != 0 {
			if d, err = knowledge.ExpiryDays("expires_after_days", int64(m.GetExpiresAfterDays())); err != nil {
				return nil, err
			}
		}
		exp = &d
	}
	v, err := h.Knowledge.Stores.UpdateVectorStore(ctx, userID, m.GetVectorStoreId(), m.Name, meta, exp, h.now())
	if err != nil {
		return nil, storeNotFound(err)
	}
	return connect.NewResponse(&parleyv1.UpdateVectorStoreResponse{VectorStore: vectorStoreToProto(v, h.now())}), nil
}

// DeleteVectorStore deletes a store and its chunks.
func (h *VectorStoreHandler) DeleteVectorStore(ctx context.Context, req *connect.Request[parleyv1.DeleteVectorStoreRequest]) (*connect.Response[parleyv1.DeleteVectorStoreResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.Knowledge.DeleteStore(ctx, userID, req.Msg.GetVectorStoreId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.DeleteVectorStoreResponse{}), nil
}

// AddFiles adds files to a store as one batch.
func (h *VectorStoreHandler) AddFiles(ctx context.Context, req *connect.Request[parleyv1.AddFilesRequest]) (*connect.Response[parleyv1.AddFilesResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	files := make([]knowledge.NewFile, len(req.Msg.GetFiles()))
	for i, f := range req.Msg.GetFiles() {
		files[i] = knowledge.NewFile{FileID: f.GetFileId(), Attributes: f.GetAttributes().AsMap(), Chunking: chunkingOf(f.GetChunking())}
	}
	b, rows, err := h.Knowledge.AddBatch(ctx, userID, req.Msg.GetVectorStoreId(), files)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.AddFilesResponse{Batch: batchToProto(b)}
	for _, r := range rows {
		res.Files = append(res.Files, vectorStoreFileToProto(r))
	}
	return connect.NewResponse(res), nil
}

// ListVectorStoreFiles lists a store's files, newest first.
func (h *VectorStoreHandler) ListVectorStoreFiles(ctx context.Context, req *connect.Request[parleyv1.ListVectorStoreFilesRequest]) (*connect.Response[parleyv1.ListVectorStoreFilesResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	size, err := PageSize(m.GetPageSize())
	if err != nil {
		return nil, err
	}
	list := "vector_store_files/" + m.GetVectorStoreId()
	cursor, err := h.Pages.Open(userID, list, m.GetPageToken())
	if err != nil {
		return nil, err
	}
	filter := store.VectorStoreFilter{BatchID: m.GetBatchId()}
	if st := m.GetStatus(); st != parleyv1.VectorStoreFileStatus_VECTOR_STORE_FILE_STATUS_UNSPECIFIED {
		for name, v := range fileStatuses {
			if v == st {
				filter.Status = name
			}
		}
		if filter.Status == "" {
			return nil, apierr.InvalidArgument("status", "is not a known status")
		}
	}
	if _, err := h.Knowledge.Stores.GetVectorStore(ctx, userID, m.GetVectorStoreId()); err != nil {
		return nil, storeNotFound(err)
	}
	items, next, err := h.Knowledge.Stores.ListVectorStoreFiles(ctx, userID, m.GetVectorStoreId(), filter, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, storeNotFound(err)
	}
	res := &parleyv1.ListVectorStoreFilesResponse{}
	for _, f := range items {
		res.Files = append(res.Files, vectorStoreFileToProto(f))
	}
	if next != "" {
		res.NextPageToken = h.Pages.Seal(userID, list, next)
	}
	return connect.NewResponse(res), nil
}

// GetVectorStoreFile returns a file's place in a store.
func (h *VectorStoreHandler) GetVectorStoreFile(ctx context.Context, req *connect.Request[parleyv1.GetVectorStoreFileRequest]) (*connect.Response[parleyv1.GetVectorStoreFileResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	f, err := h.Knowledge.Stores.GetVectorStoreFile(ctx, userID, req.Msg.GetVectorStoreId(), req.Msg.GetFileId())
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, apierr.NotFound("vector store file")
		}
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetVectorStoreFileResponse{File: vectorStoreFileToProto(f)}), nil
}

// UpdateVectorStoreFile replaces a file's attributes in a store.
func (h *VectorStoreHandler) UpdateVectorStoreFile(ctx context.Context, req *connect.Request[parleyv1.UpdateVectorStoreFileRequest]) (*connect.Response[parleyv1.UpdateVectorStoreFileResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	f, err := h.Knowledge.SetAttributes(ctx, userID, req.Msg.GetVectorStoreId(), req.Msg.GetFileId(), req.Msg.GetAttributes().AsMap())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.UpdateVectorStoreFileResponse{File: vectorStoreFileToProto(f)}), nil
}

// RemoveFile takes a file out of a store.
func (h *VectorStoreHandler) RemoveFile(ctx context.Context, req *connect.Request[parleyv1.RemoveFileRequest]) (*connect.Response[parleyv1.RemoveFileResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.Knowledge.RemoveFile(ctx, userID, req.Msg.GetVectorStoreId(), req.Msg.GetFileId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.RemoveFileResponse{}), nil
}

// GetFileBatch returns a batch's counts and status.
func (h *VectorStoreHandler) GetFileBatch(ctx context.Context, req *connect.Request[parleyv1.GetFileBatchRequest]) (*connect.Response[parleyv1.GetFileBatchResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	b, err := h.Knowledge.Batch(ctx, userID, req.Msg.GetVectorStoreId(), req.Msg.GetBatchId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetFileBatchResponse{Batch: batchToProto(b)}), nil
}

// CancelFileBatch cancels a batch's files not yet ingested.
func (h *VectorStoreHandler) CancelFileBatch(ctx context.Context, req *connect.Request[parleyv1.CancelFileBatchRequest]) (*connect.Response[parleyv1.CancelFileBatchResponse], error) {
	userID, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	b, err := h.Knowledge.CancelBatch(ctx, userID, req.Msg.GetVectorStoreId(), req.Msg.GetBatchId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CancelFileBatchResponse{Batch: batchToProto(b)}), nil
}

var comparisonOps = map[parleyv1.AttributeFilter_ComparisonOp]string{
	parleyv1.AttributeFilter_COMPARISON_OP_EQ: "eq", parleyv1.AttributeFilter_COMPARISON_OP_NE: "ne",
	parleyv1.AttributeFilter_COMPARISON_OP_GT: "gt", parleyv1.AttributeFilter_COMPARISON_OP_GTE: "gte",
	parleyv1.AttributeFilter_COMPARISON_OP_LT: "lt", parleyv1.AttributeFilter_COMPARISON_OP_LTE: "lte",
}

// filterOf reads a filter; the operators' names are those the index checks
// (store.AttributeFilter.Validate), "" where unset.
func filterOf(f *parleyv1.AttributeFilter, path string) (*store.AttributeFilter, error) {
	switch x := f.GetFilter().(type) {
	case *parleyv1.AttributeFilter_Comparison_:
		c := x.Comparison
		op, ok := comparisonOps[c.GetOp()]
		if !ok {
			return nil, apierr.InvalidArgument(path+".comparison.op", "must be set")
		}
		return &store.AttributeFilter{Op: op, Key: c.GetKey(), Value: c.GetValue().AsInterface()}, nil
	case *parleyv1.AttributeFilter_Compound:
		out := &store.AttributeFilter{}
		switch x.Compound.GetOp() {
		case parleyv1.AttributeFilter_COMPOUND_OP_AND:
			out.Op = "and"
		case parleyv1.AttributeFilter_COMPOUND_OP_OR:
			out.Op = "or"
		default:
			return nil, apierr.InvalidArgument(path+".compound.op", "must be set")
		}
		for i, sub := range x.Compound.GetFilters() {
			s, err := filterOf(sub, fmt.Sprintf("%s.compound.filters[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out.Filters = append(out.Filters, *s)
		}
		return out, nil
	}
	return nil, apierr.InvalidArgument(path, "must be a comparison or a compound")
}

// SearchVectorStores finds the passages that best answer a query.
func (h *VectorStoreHandler) SearchVectorStores(ctx context.Context, req *connect.Request[parleyv1.SearchVectorStoresRequest]) (*connect.Response[parleyv1.SearchVectorStoresResponse], error) {
	if _, err := h.caller(ctx); err != nil {
		return nil, err
	}
	m := req.Msg
	q := knowledge.Query{StoreIDs: m.GetVectorStoreIds(), Text: m.GetQuery(), Limit: int(m.GetMaxNumResults()), MinScore: m.GetScoreThreshold()}
	if m.GetEmbeddingWeight() != 0 || m.GetTextWeight() != 0 {
		q.Weights = &knowledge.Weights{EmbeddingWeight: m.GetEmbeddingWeight(), TextWeight: m.GetTextWeight()}
	}
	if m.GetFilter() != nil {
		f, err := filterOf(m.GetFilter(), "filter")
		if err != nil {
			return nil, err
		}
		q.Filter = f
	}
	found, err := h.Knowledge.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.SearchVectorStoresResponse{}
	for _, r := range found {
		res.Results = append(res.Results, &parleyv1.SearchResult{FileId: r.FileID, Filename: r.Filename, VectorStoreId: r.StoreID,
			Score: r.Score, Text: r.Text, Attributes: structOf(r.Attributes), ChunkIndex: int32(r.Ordinal)})
	}
	return connect.NewResponse(res), nil
}
