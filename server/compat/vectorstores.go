package compat

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/store"
)

// The Vector Stores API (/v1/vector_stores) in OpenAI's wire format, over
// the knowledge service: a store of the caller's files (those of /v1/files),
// ingested in the background, and its search.

type (
	vectorStoreObject struct {
		ID           string            `json:"id"`
		Object       string            `json:"object"`
		CreatedAt    int64             `json:"created_at"`
		Name         string            `json:"name"`
		UsageBytes   int64             `json:"usage_bytes"`
		FileCounts   fileCountsObject  `json:"file_counts"`
		Status       string            `json:"status"`
		ExpiresAfter *expiresAfter     `json:"expires_after"`
		ExpiresAt    *int64            `json:"expires_at"`
		LastActiveAt int64             `json:"last_active_at"`
		Metadata     map[string]string `json:"metadata"`
	}
	fileCountsObject struct {
		InProgress int64 `json:"in_progress"`
		Completed  int64 `json:"completed"`
		Failed     int64 `json:"failed"`
		Cancelled  int64 `json:"cancelled"`
		Total      int64 `json:"total"`
	}
	expiresAfter struct {
		Anchor string `json:"anchor"`
		Days   int64  `json:"days"`
	}
	vectorStoreFileObject struct {
		ID               string           `json:"id"`
		Object           string           `json:"object"`
		UsageBytes       int64            `json:"usage_bytes"`
		CreatedAt        int64            `json:"created_at"`
		VectorStoreID    string           `json:"vector_store_id"`
		Status           string           `json:"status"`
		LastError        *fileError       `json:"last_error"`
		ChunkingStrategy chunkingStrategy `json:"chunking_strategy"`
		Attributes       map[string]any   `json:"attributes"`
	}
	fileError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	chunkingStrategy struct {
		Type   string `json:"type"`
		Static *struct {
			MaxChunkSizeTokens int `json:"max_chunk_size_tokens"`
			ChunkOverlapTokens int `json:"chunk_overlap_tokens"`
		} `json:"static,omitempty"`
	}
	fileBatchObject struct {
		ID            string           `json:"id"`
		Object        string           `json:"object"`
		CreatedAt     int64            `json:"created_at"`
		VectorStoreID string           `json:"vector_store_id"`
		Status        string           `json:"status"`
		FileCounts    fileCountsObject `json:"file_counts"`
	}
)

func toFileCounts(c store.VectorStoreFileCounts) fileCountsObject {
	return fileCountsObject{InProgress: c.InProgress, Completed: c.Completed, Failed: c.Failed, Cancelled: c.Cancelled, Total: c.Total()}
}

