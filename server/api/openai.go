package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/attach"
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
}

// fail writes err as OpenAI's error JSON.
func (h *OpenAIHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if h.Outage != nil {
		err = h.Outage.Fix(r.Context(), err)
	}
	WriteOpenAIError(w, r, err)
}

// openAIRequest is the body of POST /v1/chat/completions, as far as Parley
// supports it. Fields it does not support are refused by name (see
// unsupportedParams), never silently ignored.
type openAIRequest struct {
	Model               string          `json:"model"`
	Messages            []openAIMessage `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	User                string          `json:"user"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N                *int     `json:"n"`
	PresencePenalty  *float64 `json:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty"`
	Logprobs         *bool    `json:"logprobs"`
}

type openAIMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

type openAIContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// supportedParams are the request fields Parley reads; any other is refused.
var supportedParams = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "max_completion_tokens": true,
	"temperature": true, "top_p": true, "stop": true, "seed": true, "user": true,
	"stream": true, "stream_options": true, "n": true, "presence_penalty": true,
	"frequency_penalty": true, "logprobs": true,
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
	var text strings.Builder
	out, cerr := h.Core.Complete(r.Context(), creq, func(ev *parleyv1.GenerationEvent) error {
		if d := ev.GetDelta(); d != nil {
			text.WriteString(d.GetText())
		}
		return nil
	})
	if cerr != nil {
		h.fail(w, r, cerr)
		return
	}
	reason := openAIFinishReason(out.FinishReason)
	body := sse.ChatCompletion{
		ID: "chatcmpl-" + out.RequestID, Object: "chat.completion", Created: time.Now().Unix(), Model: out.Model,
		Choices: []sse.Choice{{Index: 0, Message: &sse.Message{Role: "assistant", Content: text.String()}, FinishReason: &reason}},
		Usage:   openAIUsage(out.Usage),
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func (h *OpenAIHandler) parse(r *http.Request) (*openAIRequest, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, apierr.InvalidArgument("body", fmt.Sprintf("is over the limit of %d bytes", tooBig.Limit))
		}
		return nil, apierr.InvalidArgument("body", "could not be read")
	}
	if !utf8.Valid(data) {
		// encoding/json would quietly turn bad bytes into U+FFFD.
		return nil, apierr.InvalidArgument("body", "is not valid UTF-8")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, apierr.InvalidArgument("body", "is not a JSON object: "+err.Error())
	}
	for name := range fields {
		if !supportedParams[name] {
			return nil, apierr.InvalidArgument(name, "is not supported by this server")
		}
	}
	var req openAIRequest
	if err := json.Unmarshal(data, &req); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, apierr.InvalidArgument(typeErr.Field, "has the wrong type: "+typeErr.Value)
		}
		return nil, apierr.InvalidArgument("body", err.Error())
	}
	switch {
	case req.N != nil && *req.N != 1:
		return nil, apierr.InvalidArgument("n", "only n=1 is supported")
	case req.PresencePenalty != nil && *req.PresencePenalty != 0:
		return nil, apierr.InvalidArgument("presence_penalty", "is not supported (only 0)")
	case req.FrequencyPenalty != nil && *req.FrequencyPenalty != 0:
		return nil, apierr.InvalidArgument("frequency_penalty", "is not supported (only 0)")
	case req.Logprobs != nil && *req.Logprobs:
		return nil, apierr.InvalidArgument("logprobs", "is not supported")
	case req.StreamOptions != nil && !req.Stream:
		return nil, apierr.InvalidArgument("stream_options", "is only allowed with stream: true")
	case req.MaxTokens != nil && req.MaxCompletionTokens != nil && *req.MaxTokens != *req.MaxCompletionTokens:
		return nil, apierr.InvalidArgument("max_tokens", "conflicts with max_completion_tokens; give one")
	}
	return &req, nil
}

