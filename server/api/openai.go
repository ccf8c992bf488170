package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/worker"
	"github.com/parleyhq/parley/sse"
)

// OpenAIHandler serves the OpenAI-compatible endpoints over the same core
// as ChatService: POST /v1/chat/completions and GET /v1/models.
type OpenAIHandler struct {
	Core    *chat.Core
	Catalog *models.Catalog
	// PingInterval is how often a `: ping` comment goes out while a stream
	// has nothing else to send, so proxies never cut a long wait.
	PingInterval time.Duration
	// Outage, when set, turns server faults during a store outage into
	// 503 with Retry-After, as the Connect services get them.
	Outage interface {
		Fix(ctx context.Context, err error) error
	}
	// Unsupported says what to do with request fields Parley cannot honour.
	Unsupported Unsupported
	// DroppedParams counts the fields dropped by UnsupportedDrop, by name
	// (nil: not counted).
	DroppedParams *prometheus.CounterVec

	dropMu       sync.Mutex
	droppedNames map[string]bool // field names dropped (and logged) so far
}

// fail writes err as OpenAI's error JSON.
func (h *OpenAIHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if h.Outage != nil {
		err = h.Outage.Fix(r.Context(), err)
	}
	WriteOpenAIError(w, r, err)
}

// ChatCompletions serves POST /v1/chat/completions.
func (h *OpenAIHandler) ChatCompletions(w http.ResponseWriter, r *http.Request) {
	req, err := h.parse(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	creq, err := req.toChat(h.Core.Attachments.Inline())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Stream {
		h.stream(w, r, req, creq)
		return
	}
	var all chat.Collector
	out, cerr := h.Core.Complete(r.Context(), creq, all.Emit)
	if cerr != nil {
		h.fail(w, r, cerr)
		return
	}
	if err := interrupted(out); err != nil {
		// A cut answer is not passed off as a whole one: the caller gets an
		// error, and the usage record says how it ended.
		h.fail(w, r, err)
		return
	}
	body := sse.ChatCompletion{
		ID: "chatcmpl-" + out.RequestID, Object: "chat.completion", Created: time.Now().Unix(), Model: out.Model,
		Usage: openAIUsage(out.Usage),
	}
	for i, reason := range out.Choices {
		ch := all.Choice(i)
		finish := openAIFinishReason(reason)
		msg := &sse.Message{Role: "assistant"}
		if ch.Text.Len() > 0 || len(ch.ToolCalls) == 0 {
			text := ch.Text.String()
			msg.Content = &text
		}
		for _, tc := range ch.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, sse.ToolCall{ID: tc.GetId(), Type: "function",
				Function: sse.FunctionCall{Name: tc.GetName(), Arguments: tc.GetArguments()}})
		}
		choice := sse.Choice{Index: i, Message: msg, FinishReason: &finish}
		if creq.Logprobs {
			choice.Logprobs = openAILogprobs(ch.Logprobs)
		}
		body.Choices = append(body.Choices, choice)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// interrupted is the error to answer with when a generation did not end by
// itself: cancelled (the server is shutting down: a client that went away
// reads nothing) or failed on its worker.
func interrupted(out *chat.Outcome) error {
	switch out.FinishReason {
	case worker.FinishError:
		return connect.NewError(connect.CodeInternal, fmt.Errorf(
			"the generation failed on the worker after %d tokens (those were charged)", out.Usage.CompletionTokens))
	case worker.FinishCancelled:
		return apierr.Unavailable(fmt.Sprintf(
			"the generation was stopped (the server is shutting down) after %d tokens (those were charged)", out.Usage.CompletionTokens), 2*time.Second)
	}
	return nil
}

// stream answers with chat.completion.chunk events. Headers are held back
// until the first event or ping, so a request refused before it starts
// (overload, balance) still gets its HTTP status.
func (h *OpenAIHandler) stream(w http.ResponseWriter, r *http.Request, req *openAIRequest, creq chat.Request) {
	out := &chunkWriter{w: w, enc: sse.NewEncoder(w)}
	stop := out.pingEvery(h.PingInterval)
	defer stop()

	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	var chunk sse.ChatCompletionChunk
	result, err := h.Core.Complete(r.Context(), creq, func(ev *parleyv1.GenerationEvent) error {
		switch k := ev.GetKind().(type) {
		case *parleyv1.GenerationEvent_Started:
			chunk = sse.ChatCompletionChunk{ID: "chatcmpl-" + k.Started.GetRequestId(), Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: k.Started.GetModel()}
			// Not flushed: the first delta follows at once and goes with them.
			for i := range max(creq.N, 1) {
				if err := out.deltaChunk(&chunk, i, "assistant", "", false); err != nil {
					return err
				}
			}
			return nil
		case *parleyv1.GenerationEvent_Delta:
			d := k.Delta
			if len(d.GetToolCalls()) == 0 && !creq.Logprobs {
				return out.deltaChunk(&chunk, int(d.GetChoice()), "", d.GetText(), true)
			}
			delta := &sse.Delta{Content: d.GetText()}
			for _, tc := range d.GetToolCalls() {
				index := int(tc.GetIndex())
				call := sse.ToolCall{Index: &index, ID: tc.GetId(), Function: sse.FunctionCall{Name: tc.GetName(), Arguments: tc.GetArguments()}}
				if call.ID != "" {
					call.Type = "function"
				}
				delta.ToolCalls = append(delta.ToolCalls, call)
			}
			choice := sse.Choice{Index: int(d.GetChoice()), Delta: delta}
			if creq.Logprobs {
				choice.Logprobs = openAILogprobs(d.GetLogprobs())
			}
			return out.chunk(&chunk, choice)
		}
		return nil
	})
	if err != nil {
		if !out.started() {
			h.fail(w, r, err)
			return
		}
		out.error(err)
		return
	}
	if err := interrupted(result); err != nil {
		out.error(err)
		return
	}
	// The last events are ready together: they go out with the response's
	// end in one write.
	for i, reason := range result.Choices {
		finish := openAIFinishReason(reason)
		chunk.Choices = append(chunk.Choices[:0], sse.Choice{Index: i, Delta: &sse.Delta{}, FinishReason: &finish})
		_ = out.writeBuffered(&chunk)
	}
	if includeUsage {
		chunk.Choices = []sse.Choice{}
		chunk.Usage = openAIUsage(result.Usage)
		_ = out.writeBuffered(&chunk)
	}
	_ = out.doneBuffered()
}

// chunkWriter writes one stream's events; the ping goroutine shares it.
type chunkWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	enc     *sse.Encoder
	opened  bool
	scratch bytes.Buffer
	fast    []byte // deltaChunk's buffer
}