func toVectorStore(v store.VectorStore, now time.Time) vectorStoreObject {
	o := vectorStoreObject{ID: v.ID, Object: "vector_store", CreatedAt: v.CreatedAt.Unix(), Name: v.Name, UsageBytes: v.UsageBytes,
		FileCounts: toFileCounts(v.Counts), Status: knowledge.StoreStatus(v, now), LastActiveAt: v.LastActiveAt.Unix(), Metadata: v.Metadata}
	if v.ExpiresAfter > 0 {
		o.ExpiresAfter = &expiresAfter{Anchor: "last_active_at", Days: int64(v.ExpiresAfter / (24 * time.Hour))}
		at := v.ExpiresAt().Unix()
		o.ExpiresAt = &at
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	return o
}

func toVectorStoreFile(f store.VectorStoreFile) vectorStoreFileObject {
	o := vectorStoreFileObject{ID: f.FileID, Object: "vector_store.file", UsageBytes: f.UsageBytes, CreatedAt: f.CreatedAt.Unix(),
		VectorStoreID: f.StoreID, Status: f.Status, Attributes: f.Attributes}
	if f.Status == store.FileFailed {
		o.LastError = &fileError{Code: "server_error", Message: f.LastError}
		if strings.Contains(f.LastError, "not a document") {
			o.LastError.Code = "unsupported_file"
		}
	}
	if f.ChunkTokens == knowledge.AutoChunkTokens && f.OverlapTokens == knowledge.AutoOverlapTokens {
		o.ChunkingStrategy.Type = "static" // auto is reported as the static sizes it chose, as OpenAI does
	} else {
		o.ChunkingStrategy.Type = "static"
	}
	o.ChunkingStrategy.Static = &struct {
		MaxChunkSizeTokens int `json:"max_chunk_size_tokens"`
		ChunkOverlapTokens int `json:"chunk_overlap_tokens"`
	}{f.ChunkTokens, f.OverlapTokens}
	if o.Attributes == nil {
		o.Attributes = map[string]any{}
	}
	return o
}

// caller is the authenticated user, or the error to answer.
func caller(r *http.Request) (string, error) {
	p, ok := auth.FromContext(r.Context())
	if !ok {
		return "", apierr.Unauthenticated("no credentials")
	}
	return p.UserID, nil
}

func (h *openAIHandler) knowledge(w http.ResponseWriter, r *http.Request) (string, bool) {
	if h.Knowledge == nil {
		h.fail(w, r, apierr.FailedPrecondition("vector stores are not available on this server"))
		return "", false
	}
	userID, err := caller(r)
	if err != nil {
		h.fail(w, r, err)
		return "", false
	}
	return userID, true
}

// chunkingFrom reads a chunking_strategy: auto (or absent), or static.
func chunkingFrom(raw json.RawMessage) (knowledge.Chunking, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return knowledge.Auto, nil
	}
	var cs chunkingStrategy
	if err := json.Unmarshal(raw, &cs); err != nil {
		return knowledge.Chunking{}, apierr.InvalidArgument("chunking_strategy", "must be an object")
	}
	switch cs.Type {
	case "auto":
		return knowledge.Auto, nil
	case "static":
		if cs.Static == nil {
			return knowledge.Chunking{}, apierr.InvalidArgument("chunking_strategy.static", "is required with type static")
		}
		c := knowledge.Chunking{Tokens: cs.Static.MaxChunkSizeTokens, Overlap: cs.Static.ChunkOverlapTokens}
		if err := knowledge.CheckChunking(c.Tokens, c.Overlap); err != nil {
			return knowledge.Chunking{}, apierr.InvalidArgument("chunking_strategy.static", err.Error())
		}
		return c, nil
	}
	return knowledge.Chunking{}, apierr.InvalidArgument("chunking_strategy.type", fmt.Sprintf("%q is not auto or static", cs.Type))
}

// expiryFrom reads expires_after: anchor last_active_at, 1 to 365 days.
func expiryFrom(raw json.RawMessage) (*time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var e expiresAfter
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, apierr.InvalidArgument("expires_after", "must be an object")
	}
	if e.Anchor != "last_active_at" {
		return nil, apierr.InvalidArgument("expires_after.anchor", "must be last_active_at")
	}
	d, err := knowledge.ExpiryDays("expires_after.days", e.Days)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

var vectorStoreParams = map[string]bool{"name": true, "file_ids": true, "expires_after": true, "chunking_strategy": true, "metadata": true}

// description is accepted and not kept (no field of the object shows it).
var vectorStoreHarmless = map[string]func(json.RawMessage) bool{
	"description": func(json.RawMessage) bool { return true },
}

// CreateVectorStore serves POST /v1/vector_stores.
func (h *openAIHandler) CreateVectorStore(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	var req struct {
		Name             string            `json:"name"`
		FileIDs          []string          `json:"file_ids"`
		ExpiresAfter     json.RawMessage   `json:"expires_after"`
		ChunkingStrategy json.RawMessage   `json:"chunking_strategy"`
		Metadata         map[string]string `json:"metadata"`
	}
	if _, err := h.decodeBody(r, vectorStoreParams, vectorStoreHarmless, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	chunking, err := chunkingFrom(req.ChunkingStrategy)
	if err == nil {
		err = knowledge.CheckMetadata(req.Metadata)
	}
	var exp *time.Duration
	if err == nil {
		exp, err = expiryFrom(req.ExpiresAfter)
	}
	if err == nil && len(req.FileIDs) > 500 {
		err = apierr.InvalidArgument("file_ids", fmt.Sprintf("%d files; at most 500 (add more with file_batches)", len(req.FileIDs)))
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := store.VectorStore{Name: req.Name, Metadata: req.Metadata}
	if exp != nil {
		v.ExpiresAfter = *exp
	}
	files := make([]knowledge.NewFile, len(req.FileIDs))
	for i, id := range req.FileIDs {
		files[i] = knowledge.NewFile{FileID: id, Chunking: chunking}
	}
	created, err := h.Knowledge.CreateStore(r.Context(), userID, v, files)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toVectorStore(created, h.Core.Now()))
}

// listPage is a page of an OpenAI list: limit (1 to 100, 20), order (desc,
// the store's; asc is refused), after (the last id of the page before).
type listPage struct {
	limit int
	after string
}

func listPageFrom(r *http.Request) (listPage, error) {
	q := r.URL.Query()
	p := listPage{limit: 20, after: q.Get("after")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return p, apierr.InvalidArgument("limit", "must be 1 to 100")
		}
		p.limit = n
	}
	if o := q.Get("order"); o != "" && o != "desc" {
		return p, apierr.InvalidArgument("order", "only desc (newest first) is supported")
	}
	if q.Get("before") != "" {
		return p, apierr.InvalidArgument("before", "is not supported; page with after")
	}
	return p, nil
}

