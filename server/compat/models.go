package compat

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/models"
)

// openAIModel is a model as OpenAI's /v1/models describes it, with what a
// client needs to use it well beside (ignored by the SDKs): its window,
// output bound, input kinds and capabilities, as the catalog has them.
type openAIModel struct {
	ID              string   `json:"id"`
	Object          string   `json:"object"`
	Created         int64    `json:"created"`
	OwnedBy         string   `json:"owned_by"`
	ContextWindow   int64    `json:"context_window"`
	MaxOutputTokens int64    `json:"max_output_tokens,omitempty"`
	Modalities      []string `json:"modalities"`
	Capabilities    []string `json:"capabilities"`
	Aliases         []string `json:"aliases,omitempty"`
	// Pricing is Parley's: the API channel's and a batch's prices, per
	// million tokens in nano-USD.
	Pricing modelPricing `json:"pricing"`
}

type modelPricing struct {
	Input       int64 `json:"input_nanos_per_million"`
	Output      int64 `json:"output_nanos_per_million"`
	BatchInput  int64 `json:"batch_input_nanos_per_million"`
	BatchOutput int64 `json:"batch_output_nanos_per_million"`
}

func toOpenAIModel(m *models.Model) openAIModel {
	owner := "parley"
	if m.Simulated {
		owner = "parley-sim"
	}
	caps := slices.Sorted(slices.Values(m.Capabilities))
	if caps == nil {
		caps = []string{}
	}
	o := openAIModel{ID: m.ID, Object: "model", OwnedBy: owner, ContextWindow: m.ContextWindow,
		MaxOutputTokens: m.MaxOutputTokens, Modalities: m.Modalities, Capabilities: caps, Aliases: m.Aliases,
		Pricing: modelPricing{Input: m.InputPriceNanosPerMillion, Output: m.OutputPriceNanosPerMillion}}
	o.Pricing.BatchInput, o.Pricing.BatchOutput = m.BatchPrices()
	return o
}

// anthropicModel is a model as Anthropic's /v1/models describes it, with
// its token bounds.
type anthropicModel struct {
	Type           string `json:"type"`
	ID             string `json:"id"`
	DisplayName    string `json:"display_name"`
	CreatedAt      string `json:"created_at"`
	MaxInputTokens int64  `json:"max_input_tokens"`
	MaxTokens      int64  `json:"max_tokens"`
}

func toAnthropicModel(m *models.Model) anthropicModel {
	return anthropicModel{Type: "model", ID: m.ID, DisplayName: m.DisplayName, CreatedAt: time.Unix(0, 0).UTC().Format(time.RFC3339),
		MaxInputTokens: m.ContextWindow - m.MaxOutputTokens, MaxTokens: m.MaxOutputTokens}
}

// anthropicClient reports whether a request comes from an Anthropic
// client (its SDKs always send anthropic-version): it gets Anthropic's
// shapes on the paths both APIs share.
func anthropicClient(r *http.Request) bool { return r.Header.Get("anthropic-version") != "" }

// Models serves GET /v1/models: OpenAI's list, or Anthropic's to an
// Anthropic client (not paged: the catalog is short).
func (h *openAIHandler) Models(w http.ResponseWriter, r *http.Request) {
	all := h.Catalog.Visible(keyModels(r.Context()))
	w.Header().Set("Content-Type", "application/json")
	if anthropicClient(r) {
		setAnthropicRequestID(w)
		list := struct {
			Data    []anthropicModel `json:"data"`
			HasMore bool             `json:"has_more"`
			FirstID *string          `json:"first_id"`
			LastID  *string          `json:"last_id"`
		}{Data: []anthropicModel{}}
		for _, m := range all {
			if !m.Embeds() {
				list.Data = append(list.Data, toAnthropicModel(m))
			}
		}
		if n := len(list.Data); n > 0 {
			list.FirstID, list.LastID = &list.Data[0].ID, &list.Data[n-1].ID
		}
		_ = json.NewEncoder(w).Encode(list)
		return
	}
	list := struct {
		Object string        `json:"object"`
		Data   []openAIModel `json:"data"`
	}{Object: "list", Data: []openAIModel{}}
	for _, m := range all {
		list.Data = append(list.Data, toOpenAIModel(m))
	}
	_ = json.NewEncoder(w).Encode(list)
}

// Model serves GET /v1/models/{id}, by id or alias, in the shape of the
// client's API.
func (h *openAIHandler) Model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m, ok := h.Catalog.Lookup(id)
	ok = ok && h.Catalog.Permits(keyModels(r.Context()), id, m)
	if !ok || (anthropicClient(r) && m.Embeds()) {
		if anthropicClient(r) {
			setAnthropicRequestID(w)
			writeAnthropicError(w, r, apierr.UnknownModel("model", id))
			return
		}
		h.fail(w, r, apierr.UnknownModel("model", id))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if anthropicClient(r) {
		setAnthropicRequestID(w)
		_ = json.NewEncoder(w).Encode(toAnthropicModel(m))
		return
	}
	_ = json.NewEncoder(w).Encode(toOpenAIModel(m))
}

// keyModels is the model list of the organisation key that authenticated
// ctx (nil: every model).
func keyModels(ctx context.Context) []string {
	if p, ok := auth.FromContext(ctx); ok && p.Org != nil {
		return p.Org.Models
	}
	return nil
}