func (c *chunkWriter) open() {
	if !c.opened {
		c.opened = true
		h := c.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		c.w.WriteHeader(http.StatusOK)
	}
}

func (c *chunkWriter) started() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened
}

func (c *chunkWriter) chunk(chunk *sse.ChatCompletionChunk, choice sse.Choice) error {
	chunk.Choices = append(chunk.Choices[:0], choice)
	return c.write(chunk)
}

func (c *chunkWriter) write(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open()
	c.scratch.Reset()
	if err := json.NewEncoder(&c.scratch).Encode(v); err != nil {
		return err
	}
	data := bytes.TrimSuffix(c.scratch.Bytes(), []byte("\n"))
	return c.enc.WriteEvent(sse.Event{Data: string(data)})
}

func (c *chunkWriter) error(err error) {
	_, body := openAIError(err)
	_ = c.write(body)
	_ = c.done()
}

func (c *chunkWriter) done() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc.WriteEvent(sse.Event{Data: "[DONE]"})
}

// pingEvery sends `: ping` comments while the stream is otherwise quiet.
func (c *chunkWriter) pingEvery(d time.Duration) (stop func()) {
	return keepAlive(d, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.open()
		return c.enc.WriteComment("ping")
	})
}

// openAIModel is a model as OpenAI's /v1/models describes it.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func toOpenAIModel(m *models.Model) openAIModel {
	owner := "parley"
	if m.Simulated {
		owner = "parley-sim"
	}
	return openAIModel{ID: m.ID, Object: "model", OwnedBy: owner}
}