// maxListScan bounds the items a list reads to find a page's after.
const maxListScan = 10_000

// pageOf reads the page of an id-keyed list that follows p.after, walking
// the store's own pages (fetch) from the start, and says whether more
// follow.
func pageOf[T any](p listPage, id func(T) string, fetch func(store.PageRequest) ([]T, string, error)) ([]T, bool, error) {
	var out []T
	found := p.after == ""
	cursor, seen := "", 0
	for {
		items, next, err := fetch(store.PageRequest{Size: 100, Cursor: cursor})
		if err != nil {
			return nil, false, err
		}
		for _, it := range items {
			seen++
			switch {
			case !found:
				found = id(it) == p.after
			case len(out) == p.limit:
				return out, true, nil
			default:
				out = append(out, it)
			}
		}
		if next == "" || seen >= maxListScan {
			return out, false, nil
		}
		cursor = next
	}
}

type listObject[T any] struct {
	Object  string  `json:"object"`
	Data    []T     `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

func newList[T any](data []T, id func(T) string, more bool) listObject[T] {
	l := listObject[T]{Object: "list", Data: data, HasMore: more}
	if l.Data == nil {
		l.Data = []T{}
	}
	if n := len(data); n > 0 {
		first, last := id(data[0]), id(data[n-1])
		l.FirstID, l.LastID = &first, &last
	}
	return l
}

// ListVectorStores serves GET /v1/vector_stores.
func (h *openAIHandler) ListVectorStores(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	p, err := listPageFrom(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	items, more, err := pageOf(p, func(v store.VectorStore) string { return v.ID }, func(pr store.PageRequest) ([]store.VectorStore, string, error) {
		return h.Knowledge.Stores.ListVectorStores(r.Context(), userID, pr)
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.Core.Now()
	out := make([]vectorStoreObject, len(items))
	for i, v := range items {
		out[i] = toVectorStore(v, now)
	}
	writeJSON(w, newList(out, func(o vectorStoreObject) string { return o.ID }, more))
}

// GetVectorStore serves GET /v1/vector_stores/{id}.
func (h *openAIHandler) GetVectorStore(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	v, err := h.Knowledge.Stores.GetVectorStore(r.Context(), userID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, vectorStoreErr(err))
		return
	}
	writeJSON(w, toVectorStore(v, h.Core.Now()))
}

func vectorStoreErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("vector store")
	}
	return err
}

// ModifyVectorStore serves POST /v1/vector_stores/{id}.
func (h *openAIHandler) ModifyVectorStore(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	var req struct {
		Name         *string           `json:"name"`
		ExpiresAfter json.RawMessage   `json:"expires_after"`
		Metadata     map[string]string `json:"metadata"`
	}
	if _, err := h.decodeBody(r, map[string]bool{"name": true, "expires_after": true, "metadata": true}, nil, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	exp, err := expiryFrom(req.ExpiresAfter)
	if err == nil {
		err = knowledge.CheckMetadata(req.Metadata)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := h.Knowledge.Stores.UpdateVectorStore(r.Context(), userID, r.PathValue("id"), req.Name, req.Metadata, exp, h.Core.Now())
	if err != nil {
		h.fail(w, r, vectorStoreErr(err))
		return
	}
	writeJSON(w, toVectorStore(v, h.Core.Now()))
}

type deletedObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// DeleteVectorStore serves DELETE /v1/vector_stores/{id}: the store, its
// files' place in it and every chunk (the files themselves stay).
func (h *openAIHandler) DeleteVectorStore(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := h.Knowledge.DeleteStore(r.Context(), userID, id); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, deletedObject{ID: id, Object: "vector_store.deleted", Deleted: true})
}

// attributesFrom reads a file's attributes (strings, numbers, booleans).
func attributesFrom(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var attrs map[string]any
	if err := json.Unmarshal(raw, &attrs); err != nil {
		return nil, apierr.InvalidArgument("attributes", "must be an object of strings, numbers and booleans")
	}
	if err := store.ValidateAttributes(attrs); err != nil {
		return nil, apierr.InvalidArgument("attributes", strings.TrimPrefix(err.Error(), store.ErrInvalidArgument.Error()+": attributes: "))
	}
	return attrs, nil
}

// CreateVectorStoreFile serves POST /v1/vector_stores/{id}/files.
func (h *openAIHandler) CreateVectorStoreFile(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	var req struct {
		FileID           string          `json:"file_id"`
		Attributes       json.RawMessage `json:"attributes"`
		ChunkingStrategy json.RawMessage `json:"chunking_strategy"`
	}
	if _, err := h.decodeBody(r, map[string]bool{"file_id": true, "attributes": true, "chunking_strategy": true}, nil, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	f, err := h.newFile(req.FileID, req.Attributes, req.ChunkingStrategy, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rows, err := h.Knowledge.AddFiles(r.Context(), userID, r.PathValue("id"), []knowledge.NewFile{f})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toVectorStoreFile(rows[0]))
}

func (h *openAIHandler) newFile(fileID string, attrs, chunking json.RawMessage, batchID string) (knowledge.NewFile, error) {
	if fileID == "" {
		return knowledge.NewFile{}, apierr.InvalidArgument("file_id", "is required")
	}
	a, err := attributesFrom(attrs)
	if err != nil {
		return knowledge.NewFile{}, err
	}
	c, err := chunkingFrom(chunking)
	if err != nil {
		return knowledge.NewFile{}, err
	}
	return knowledge.NewFile{FileID: fileID, Attributes: a, Chunking: c, BatchID: batchID}, nil
}

// ListVectorStoreFiles serves GET /v1/vector_stores/{id}/files (filter: a
// status).
func (h *openAIHandler) ListVectorStoreFiles(w http.ResponseWriter, r *http.Request) {
	h.listFiles(w, r, "")
}

// ListFileBatchFiles serves GET /v1/vector_stores/{id}/file_batches/{batch_id}/files.
func (h *openAIHandler) ListFileBatchFiles(w http.ResponseWriter, r *http.Request) {
	h.listFiles(w, r, r.PathValue("batch_id"))
}

var fileStatuses = []string{store.FileInProgress, store.FileCompleted, store.FileFailed, store.FileCancelled}

func (h *openAIHandler) listFiles(w http.ResponseWriter, r *http.Request, batchID string) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	p, err := listPageFrom(r)
	status := r.URL.Query().Get("filter")
	if err == nil && status != "" && !slices.Contains(fileStatuses, status) {
		err = apierr.InvalidArgument("filter", "must be in_progress, completed, failed or cancelled")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	storeID := r.PathValue("id")
	if _, err := h.Knowledge.Stores.GetVectorStore(r.Context(), userID, storeID); err != nil {
		h.fail(w, r, vectorStoreErr(err))
		return
	}
	filter := store.VectorStoreFilter{Status: status, BatchID: batchID}
	items, more, err := pageOf(p, func(f store.VectorStoreFile) string { return f.FileID }, func(pr store.PageRequest) ([]store.VectorStoreFile, string, error) {
		return h.Knowledge.Stores.ListVectorStoreFiles(r.Context(), userID, storeID, filter, pr)
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]vectorStoreFileObject, len(items))
	for i, f := range items {
		out[i] = toVectorStoreFile(f)
	}
	writeJSON(w, newList(out, func(o vectorStoreFileObject) string { return o.ID }, more))
}

// GetVectorStoreFile serves GET /v1/vector_stores/{id}/files/{file_id}.
func (h *openAIHandler) GetVectorStoreFile(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	f, err := h.Knowledge.Stores.GetVectorStoreFile(r.Context(), userID, r.PathValue("id"), r.PathValue("file_id"))
	if err != nil {
		h.fail(w, r, fileInStoreErr(err))
		return
	}
	writeJSON(w, toVectorStoreFile(f))
}

func fileInStoreErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("vector store file")
	}
	return err
}

// UpdateVectorStoreFile serves POST /v1/vector_stores/{id}/files/{file_id}:
// its attributes, which its chunks take at once.
func (h *openAIHandler) UpdateVectorStoreFile(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	var req struct {
		Attributes json.RawMessage `json:"attributes"`
	}
	if _, err := h.decodeBody(r, map[string]bool{"attributes": true}, nil, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	attrs, err := attributesFrom(req.Attributes)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f, err := h.Knowledge.SetAttributes(r.Context(), userID, r.PathValue("id"), r.PathValue("file_id"), attrs)
	if err != nil {
		h.fail(w, r, fileInStoreErr(err))
		return
	}
	writeJSON(w, toVectorStoreFile(f))
}

// DeleteVectorStoreFile serves DELETE /v1/vector_stores/{id}/files/{file_id}:
// the file leaves the store with its chunks (the file itself stays).
func (h *openAIHandler) DeleteVectorStoreFile(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	fileID := r.PathValue("file_id")
	if err := h.Knowledge.RemoveFile(r.Context(), userID, r.PathValue("id"), fileID); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, deletedObject{ID: fileID, Object: "vector_store.file.deleted", Deleted: true})
}

// CreateFileBatch serves POST /v1/vector_stores/{id}/file_batches: file_ids
// (with the batch's attributes and chunking) or files (each with its own).
func (h *openAIHandler) CreateFileBatch(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	var req struct {
		FileIDs []string `json:"file_ids"`
		Files   []struct {
			FileID           string          `json:"file_id"`
			Attributes       json.RawMessage `json:"attributes"`
			ChunkingStrategy json.RawMessage `json:"chunking_strategy"`
		} `json:"files"`
		Attributes       json.RawMessage `json:"attributes"`
		ChunkingStrategy json.RawMessage `json:"chunking_strategy"`
	}
	if _, err := h.decodeBody(r, map[string]bool{"file_ids": true, "files": true, "attributes": true, "chunking_strategy": true}, nil, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	var files []knowledge.NewFile
	var err error
	if len(req.FileIDs) > 0 && len(req.Files) > 0 {
		err = apierr.InvalidArgument("files", "give file_ids or files, not both")
	}
	for _, id := range req.FileIDs {
		if err != nil {
			break
		}
		var f knowledge.NewFile
		f, err = h.newFile(id, req.Attributes, req.ChunkingStrategy, "")
		files = append(files, f)
	}
	for _, it := range req.Files {
		if err != nil {
			break
		}
		var f knowledge.NewFile
		f, err = h.newFile(it.FileID, it.Attributes, it.ChunkingStrategy, "")
		files = append(files, f)
	}
	var b knowledge.FileBatch
	if err == nil {
		b, _, err = h.Knowledge.AddBatch(r.Context(), userID, r.PathValue("id"), files)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toFileBatch(b))
}

func toFileBatch(b knowledge.FileBatch) fileBatchObject {
	return fileBatchObject{ID: b.ID, Object: "vector_store.files_batch", CreatedAt: b.CreatedAt.Unix(), VectorStoreID: b.StoreID,
		Status: b.Status, FileCounts: toFileCounts(b.Counts)}
}

// GetFileBatch serves GET /v1/vector_stores/{id}/file_batches/{batch_id}.
func (h *openAIHandler) GetFileBatch(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	b, err := h.Knowledge.Batch(r.Context(), userID, r.PathValue("id"), r.PathValue("batch_id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toFileBatch(b))
}

// CancelFileBatch serves POST /v1/vector_stores/{id}/file_batches/{batch_id}/cancel:
// the batch's files not yet ingested are cancelled.
func (h *openAIHandler) CancelFileBatch(w http.ResponseWriter, r *http.Request) {
	userID, ok := h.knowledge(w, r)
	if !ok {
		return
	}
	b, err := h.Knowledge.CancelBatch(r.Context(), userID, r.PathValue("id"), r.PathValue("batch_id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toFileBatch(b))
}

// searchRequest is a vector store search's body; also the file_search
// tool's settings on /v1/responses.
type searchRequest struct {
	Query          json.RawMessage  `json:"query"`
	MaxNumResults  *int             `json:"max_num_results"`
	Filters        *json.RawMessage `json:"filters"`
	RankingOptions *struct {
		Ranker         string   `json:"ranker"`
		ScoreThreshold *float64 `json:"score_threshold"`
		HybridSearch   *struct {
			EmbeddingWeight *float64 `json:"embedding_weight"`
			TextWeight      *float64 `json:"text_weight"`
		} `json:"hybrid_search"`
	} `json:"ranking_options"`
}

// filterFrom reads OpenAI's filters: a comparison {type, key, value} or a
// compound {type: and|or, filters}.
func filterFrom(raw json.RawMessage, path string) (*store.AttributeFilter, error) {
	var f struct {
		Type    string            `json:"type"`
		Key     string            `json:"key"`
		Value   any               `json:"value"`
		Filters []json.RawMessage `json:"filters"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, apierr.InvalidArgument(path, "must be a comparison or compound filter object")
	}
	out := &store.AttributeFilter{Op: f.Type, Key: f.Key, Value: f.Value}
	for i, sub := range f.Filters {
		s, err := filterFrom(sub, fmt.Sprintf("%s.filters[%d]", path, i))
		if err != nil {
			return nil, err
		}
		out.Filters = append(out.Filters, *s)
	}
	return out, nil
}

