package compat

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/compat/openaiwire"
	"github.com/parleyhq/parley/server/detach"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/sse"
)

// openAIHandler serves OpenAI's API over the same core as ChatService:
// /v1/chat/completions (openai.go), /v1/completions (completions.go),
// /v1/embeddings (embeddings.go), /v1/models and /v1/responses
// (responses.go).
type openAIHandler struct{ *deps }

// fail writes err as OpenAI's error JSON.
func (h *openAIHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeOpenAIError(w, r, h.fix(r, err))
}

// ChatCompletions serves POST /v1/chat/completions.
func (h *openAIHandler) ChatCompletions(w http.ResponseWriter, r *http.Request) {
	req, creq, err := h.parseChat(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Stream {
		h.stream(w, r, req, creq)
		return
	}
	h.complete(w, r, creq)
}

// parseChat reads a chat completion request and maps it to the core's.
func (h *openAIHandler) parseChat(r *http.Request) (*openAIRequest, *chat.Request, error) {
	req, err := h.parse(r)
	if err != nil {
		return nil, nil, err
	}
	creq, err := req.toChat(h.Core.Attachments.Inline())
	if err != nil {
		return nil, nil, err
	}
	return req, &creq, nil
}

// complete answers a chat completion that is not streamed. It is a
// function of its own so that its locals stay out of ChatCompletions'
// frame, which a stream keeps on its stack for as long as it is open.
func (h *openAIHandler) complete(w http.ResponseWriter, r *http.Request, creq *chat.Request) {
	out, all, err := h.collect(r, *creq)
	if err != nil {
		// A cut answer is not passed off as a whole one: the caller gets an
		// error, and the usage record says how it ended.
		h.fail(w, r, err)
		return
	}
	body := openaiwire.ChatCompletion{
		ID: "chatcmpl-" + out.RequestID, Object: "chat.completion", Created: time.Now().Unix(), Model: out.Model,
		Usage: openAIUsage(out.Usage),
	}
	for i, reason := range out.Choices {
		ch := all.Choice(i)
		finish := openAIFinishReason(reason)
		msg := &openaiwire.Message{Role: "assistant", ReasoningContent: ch.Reasoning.String()}
		if ch.Text.Len() > 0 || len(ch.ToolCalls) == 0 {
			text := ch.Text.String()
			msg.Content = &text
		}
		for _, tc := range ch.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, openaiwire.ToolCall{ID: tc.GetId(), Type: "function",
				Function: openaiwire.FunctionCall{Name: tc.GetName(), Arguments: tc.GetArguments()}})
		}
		choice := openaiwire.Choice{Index: i, Message: msg, FinishReason: &finish}
		if creq.Logprobs {
			choice.Logprobs = openAILogprobs(ch.Logprobs)
		}
		body.Choices = append(body.Choices, choice)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// stream answers with chat.completion.chunk events.
func (h *openAIHandler) stream(w http.ResponseWriter, r *http.Request, req *openAIRequest, creq *chat.Request) {
	creqs := []chat.Request{*creq} // on the heap, not in the stream's frame
	detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
		enc := &openAIStream{chunkWriter: chunkWriter{w: w, enc: sse.NewEncoder(w)}, n: max(creq.N, 1), logprobs: creq.Logprobs,
			includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
		h.runStream(r, enc, creqs, func(err error) { h.fail(w, r, err) })
	})
}

// openAIStream is the encoder of a streamed chat completion.
type openAIStream struct {
	chunkWriter
	n            int  // choices
	logprobs     bool // whether deltas carry log probabilities
	includeUsage bool
	chunk        openaiwire.ChatCompletionChunk
}

func (s *openAIStream) start(_ int, st *parleyv1.GenerationStarted) error {
	s.chunk = openaiwire.ChatCompletionChunk{ID: "chatcmpl-" + st.GetRequestId(), Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: st.GetModel()}
	// Not flushed: the first delta follows at once and goes with them.
	for i := range s.n {
		if err := s.deltaChunk(&s.chunk, i, "assistant", "", false); err != nil {
			return err
		}
	}
	return nil
}

func (s *openAIStream) delta(_ int, d *parleyv1.GenerationDelta) error {
	if len(d.GetToolCalls()) == 0 && !s.logprobs && d.GetReasoning() == "" {
		return s.deltaChunk(&s.chunk, int(d.GetChoice()), "", d.GetText(), true)
	}
	// Reasoning goes as reasoning_content, as vLLM, SGLang and DeepSeek
	// stream it.
	delta := &openaiwire.Delta{Content: d.GetText(), ReasoningContent: d.GetReasoning()}
	for _, tc := range d.GetToolCalls() {
		index := int(tc.GetIndex())
		call := openaiwire.ToolCall{Index: &index, ID: tc.GetId(), Function: openaiwire.FunctionCall{Name: tc.GetName(), Arguments: tc.GetArguments()}}
		if call.ID != "" {
			call.Type = "function"
		}
		delta.ToolCalls = append(delta.ToolCalls, call)
	}
	choice := openaiwire.Choice{Index: int(d.GetChoice()), Delta: delta}
	if s.logprobs {
		choice.Logprobs = openAILogprobs(d.GetLogprobs())
	}
	return s.chunkOf(&s.chunk, choice)
}