// Models serves GET /v1/models.
func (h *OpenAIHandler) Models(w http.ResponseWriter, _ *http.Request) {
	list := struct {
		Object string        `json:"object"`
		Data   []openAIModel `json:"data"`
	}{Object: "list", Data: []openAIModel{}}
	for _, m := range h.Catalog.All() {
		list.Data = append(list.Data, toOpenAIModel(m))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// Model serves GET /v1/models/{id}.
func (h *OpenAIHandler) Model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m, ok := h.Catalog.Lookup(id)
	if !ok {
		h.fail(w, r, apierr.UnknownModel("model", id))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(toOpenAIModel(m))
}

// NotFound answers any other path under /v1/ with OpenAI's error JSON, so
// an SDK calling an endpoint Parley lacks gets a clear 404, not the web
// app's page.
func (h *OpenAIHandler) NotFound(w http.ResponseWriter, r *http.Request) {
	WriteOpenAIError(w, r, connect.NewError(connect.CodeNotFound,
		fmt.Errorf("%s %s is not an endpoint of this server", r.Method, r.URL.Path)))
}

// openAIFinishReason names how a choice ended as OpenAI does. Only stop,
// length and tool_calls reach here: cancelled and failed generations are
// answered with an error (see interrupted).
func openAIFinishReason(r worker.FinishReason) string {
	switch r {
	case worker.FinishLength:
		return "length"
	case worker.FinishToolCalls:
		return "tool_calls"
	}
	return "stop"
}

// openAILogprobs maps log probabilities to OpenAI's form (bytes as numbers).
func openAILogprobs(in []*parleyv1.TokenLogprob) *sse.Logprobs {
	out := &sse.Logprobs{Content: make([]sse.TokenLogprob, 0, len(in))}
	for _, lp := range in {
		t := sse.TokenLogprob{Token: lp.GetToken(), Logprob: lp.GetLogprob(), Bytes: byteInts(lp.GetBytes()), TopLogprobs: []sse.TopLogprob{}}
		for _, top := range lp.GetTopLogprobs() {
			t.TopLogprobs = append(t.TopLogprobs, sse.TopLogprob{Token: top.GetToken(), Logprob: top.GetLogprob(), Bytes: byteInts(top.GetBytes())})
		}
		out.Content = append(out.Content, t)
	}
	return out
}

func byteInts(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

func openAIUsage(u worker.Usage) *sse.ChunkUsage {
	return &sse.ChunkUsage{
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		PromptTokensDetails: &sse.PromptTokensDetails{CachedTokens: u.CachedTokens},
	}
}

// WriteOpenAIError writes err as OpenAI's error JSON with the matching HTTP
// status and Retry-After. It is also the error writer of the auth
// middleware on /v1.
func WriteOpenAIError(w http.ResponseWriter, _ *http.Request, err error) {
	status, body := openAIError(err)
	if d, ok := apierr.RetryAfter(err); ok {
		w.Header().Set(apierr.RetryAfterHeader, strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
	if body.Error.Code != nil && *body.Error.Code == "insufficient_quota" {
		// Retrying cannot help until the balance is topped up; the OpenAI SDKs
		// read this header before their own rules.
		w.Header().Set("X-Should-Retry", "false")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func openAIError(err error) (int, sse.ErrorResponse) {
	ce := new(connect.Error)
	if !errors.As(err, &ce) {
		ce = apierr.Internal()
	}
	var param, code *string
	str := func(s string) *string { return &s }
	var fv parleyv1.FieldViolation
	if apierr.Detail(ce, &fv) {
		param = str(fv.GetField())
	}
	status, typ := http.StatusInternalServerError, "server_error"
	switch ce.Code() {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange:
		status, typ = http.StatusBadRequest, "invalid_request_error"
	case connect.CodeUnauthenticated:
		status, typ, code = http.StatusUnauthorized, "authentication_error", str("invalid_api_key")
	case connect.CodePermissionDenied:
		status, typ = http.StatusForbidden, "permission_error"
	case connect.CodeNotFound:
		// OpenAI's type for every 404 (unknown model, unknown URL).
		status, typ = http.StatusNotFound, "invalid_request_error"
		if fv.GetField() == "model" {
			code = str("model_not_found")
		}
	case connect.CodeResourceExhausted:
		status, typ = http.StatusTooManyRequests, "rate_limit_error"
		if apierr.Detail(ce, &parleyv1.InsufficientBalance{}) {
			typ, code = "insufficient_quota", str("insufficient_quota")
		}
	case connect.CodeUnavailable:
		status, typ = http.StatusServiceUnavailable, "server_error"
	case connect.CodeCanceled, connect.CodeDeadlineExceeded:
		status, typ = http.StatusRequestTimeout, "timeout_error"
	}
	return status, sse.ErrorResponse{Error: sse.Error{Message: ce.Message(), Type: typ, Param: param, Code: code}}
}