// query reads a search's settings into a knowledge query.
func (sr *searchRequest) query(storeIDs []string) (knowledge.Query, []string, error) {
	q := knowledge.Query{StoreIDs: storeIDs}
	var texts []string
	var one string
	switch {
	case json.Unmarshal(sr.Query, &one) == nil:
		texts = []string{one}
	case json.Unmarshal(sr.Query, &texts) == nil:
	default:
		return q, nil, apierr.InvalidArgument("query", "must be a string or a list of strings")
	}
	q.Text = strings.Join(texts, "\n")
	if sr.MaxNumResults != nil {
		if *sr.MaxNumResults < 1 {
			return q, nil, apierr.InvalidArgument("max_num_results", fmt.Sprintf("must be 1 to %d", store.MaxVectorResults))
		}
		q.Limit = *sr.MaxNumResults
	}
	if sr.Filters != nil && string(*sr.Filters) != "null" {
		f, err := filterFrom(*sr.Filters, "filters")
		if err != nil {
			return q, nil, err
		}
		q.Filter = f
	}
	if ro := sr.RankingOptions; ro != nil {
		if ro.Ranker != "" && ro.Ranker != "auto" && ro.Ranker != "default-2024-11-15" && ro.Ranker != "none" {
			return q, nil, apierr.InvalidArgument("ranking_options.ranker", fmt.Sprintf("%q is not auto", ro.Ranker))
		}
		if ro.ScoreThreshold != nil {
			q.MinScore = *ro.ScoreThreshold
		}
		if hs := ro.HybridSearch; hs != nil {
			switch {
			case hs.EmbeddingWeight == nil:
				return q, nil, apierr.InvalidArgument("ranking_options.hybrid_search.embedding_weight", "required")
			case hs.TextWeight == nil:
				return q, nil, apierr.InvalidArgument("ranking_options.hybrid_search.text_weight", "required")
			}
			q.Weights = &knowledge.Weights{EmbeddingWeight: *hs.EmbeddingWeight, TextWeight: *hs.TextWeight}
		}
	}
	return q, texts, nil
}

