package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/compat/openaiwire"
	"github.com/parleyhq/parley/server/detach"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/sse"
)

// completionsRequest is the body of POST /v1/completions (OpenAI's legacy
// text completions), as far as Parley reads it.
type completionsRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int64          `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	N             *int            `json:"n"`
	Stop          json.RawMessage `json:"stop"`
	Seed          *int64          `json:"seed"`
	User          string          `json:"user"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Logprobs *int `json:"logprobs"`
}

var completionsParams = map[string]bool{
	"model": true, "prompt": true, "max_tokens": true, "temperature": true, "top_p": true, "n": true,
	"stop": true, "seed": true, "user": true, "stream": true, "stream_options": true, "logprobs": true,
}

// completionsHarmless are accepted at the values that ask for nothing
// Parley would have to do; echo true, a suffix and best_of > 1 are refused
// by name.
var completionsHarmless = map[string]func(json.RawMessage) bool{
	"echo":              func(v json.RawMessage) bool { return isJSON(v, "false", "null") },
	"suffix":            func(v json.RawMessage) bool { return isJSON(v, "null") },
	"best_of":           func(v json.RawMessage) bool { return isJSON(v, "1", "null") },
	"presence_penalty":  harmlessParams["presence_penalty"],
	"frequency_penalty": harmlessParams["frequency_penalty"],
	"logit_bias":        harmlessParams["logit_bias"],
}

const (
	// defaultCompletionTokens is max_tokens when a legacy completion does not
	// say (OpenAI's default).
	defaultCompletionTokens = 16
	// maxPrompts bounds the prompts of one legacy completion; each is a
	// generation of its own, run one after the other.
	maxPrompts = 16
	// maxLegacyLogprobs is the most alternatives legacy logprobs may ask for.
	maxLegacyLogprobs = 5
)

// promptField spells the chat mapping's message paths as the prompt.
var promptField = regexp.MustCompile(`^messages(\[0\](\.content(\[\d+\])?)?)?$`)

// toChat maps the request onto one chat.Request per prompt: the prompt as
// the user message, the rest through the chat completions mapping.
func (req *completionsRequest) toChat() ([]chat.Request, error) {
	var prompts []string
	var one string
	p := bytes.TrimSpace(req.Prompt)
	switch {
	case len(p) == 0 || string(p) == "null":
		return nil, apierr.InvalidArgument("prompt", "is required")
	case json.Unmarshal(p, &one) == nil:
		prompts = []string{one}
	case json.Unmarshal(p, &prompts) == nil:
		if len(prompts) == 0 {
			return nil, apierr.InvalidArgument("prompt", "must not be empty")
		}
		if len(prompts) > maxPrompts {
			return nil, apierr.InvalidArgument("prompt", fmt.Sprintf("%d prompts; at most %d", len(prompts), maxPrompts))
		}
	default:
		// Token ids are the client's tokenizer's: Parley cannot know which
		// one, so it takes text only rather than guess.
		return nil, apierr.InvalidArgument("prompt", "must be a string or an array of strings (token ids are not accepted: send the text)")
	}
	if req.N != nil && (*req.N < 1 || *req.N > chat.MaxChoices) {
		return nil, apierr.InvalidArgument("n", fmt.Sprintf("must be 1 to %d", chat.MaxChoices))
	}
	maxTokens := req.MaxTokens
	if maxTokens == nil {
		d := int64(defaultCompletionTokens)
		maxTokens = &d
	}
	chatReq := openAIRequest{Model: req.Model, MaxTokens: maxTokens, Temperature: req.Temperature, TopP: req.TopP,
		Stop: req.Stop, Seed: req.Seed, User: req.User, N: req.N}
	if k := req.Logprobs; k != nil {
		if *k < 0 || *k > maxLegacyLogprobs {
			return nil, apierr.InvalidArgument("logprobs", fmt.Sprintf("must be 0 to %d", maxLegacyLogprobs))
		}
		yes := true
		chatReq.Logprobs, chatReq.TopLogprobs = &yes, k
	}
	out := make([]chat.Request, 0, len(prompts))
	for i, text := range prompts {
		field := "prompt"
		if len(prompts) > 1 || p[0] == '[' {
			field = fmt.Sprintf("prompt[%d]", i)
		}
		if text == "" {
			return nil, apierr.InvalidArgument(field, "must not be empty")
		}
		content, _ := json.Marshal(text)
		chatReq.Messages = []openAIMessage{{Role: "user", Content: content}}
		cr, err := chatReq.toChat(nil)
		if err != nil {
			return nil, renameCompletionField(err, field)
		}
		chatRename := cr.Rename
		cr.Rename = func(f string) string {
			if g := legacyField(f, field); g != f {
				return g
			}
			return chatRename(f)
		}
		out = append(out, cr)
	}
	return out, nil
}

