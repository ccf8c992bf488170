package compat

import (
	"net/http"
	"time"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/batch"
	"github.com/parleyhq/parley/server/store"
)

// The Batch API (/v1/batches) in OpenAI's wire format, over the batch
// service (server/batch): the same batches as BatchService.

type batchObject struct {
	ID               string             `json:"id"`
	Object           string             `json:"object"`
	Endpoint         string             `json:"endpoint"`
	Errors           *batchErrors       `json:"errors"`
	InputFileID      string             `json:"input_file_id"`
	CompletionWindow string             `json:"completion_window"`
	Status           string             `json:"status"`
	OutputFileID     *string            `json:"output_file_id"`
	ErrorFileID      *string            `json:"error_file_id"`
	CreatedAt        int64              `json:"created_at"`
	InProgressAt     *int64             `json:"in_progress_at"`
	ExpiresAt        *int64             `json:"expires_at"`
	FinalizingAt     *int64             `json:"finalizing_at"`
	CompletedAt      *int64             `json:"completed_at"`
	FailedAt         *int64             `json:"failed_at"`
	ExpiredAt        *int64             `json:"expired_at"`
	CancellingAt     *int64             `json:"cancelling_at"`
	CancelledAt      *int64             `json:"cancelled_at"`
	RequestCounts    batchRequestCounts `json:"request_counts"`
	Metadata         map[string]string  `json:"metadata"`
}

type batchErrors struct {
	Object string              `json:"object"`
	Data   []batchErrorElement `json:"data"`
}

type batchErrorElement struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

type batchRequestCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

func unixOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toBatchObject(b store.Batch) batchObject {
	o := batchObject{ID: b.ID, Object: "batch", Endpoint: b.Endpoint, InputFileID: b.InputFileID, CompletionWindow: b.CompletionWindow,
		Status: b.Status, OutputFileID: stringOrNil(b.OutputFileID), ErrorFileID: stringOrNil(b.ErrorFileID), CreatedAt: b.CreatedAt.Unix(),
		InProgressAt: unixOrNil(b.InProgressAt), ExpiresAt: unixOrNil(b.ExpiresAt), FinalizingAt: unixOrNil(b.FinalizingAt),
		CompletedAt: unixOrNil(b.CompletedAt), FailedAt: unixOrNil(b.FailedAt), ExpiredAt: unixOrNil(b.ExpiredAt),
		CancellingAt: unixOrNil(b.CancellingAt), CancelledAt: unixOrNil(b.CancelledAt),
		RequestCounts: batchRequestCounts{Total: b.Total, Completed: b.Completed, Failed: b.Failed}, Metadata: b.Metadata}
	if len(b.Errors) > 0 {
		o.Errors = &batchErrors{Object: "list"}
		for _, e := range b.Errors {
			el := batchErrorElement{Code: e.Code, Message: e.Message, Param: stringOrNil(e.Param)}
			if e.Line > 0 {
				line := e.Line
				el.Line = &line
			}
			o.Errors.Data = append(o.Errors.Data, el)
		}
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	return o
}

// batchFields are the fields POST /v1/batches reads.
var batchFields = map[string]bool{"input_file_id": true, "endpoint": true, "completion_window": true, "metadata": true}

// CreateBatch serves POST /v1/batches.
func (h *openAIHandler) CreateBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if _, err := h.decodeBody(r, batchFields, nil, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	if req.CompletionWindow == "" {
		h.fail(w, r, apierr.InvalidArgument("completion_window", "is required: 24h"))
		return
	}
	b, err := h.Batches.Create(r.Context(), batch.CreateRequest{InputFileID: req.InputFileID, Endpoint: req.Endpoint,
		CompletionWindow: req.CompletionWindow, Metadata: req.Metadata})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toBatchObject(b))
}

// GetBatch serves GET /v1/batches/{id}.
func (h *openAIHandler) GetBatch(w http.ResponseWriter, r *http.Request) {
	b, err := h.Batches.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toBatchObject(b))
}

// ListBatches serves GET /v1/batches: after and limit (1 to 100, default
// 20), newest first.
func (h *openAIHandler) ListBatches(w http.ResponseWriter, r *http.Request) {
	p, err := listPageFrom(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	items, more, err := pageOf(p, func(b store.Batch) string { return b.ID }, func(pr store.PageRequest) ([]store.Batch, string, error) {
		return h.Batches.List(r.Context(), pr)
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]batchObject, len(items))
	for i, b := range items {
		out[i] = toBatchObject(b)
	}
	writeJSON(w, newList(out, func(o batchObject) string { return o.ID }, more))
}

// CancelBatch serves POST /v1/batches/{id}/cancel.
func (h *openAIHandler) CancelBatch(w http.ResponseWriter, r *http.Request) {
	b, err := h.Batches.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, toBatchObject(b))
}

// BatchHandler serves a batch line's request as the endpoint it names
// (/v1/chat/completions, /v1/responses, /v1/embeddings, /v1/completions)
// would, for the principal and batch line the batch runner put in the
// request's context: the same handlers as the public routes, without the
// authentication in front of them.
func BatchHandler(cfg Config) http.Handler {
	d := &deps{Core: cfg.Core, Catalog: cfg.Catalog, Knowledge: cfg.Knowledge, Unsupported: cfg.Unsupported}
	openai := &openAIHandler{d}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", openai.ChatCompletions)
	mux.HandleFunc("POST /v1/responses", openai.CreateResponse)
	mux.HandleFunc("POST /v1/embeddings", openai.Embeddings)
	mux.HandleFunc("POST /v1/completions", openai.Completions)
	mux.Handle("/", http.HandlerFunc(openai.NotFound))
	return mux
}