type searchResultObject struct {
	FileID     string          `json:"file_id"`
	Filename   string          `json:"filename"`
	Score      float64         `json:"score"`
	Attributes map[string]any  `json:"attributes"`
	Content    []searchContent `json:"content"`
}

type searchContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func toSearchResult(res knowledge.Result) searchResultObject {
	o := searchResultObject{FileID: res.FileID, Filename: res.Filename, Score: res.Score, Attributes: res.Attributes,
		Content: []searchContent{{Type: "text", Text: res.Text}}}
	if o.Attributes == nil {
		o.Attributes = map[string]any{}
	}
	return o
}

// SearchVectorStore serves POST /v1/vector_stores/{id}/search.
func (h *openAIHandler) SearchVectorStore(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.knowledge(w, r); !ok {
		return
	}
	var sr searchRequest
	if _, err := h.decodeBody(r, map[string]bool{"query": true, "max_num_results": true, "filters": true, "ranking_options": true},
		map[string]func(json.RawMessage) bool{"rewrite_query": func(v json.RawMessage) bool { return isJSON(v, "false", "null") }}, &sr); err != nil {
		h.fail(w, r, err)
		return
	}
	q, texts, err := sr.query([]string{r.PathValue("id")})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	results, err := h.Knowledge.Search(r.Context(), q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	page := struct {
		Object      string               `json:"object"`
		SearchQuery []string             `json:"search_query"`
		Data        []searchResultObject `json:"data"`
		HasMore     bool                 `json:"has_more"`
		NextPage    *string              `json:"next_page"`
	}{Object: "vector_store.search_results.page", SearchQuery: texts, Data: []searchResultObject{}}
	for _, res := range results {
		page.Data = append(page.Data, toSearchResult(res))
	}
	writeJSON(w, page)
}