// toChat maps the OpenAI request onto the core's request.
func (req *openAIRequest) toChat(inline *attach.Checker) (chat.Request, error) {
	cr := chat.Request{Model: req.Model, Temperature: req.Temperature, TopP: req.TopP, Seed: req.Seed}
	switch {
	case req.MaxCompletionTokens != nil:
		cr.MaxOutputTokens = *req.MaxCompletionTokens
		if cr.MaxOutputTokens <= 0 {
			return cr, apierr.InvalidArgument("max_completion_tokens", "must be positive")
		}
	case req.MaxTokens != nil:
		cr.MaxOutputTokens = *req.MaxTokens
		if cr.MaxOutputTokens <= 0 {
			return cr, apierr.InvalidArgument("max_tokens", "must be positive")
		}
	}
	if len(req.Stop) > 0 && string(req.Stop) != "null" {
		var one string
		if err := json.Unmarshal(req.Stop, &one); err == nil {
			cr.Stop = []string{one}
		} else if err := json.Unmarshal(req.Stop, &cr.Stop); err != nil {
			return cr, apierr.InvalidArgument("stop", "must be a string or an array of strings")
		}
	}
	if len(req.Messages) == 0 {
		return cr, apierr.InvalidArgument("messages", "must not be empty")
	}
	for i, m := range req.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		cm := worker.ChatMessage{Role: m.Role}
		switch m.Role {
		case "system", "user", "assistant":
		case "developer":
			cm.Role = "system"
		default:
			return cr, apierr.InvalidArgument(field+".role", fmt.Sprintf("%q is not supported; use system, developer, user or assistant", m.Role))
		}
		var text string
		var parts []openAIContentPart
		switch {
		case len(m.Content) == 0 || string(m.Content) == "null":
			return cr, apierr.InvalidArgument(field+".content", "is required")
		case json.Unmarshal(m.Content, &text) == nil:
			if text == "" {
				return cr, apierr.InvalidArgument(field+".content", "must not be empty")
			}
			cm.Parts = []worker.Part{{Text: text}}
		case json.Unmarshal(m.Content, &parts) == nil:
			if len(parts) == 0 {
				return cr, apierr.InvalidArgument(field+".content", "must not be empty")
			}
			for j, p := range parts {
				pf := fmt.Sprintf("%s.content[%d]", field, j)
				switch p.Type {
				case "text":
					cm.Parts = append(cm.Parts, worker.Part{Text: p.Text})
				case "image_url":
					if p.ImageURL == nil {
						return cr, apierr.InvalidArgument(pf+".image_url", "is required")
					}
					data, mime, err := parseDataURL(p.ImageURL.URL)
					if err != nil {
						return cr, apierr.InvalidArgument(pf+".image_url.url", err.Error())
					}
					img, cerr := inline.InlineImage(pf+".image_url", data, mime)
					if cerr != nil {
						return cr, cerr
					}
					cm.Parts = append(cm.Parts, worker.Part{Image: img})
				default:
					return cr, apierr.InvalidArgument(pf+".type", fmt.Sprintf("%q is not supported; use text or image_url", p.Type))
				}
			}
		default:
			return cr, apierr.InvalidArgument(field+".content", "must be a string or an array of content parts")
		}
		cr.Messages = append(cr.Messages, cm)
	}
	return cr, nil
}

// parseDataURL decodes a base64 data URL; remote URLs are not fetched.
func parseDataURL(u string) ([]byte, string, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return nil, "", errors.New("must be a data: URL (remote images are not fetched)")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	mime, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isB64 {
		return nil, "", errors.New("must be a base64 data URL")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, "", errors.New("is not valid base64")
	}
	return data, mime, nil
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
			return out.chunk(&chunk, &sse.Delta{Role: "assistant"}, nil)
		case *parleyv1.GenerationEvent_Delta:
			return out.chunk(&chunk, &sse.Delta{Content: k.Delta.GetText()}, nil)
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
	if result.FinishReason == worker.FinishError {
		out.error(connect.NewError(connect.CodeInternal, errors.New("the generation failed on the worker")))
		return
	}
	reason := openAIFinishReason(result.FinishReason)
	_ = out.chunk(&chunk, &sse.Delta{}, &reason)
	if includeUsage {
		chunk.Choices = []sse.Choice{}
		chunk.Usage = openAIUsage(result.Usage)
		_ = out.write(&chunk)
	}
	_ = out.done()
}

// chunkWriter writes one stream's events; the ping goroutine shares it.
type chunkWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	enc     *sse.Encoder
	opened  bool
	scratch bytes.Buffer
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

func (c *chunkWriter) chunk(chunk *sse.ChatCompletionChunk, delta *sse.Delta, finish *string) error {
	chunk.Choices = append(chunk.Choices[:0], sse.Choice{Index: 0, Delta: delta, FinishReason: finish})
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
	if d <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.mu.Lock()
				c.open()
				err := c.enc.WriteComment("ping")
				c.mu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Models serves GET /v1/models.
func (h *OpenAIHandler) Models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range h.Catalog.All() {
		owner := "parley"
		if m.Simulated {
			owner = "parley-sim"
		}
		list.Data = append(list.Data, model{ID: m.ID, Object: "model", OwnedBy: owner})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func openAIFinishReason(r worker.FinishReason) string {
	if r == worker.FinishLength {
		return "length"
	}
	return "stop"
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
		if fv.GetField() == "model" && strings.Contains(fv.GetDescription(), "unknown model") {
			status, code = http.StatusNotFound, str("model_not_found")
		}
	case connect.CodeUnauthenticated:
		status, typ, code = http.StatusUnauthorized, "authentication_error", str("invalid_api_key")
	case connect.CodePermissionDenied:
		status, typ = http.StatusForbidden, "permission_error"
	case connect.CodeNotFound:
		status, typ = http.StatusNotFound, "not_found_error"
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
