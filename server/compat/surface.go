package compat

// The machinery every surface shares: its dependencies, reading a JSON body
// and its unsupported fields, the stream's writer and keep-alive, and the
// rule that a cut generation is an error, never passed off as a whole one.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/batch"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/gateway"
	"github.com/parleyhq/parley/server/knowledge"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/sse"
)

// deps are what every surface's handler shares: the core, the catalog,
// the keep-alive interval, outage handling and the unsupported-field
// setting with its dropped-fields record.
type deps struct {
	Core    *chat.Core
	Catalog *models.Catalog
	// Knowledge serves the vector stores (nil: not available).
	Knowledge *knowledge.Service
	// Batches serves the Batch API (nil: not available).
	Batches *batch.Service
	// Events is told when a background response ends (nil: no one).
	Events batch.Notifier
	// PingInterval is how often a keep-alive goes out while a stream has
	// nothing else to send, so proxies never cut a long wait.
	PingInterval time.Duration
	// Outage, when set, turns server faults during a store outage into
	// 503 with Retry-After, as the Connect services get them.
	Outage Outage
	// Unsupported says what to do with request fields Parley cannot honour.
	Unsupported Unsupported
	// DroppedParams counts the fields dropped by UnsupportedDrop, by name
	// (nil: not counted).
	DroppedParams *prometheus.CounterVec

	dropMu       sync.Mutex
	droppedNames map[string]bool // field names dropped (and logged) so far
}

// Outage turns a server fault during a store outage into 503 with
// Retry-After (gateway.StoreOutage).
type Outage interface {
	Fix(ctx context.Context, err error) error
}

// fix is err as the surfaces answer it: during a store outage, 503.
func (h *deps) fix(r *http.Request, err error) error {
	if h.Outage != nil {
		err = h.Outage.Fix(r.Context(), err)
	}
	return err
}

// collect runs one generation whole. A generation that did not end by
// itself is an error (interrupted).
func (h *deps) collect(r *http.Request, creq chat.Request) (*chat.Outcome, *chat.Collector, error) {
	all := new(chat.Collector)
	out, err := h.Core.Complete(r.Context(), &creq, all.Emit)
	if err == nil {
		err = interrupted(out)
	}
	return out, all, err
}

// bodyTooLarge is a request body past the gateway's limit: 400 on the OpenAI
// surface (as /v1/chat/completions answers it), 413 request_too_large on the
// Anthropic one.
type bodyTooLarge struct{ err error }

func (e *bodyTooLarge) Error() string { return e.err.Error() }

func (e *bodyTooLarge) Unwrap() error { return e.err }

// decodeBody reads r's body as one JSON object into v, for the HTTP surfaces
// that take their own JSON: bounded, valid UTF-8, and each top-level field one
// the surface reads (read) or one at a value that asks for nothing
// (harmless). Any other field is refused by name or, with
// --openai-unsupported=drop, dropped (counted, logged once). It returns the
// fields as sent.
func (h *deps) decodeBody(r *http.Request, read map[string]bool, harmless map[string]func(json.RawMessage) bool, v any) (map[string]json.RawMessage, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &bodyTooLarge{apierr.InvalidArgument("body", fmt.Sprintf("is over the limit of %d bytes", tooBig.Limit))}
		}
		var tooMany *gateway.TooManyElements
		if errors.As(err, &tooMany) {
			return nil, &bodyTooLarge{apierr.InvalidArgument("body", tooMany.Error())}
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
	dropped := false
	for _, name := range slices.Sorted(maps.Keys(fields)) { // refused in a fixed order
		raw := fields[name]
		if read[name] {
			continue
		}
		if ok := harmless[name]; ok != nil && ok(raw) {
			continue
		}
		if err := h.unsupported(r, name); err != nil {
			return nil, err
		}
		delete(fields, name)
		dropped = true
	}
	if dropped {
		// What was dropped is not read either (a harmless field at a value
		// that asks for something is read at none).
		if data, err = json.Marshal(fields); err != nil {
			return nil, apierr.InvalidArgument("body", err.Error())
		}
	}
	if err := json.Unmarshal(data, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, apierr.InvalidArgument(typeErr.Field, "has the wrong type: "+typeErr.Value)
		}
		return nil, apierr.InvalidArgument("body", err.Error())
	}
	return fields, nil
}

// unsupported refuses the field name Parley cannot honour, or, with
// --openai-unsupported=drop, counts and logs it and returns nil (the caller
// leaves it out). A nested field is counted without its indexes
// ("messages[].content[].citations"), so the metric's labels stay few.
func (h *deps) unsupported(r *http.Request, name string) error {
	if h.Unsupported == UnsupportedDrop {
		h.dropped(r, fieldIndex.ReplaceAllString(name, "[]"))
		return nil
	}
	return apierr.InvalidArgument(name, "is not supported by this server (an operator can drop such fields with --openai-unsupported=drop)")
}

var fieldIndex = regexp.MustCompile(`\[\d+\]`)

// isJSON reports whether v is, but for spaces, one of values.
func isJSON(v json.RawMessage, values ...string) bool {
	t := string(bytes.TrimSpace(v))
	for _, want := range values {
		if t == want {
			return true
		}
	}
	return false
}