// renameCompletionField is err, from the chat completions mapping, with the
// field it names spelled as the legacy request spells it (the core's own
// errors are renamed by chat.Request.Rename).
func renameCompletionField(err error, prompt string) error {
	var fv parleyv1.FieldViolation
	if !apierr.Detail(err, &fv) {
		return err
	}
	f := legacyField(fv.GetField(), prompt)
	if f == fv.GetField() {
		return err
	}
	return apierr.InvalidArgument(f, fv.GetDescription())
}

// legacyField spells a field of the chat mapping as the legacy request
// does: the user message is the prompt, top_logprobs is logprobs.
func legacyField(f, prompt string) string {
	switch {
	case f == "top_logprobs":
		return "logprobs"
	case promptField.MatchString(f) || strings.HasPrefix(f, "messages[0]."):
		return prompt
	}
	return f
}

// textCompletion is a legacy completion, whole or one streamed chunk.
type textCompletion struct {
	ID      string                 `json:"id"`
	Object  string                 `json:"object"`
	Created int64                  `json:"created"`
	Model   string                 `json:"model"`
	Choices []textChoice           `json:"choices"`
	Usage   *openaiwire.ChunkUsage `json:"usage,omitempty"`
}

type textChoice struct {
	Text         string          `json:"text"`
	Index        int             `json:"index"`
	Logprobs     *legacyLogprobs `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// legacyLogprobs are log probabilities in the legacy completions' form.
type legacyLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// toLegacyLogprobs maps log probabilities; offset is where the first token
// starts in the choice's text (in characters), and is moved past the last.
func toLegacyLogprobs(in []*parleyv1.TokenLogprob, offset *int) *legacyLogprobs {
	out := &legacyLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, lp := range in {
		out.Tokens = append(out.Tokens, lp.GetToken())
		out.TokenLogprobs = append(out.TokenLogprobs, lp.GetLogprob())
		top := make(map[string]float64, len(lp.GetTopLogprobs()))
		for _, t := range lp.GetTopLogprobs() {
			top[t.GetToken()] = t.GetLogprob()
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, *offset)
		*offset += utf8.RuneCountInString(lp.GetToken())
	}
	return out
}

func (h *openAIHandler) parseCompletions(r *http.Request) (*completionsRequest, []chat.Request, error) {
	var req completionsRequest
	if _, err := h.decodeBody(r, completionsParams, completionsHarmless, &req); err != nil {
		return nil, nil, err
	}
	creqs, err := req.toChat()
	if err != nil {
		return nil, nil, err
	}
	return &req, creqs, nil
}

// Completions serves POST /v1/completions, OpenAI's legacy text
// completions: each prompt is a generation of its own through the core (a
// list of prompts runs them one after the other; choice i*n+j is prompt i's
// j-th), usage is their sum.
func (h *openAIHandler) Completions(w http.ResponseWriter, r *http.Request) {
	req, creqs, err := h.parseCompletions(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Stream {
		h.streamCompletions(w, r, req, creqs)
		return
	}
	body := textCompletion{Object: "text_completion", Created: time.Now().Unix(), Choices: []textChoice{}}
	var usage llm.Usage
	n := max(creqs[0].N, 1)
	for p, creq := range creqs {
		out, all, err := h.collect(r, creq)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if p == 0 {
			body.ID, body.Model = "cmpl-"+out.RequestID, out.Model
		}
		addUsage(&usage, out.Usage)
		for i, reason := range out.Choices {
			ch := all.Choice(i)
			finish := openAIFinishReason(reason)
			choice := textChoice{Text: ch.Text.String(), Index: p*n + i, FinishReason: &finish}
			if creq.Logprobs {
				offset := 0
				choice.Logprobs = toLegacyLogprobs(ch.Logprobs, &offset)
			}
			body.Choices = append(body.Choices, choice)
		}
	}
	body.Usage = openAIUsage(usage)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func addUsage(sum *llm.Usage, u llm.Usage) {
	sum.PromptTokens += u.PromptTokens
	sum.CompletionTokens += u.CompletionTokens
	sum.CachedTokens += u.CachedTokens
	sum.Estimated = sum.Estimated || u.Estimated
}

// streamCompletions answers with text_completion chunks, the prompts one
// after the other, then the usage (when asked for) and [DONE].
func (h *openAIHandler) streamCompletions(w http.ResponseWriter, r *http.Request, req *completionsRequest, creqs []chat.Request) {
	detach.Go(w, r, func(w http.ResponseWriter, r *http.Request) {
		n := max(creqs[0].N, 1)
		enc := &completionsStream{chunkWriter: chunkWriter{w: w, enc: sse.NewEncoder(w)}, creqs: creqs, n: n, offsets: make([]int, n),
			includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
			chunk:        textCompletion{Object: "text_completion", Choices: []textChoice{}}}
		h.runStream(r, enc, creqs, func(err error) { h.fail(w, r, err) })
	})
}

// completionsStream is the encoder of a streamed legacy completion: its
// generations are the prompts, prompt p's choice i being choice p*n+i.
type completionsStream struct {
	chunkWriter
	creqs        []chat.Request
	n            int
	offsets      []int // where each choice's next token starts in its text
	includeUsage bool
	chunk        textCompletion
	usage        llm.Usage
}

func (s *completionsStream) start(_ int, st *parleyv1.GenerationStarted) error {
	if s.chunk.ID == "" {
		s.chunk.ID, s.chunk.Model, s.chunk.Created = "cmpl-"+st.GetRequestId(), st.GetModel(), time.Now().Unix()
	}
	return nil
}

func (s *completionsStream) delta(p int, d *parleyv1.GenerationDelta) error {
	i := int(d.GetChoice())
	choice := textChoice{Text: d.GetText(), Index: p*s.n + i}
	if s.creqs[p].Logprobs && i < len(s.offsets) {
		choice.Logprobs = toLegacyLogprobs(d.GetLogprobs(), &s.offsets[i])
	}
	s.chunk.Choices = append(s.chunk.Choices[:0], choice)
	return s.write(&s.chunk)
}

// finish writes prompt p's finish reasons; after the last prompt's, the
// usage (when asked for) and [DONE].
func (s *completionsStream) finish(p int, result *chat.Outcome) {
	addUsage(&s.usage, result.Usage)
	for i, reason := range result.Choices {
		finish := openAIFinishReason(reason)
		s.chunk.Choices = append(s.chunk.Choices[:0], textChoice{Index: p*s.n + i, FinishReason: &finish})
		_ = s.write(&s.chunk)
	}
	clear(s.offsets) // the next prompt's choices start their texts afresh
	if p < len(s.creqs)-1 {
		return
	}
	if s.includeUsage {
		s.chunk.Choices = []textChoice{}
		s.chunk.Usage = openAIUsage(s.usage)
		_ = s.write(&s.chunk)
	}
	_ = s.done()
}

func (s *completionsStream) fail(err error) { s.error(err) }