// finish writes each choice's finish reason, the usage when asked for, and
// [DONE]: the last events are ready together, so they go out with the
// response's end in one write.
func (s *openAIStream) finish(_ int, result *chat.Outcome) {
	for i, reason := range result.Choices {
		finish := openAIFinishReason(reason)
		s.chunk.Choices = append(s.chunk.Choices[:0], openaiwire.Choice{Index: i, Delta: &openaiwire.Delta{}, FinishReason: &finish})
		_ = s.writeBuffered(&s.chunk)
	}
	if s.includeUsage {
		s.chunk.Choices = []openaiwire.Choice{}
		s.chunk.Usage = openAIUsage(result.Usage)
		_ = s.writeBuffered(&s.chunk)
	}
	_ = s.doneBuffered()
}

func (s *openAIStream) fail(err error) { s.error(err) }

// chunkOf writes chunk with the one choice.
func (c *chunkWriter) chunkOf(chunk *openaiwire.ChatCompletionChunk, choice openaiwire.Choice) error {
	chunk.Choices = append(chunk.Choices[:0], choice)
	return c.write(chunk)
}

// error ends an OpenAI stream with the error's JSON and [DONE].
func (c *chunkWriter) error(err error) {
	_, body := openAIError(err)
	_ = c.write(body)
	_ = c.done()
}

// NotFound answers any other path under /v1/ with OpenAI's error JSON, so
// an SDK calling an endpoint Parley lacks gets a clear 404, not the web
// app's page.
func (h *openAIHandler) NotFound(w http.ResponseWriter, r *http.Request) {
	writeOpenAIError(w, r, connect.NewError(connect.CodeNotFound,
		fmt.Errorf("%s %s is not an endpoint of this server", r.Method, r.URL.Path)))
}

// openAIFinishReason names how a choice ended as OpenAI does. Only stop,
// length and tool_calls reach here: cancelled and failed generations are
// answered with an error (see interrupted).
func openAIFinishReason(r llm.FinishReason) string {
	switch r {
	case llm.FinishLength:
		return "length"
	case llm.FinishToolCalls:
		return "tool_calls"
	}
	return "stop"
}

// openAILogprobs maps log probabilities to OpenAI's form (bytes as numbers).
func openAILogprobs(in []*parleyv1.TokenLogprob) *openaiwire.Logprobs {
	out := &openaiwire.Logprobs{Content: make([]openaiwire.TokenLogprob, 0, len(in))}
	for _, lp := range in {
		t := openaiwire.TokenLogprob{Token: lp.GetToken(), Logprob: lp.GetLogprob(), Bytes: byteInts(lp.GetBytes()), TopLogprobs: []openaiwire.TopLogprob{}}
		for _, top := range lp.GetTopLogprobs() {
			t.TopLogprobs = append(t.TopLogprobs, openaiwire.TopLogprob{Token: top.GetToken(), Logprob: top.GetLogprob(), Bytes: byteInts(top.GetBytes())})
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

func openAIUsage(u llm.Usage) *openaiwire.ChunkUsage {
	return &openaiwire.ChunkUsage{
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		PromptTokensDetails: &openaiwire.PromptTokensDetails{CachedTokens: u.CachedTokens},
	}
}

// writeOpenAIError writes err as OpenAI's error JSON with the matching HTTP
// status and Retry-After. It is also the error writer of the auth
// middleware on the OpenAI routes.
func writeOpenAIError(w http.ResponseWriter, _ *http.Request, err error) {
	status, body := openAIError(err)
	if d, ok := apierr.RetryAfter(err); ok {
		w.Header().Set(apierr.RetryAfterHeader, strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
	if body.Error.Code != nil && (*body.Error.Code == "insufficient_quota" || *body.Error.Code == "budget_exceeded") {
		// Retrying cannot help until the balance is topped up; the OpenAI SDKs
		// read this header before their own rules.
		w.Header().Set("X-Should-Retry", "false")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func openAIError(err error) (int, openaiwire.ErrorResponse) {
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
		if apierr.IsBudgetExceeded(ce) {
			typ, code = "insufficient_quota", str("budget_exceeded")
		}
	case connect.CodeUnavailable:
		status, typ = http.StatusServiceUnavailable, "server_error"
	case connect.CodeCanceled, connect.CodeDeadlineExceeded:
		status, typ = http.StatusRequestTimeout, "timeout_error"
	}
	return status, openaiwire.ErrorResponse{Error: openaiwire.Error{Message: ce.Message(), Type: typ, Param: param, Code: code}}
}