// Unsupported says what the OpenAI surface does with a request field it
// cannot honour.
type Unsupported int

const (
	// UnsupportedRefuse answers 400 naming the field (the default).
	UnsupportedRefuse Unsupported = iota
	// UnsupportedDrop drops the field, counts it and logs it once per field
	// (LiteLLM's drop_params).
	UnsupportedDrop
)

// ParseUnsupported reads the --openai-unsupported flag's value.
func ParseUnsupported(s string) (Unsupported, error) {
	switch s {
	case "", "refuse":
		return UnsupportedRefuse, nil
	case "drop":
		return UnsupportedDrop, nil
	}
	return 0, fmt.Errorf("--openai-unsupported: %q is not refuse or drop", s)
}

// dropped counts and logs (once per field) a field dropped by
// --openai-unsupported=drop.
func (h *deps) dropped(r *http.Request, name string) {
	h.dropMu.Lock()
	first := !h.droppedNames[name]
	if first {
		// Field names are the client's: past maxDroppedNames distinct ones,
		// the rest count as "other", so no client can grow the metric or the
		// log without bound.
		if len(h.droppedNames) >= maxDroppedNames {
			name, first = "other", !h.droppedNames["other"]
		}
		if h.droppedNames == nil {
			h.droppedNames = map[string]bool{}
		}
		h.droppedNames[name] = true
	}
	h.dropMu.Unlock()
	if hdr, ok := r.Context().Value(droppedHeaderKey{}).(http.Header); ok {
		hdr.Add(DroppedFieldsHeader, name)
	}
	if h.DroppedParams != nil {
		h.DroppedParams.WithLabelValues(name).Inc()
	}
	if first && h.Core != nil && h.Core.Logger != nil {
		h.Core.Logger.WarnContext(r.Context(), "dropped an unsupported request field (--openai-unsupported=drop); further drops of it are only counted", "field", name)
	}
}

// DroppedFieldsHeader names, one per header line, each request field (or
// hosted tool, as "tools") dropped from the request under
// --openai-unsupported=drop, so a client can see what was not honoured.
const DroppedFieldsHeader = "Parley-Dropped-Fields"

type droppedHeaderKey struct{}

// droppedHeader gives the handler's request the response's headers, where
// dropped adds the fields it drops: every surface reads its body before it
// answers, so they go out with the answer.
func droppedHeader(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h(w, r.WithContext(context.WithValue(r.Context(), droppedHeaderKey{}, w.Header())))
	}
}

// maxDroppedNames bounds the distinct field names the dropped-params metric
// and log name.
const maxDroppedNames = 64

// keepAlive calls ping every d until stopped (d <= 0: never): a stream's
// encoder's keep-alive (chunkWriter's `: ping` comment, or an event of the
// surface's own).
func keepAlive(d time.Duration, ping func() error) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	// A timer, not a goroutine with a ticker: an open stream then costs no
	// goroutine (and its stack) for its keep-alive.
	var (
		mu      sync.Mutex // held while pinging, so stop waits for a ping under way
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(d, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped && ping() == nil {
			t.Reset(d)
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		t.Stop()
	}
}

// interrupted is the error to answer with when a generation did not end by
// itself: cancelled (the server is shutting down: a client that went away
// reads nothing) or failed on its worker.
func interrupted(out *chat.Outcome) error {
	switch out.FinishReason {
	case llm.FinishError:
		return connect.NewError(connect.CodeInternal, fmt.Errorf(
			"the generation failed on the worker after %d tokens (those were charged)", out.Usage.CompletionTokens))
	case llm.FinishCancelled:
		return apierr.Unavailable(fmt.Sprintf(
			"the generation was stopped (the server is shutting down) after %d tokens (those were charged)", out.Usage.CompletionTokens), 2*time.Second)
	}
	return nil
}

// chunkWriter writes one stream's events: the headers with the first of
// them (held back until then, so a request refused before it starts still
// gets its HTTP status), each event under the lock the keep-alive shares.
// Each surface's encoder is built on it.
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

// started reports whether the stream's headers went out: from then on an
// error is written in the stream, not as the response.
func (c *chunkWriter) started() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened
}

// write writes v as an unnamed event, flushed.
func (c *chunkWriter) write(v any) error { return c.event("", v) }

// event writes v as one event named name ("" for none), flushed.
func (c *chunkWriter) event(name string, v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open()
	c.scratch.Reset()
	if err := json.NewEncoder(&c.scratch).Encode(v); err != nil {
		return err
	}
	data := bytes.TrimSuffix(c.scratch.Bytes(), []byte("\n"))
	return c.enc.WriteEvent(sse.Event{Event: name, Data: string(data)})
}

// done ends the stream with OpenAI's [DONE].
func (c *chunkWriter) done() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc.WriteEvent(sse.Event{Data: "[DONE]"})
}

// ping sends a `: ping` comment, the keep-alive of the OpenAI streams.
func (c *chunkWriter) ping() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open()
	return c.enc.WriteComment("ping")
}
