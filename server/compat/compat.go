package compat

import (
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/batch"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/models"
)

// Config is what New needs: the surfaces' dependencies and the middleware
// their routes run behind.
type Config struct {
	Core    *chat.Core
	Catalog *models.Catalog
	// Knowledge serves /v1/vector_stores and the file_search tool (nil:
	// not available).
	Knowledge *knowledge.Service
	// Batches serves /v1/batches (nil: not available).
	Batches *batch.Service
	// Events, when set, is told when a background response ends
	// (response.completed, …): the webhooks.
	Events batch.Notifier
	// PingInterval is how often a keep-alive goes out while a stream has
	// nothing else to send (0: never).
	PingInterval time.Duration
	// Outage, when set, turns server faults during a store outage into 503
	// with Retry-After, as the Connect services get them.
	Outage Outage
	// Unsupported says what to do with request fields Parley cannot honour
	// (--openai-unsupported).
	Unsupported Unsupported
	// DroppedParams counts the fields dropped by UnsupportedDrop, by name
	// (nil: not counted).
	DroppedParams *prometheus.CounterVec
	// Auth authenticates every route but the catch-all 404 (an API key or a
	// session; its refusals in the surface's error JSON).
	Auth *auth.Authenticator
	// MaxElements bounds the JSON elements of a request body, counted as it
	// is read (gateway.JSONElements; 0: unbounded).
	MaxElements int
	// Fault, TESTING ONLY, injects latency and errors into the OpenAI routes
	// (nil: none).
	Fault *gateway.Fault
	// Observe wraps each route's handler, by route name (the HTTP metrics);
	// nil: nothing.
	Observe func(route string, next http.Handler) http.Handler
}

// New returns the handler of every compatible surface, owning its routes
// under /v1/: mount it there. Any other path under /v1/ is a 404 in
// OpenAI's error JSON.
func New(cfg Config) http.Handler {
	d := &deps{Core: cfg.Core, Catalog: cfg.Catalog, Knowledge: cfg.Knowledge, Batches: cfg.Batches, Events: cfg.Events, PingInterval: cfg.PingInterval, Outage: cfg.Outage,
		Unsupported: cfg.Unsupported, DroppedParams: cfg.DroppedParams}
	openai, anthropic := &openAIHandler{d}, &anthropicHandler{d}
	observe := cfg.Observe
	if observe == nil {
		observe = func(_ string, next http.Handler) http.Handler { return next }
	}
	authOnly := func(writeErr func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
		return cfg.Auth.Middleware(auth.AccessAny, func(w http.ResponseWriter, r *http.Request, err *connect.Error) {
			writeErr(w, r, err)
		})
	}
	authed := func(writeErr func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
		return gateway.Then(authOnly(writeErr), gateway.JSONElements(cfg.MaxElements)) // counted as read, after authentication
	}
	v1 := authed(writeOpenAIError)
	// The Files API: multipart bodies, bounded by the gateway's body limit.
	files := authOnly(writeOpenAIError)
	if cfg.Fault != nil {
		v1 = gateway.Then(v1, cfg.Fault.Middleware)
	}
	// Anthropic's Messages API: x-api-key or Bearer, errors in Anthropic's JSON.
	anthropicV1 := authed(writeAnthropicError)

	mux := http.NewServeMux()
	route := func(pattern, name string, mw func(http.Handler) http.Handler, h http.HandlerFunc) {
		mux.Handle(pattern, observe(name, mw(droppedHeader(h))))
	}
	route("POST /v1/chat/completions", "openai_chat_completions", v1, openai.ChatCompletions)
	route("POST /v1/embeddings", "openai_embeddings", v1, openai.Embeddings)
	route("GET /v1/models", "openai_models", v1, openai.Models)
	route("GET /v1/models/{id}", "openai_models", v1, openai.Model)
	route("POST /v1/responses", "openai_responses", v1, openai.CreateResponse)
	route("GET /v1/responses/{id}", "openai_responses_get", v1, openai.GetResponse)
	route("DELETE /v1/responses/{id}", "openai_responses_delete", v1, openai.DeleteResponse)
	route("POST /v1/responses/{id}/cancel", "openai_responses_cancel", v1, openai.CancelResponse)
	route("GET /v1/responses/{id}/input_items", "openai_responses_input_items", v1, openai.ListResponseInputItems)
	route("POST /v1/completions", "openai_completions", v1, openai.Completions)
	route("POST /v1/files", "openai_files_create", files, openai.CreateFile)
	route("GET /v1/files", "openai_files_list", files, openai.ListFiles)
	route("GET /v1/files/{id}", "openai_files_get", files, openai.GetFile)
	route("GET /v1/files/{id}/content", "openai_files_content", files, openai.FileContent)
	route("DELETE /v1/files/{id}", "openai_files_delete", files, openai.DeleteFile)
	route("POST /v1/vector_stores", "openai_vector_stores_create", v1, openai.CreateVectorStore)
	route("GET /v1/vector_stores", "openai_vector_stores_list", v1, openai.ListVectorStores)
	route("GET /v1/vector_stores/{id}", "openai_vector_stores_get", v1, openai.GetVectorStore)
	route("POST /v1/vector_stores/{id}", "openai_vector_stores_modify", v1, openai.ModifyVectorStore)
	route("DELETE /v1/vector_stores/{id}", "openai_vector_stores_delete", v1, openai.DeleteVectorStore)
	route("POST /v1/vector_stores/{id}/search", "openai_vector_stores_search", v1, openai.SearchVectorStore)
	route("POST /v1/vector_stores/{id}/files", "openai_vector_store_files_create", v1, openai.CreateVectorStoreFile)
	route("GET /v1/vector_stores/{id}/files", "openai_vector_store_files_list", v1, openai.ListVectorStoreFiles)
	route("GET /v1/vector_stores/{id}/files/{file_id}", "openai_vector_store_files_get", v1, openai.GetVectorStoreFile)
	route("POST /v1/vector_stores/{id}/files/{file_id}", "openai_vector_store_files_update", v1, openai.UpdateVectorStoreFile)
	route("DELETE /v1/vector_stores/{id}/files/{file_id}", "openai_vector_store_files_delete", v1, openai.DeleteVectorStoreFile)
	route("POST /v1/vector_stores/{id}/file_batches", "openai_file_batches_create", v1, openai.CreateFileBatch)
	route("GET /v1/vector_stores/{id}/file_batches/{batch_id}", "openai_file_batches_get", v1, openai.GetFileBatch)
	route("POST /v1/vector_stores/{id}/file_batches/{batch_id}/cancel", "openai_file_batches_cancel", v1, openai.CancelFileBatch)
	route("GET /v1/vector_stores/{id}/file_batches/{batch_id}/files", "openai_file_batches_files", v1, openai.ListFileBatchFiles)
	route("POST /v1/batches", "openai_batches_create", v1, openai.CreateBatch)
	route("GET /v1/batches", "openai_batches_list", v1, openai.ListBatches)
	route("GET /v1/batches/{id}", "openai_batches_get", v1, openai.GetBatch)
	route("POST /v1/batches/{id}/cancel", "openai_batches_cancel", v1, openai.CancelBatch)
	route("POST /v1/messages", "anthropic_messages", anthropicV1, anthropic.Messages)
	route("POST /v1/messages/count_tokens", "anthropic_count_tokens", anthropicV1, anthropic.CountTokens)
	mux.Handle("/v1/", observe("openai_not_found", http.HandlerFunc(openai.NotFound)))
	return mux
}
