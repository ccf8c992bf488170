// Package models is the catalog of models the gateway offers: their limits,
// prices and the web tiers' allowances. It is configuration, read once at
// start; every surface (ListModels, billing, limits, the chat core) reads the
// same catalog.
package models

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/server/store"
)

// Model is one model as offered to users.
type Model struct {
	// ID is the name clients ask for.
	ID string `yaml:"id"`
	// DisplayName is shown in pickers.
	DisplayName string `yaml:"display_name"`
	// Description says what it is; simulated models say so.
	Description string `yaml:"description"`
	// Simulated marks models served by the sim engine.
	Simulated bool `yaml:"simulated"`
	// ContextWindow bounds prompt plus completion, in tokens.
	ContextWindow int64 `yaml:"context_window"`
	// MaxOutputTokens is the fixed completion bound, and the default one.
	MaxOutputTokens int64 `yaml:"max_output_tokens"`
	// InputPriceNanosPerMillion is the price of a million prompt tokens, in nano-USD.
	InputPriceNanosPerMillion int64 `yaml:"input_price_nanos_per_million"`
	// OutputPriceNanosPerMillion is the price of a million completion tokens, in nano-USD.
	OutputPriceNanosPerMillion int64 `yaml:"output_price_nanos_per_million"`
	// Modalities are the input kinds accepted: text, image, document.
	Modalities []string `yaml:"modalities"`
	// Capabilities are what a chat model can do beyond answering text:
	// tools (calls functions), structured_output (answers in JSON, or JSON
	// valid against a schema) and reasoning (reasons before answering, and
	// takes a reasoning effort). Unset: tools and structured_output, as
	// every model Parley's engines serve can be made to do both; set it to
	// [] for a model that can do neither. Embedding models have none.
	Capabilities []string `yaml:"capabilities"`
	// TierLimits are the web channel's allowances per tier (on an
	// embedding model: for indexing web projects' files).
	TierLimits map[store.Tier]TierLimit `yaml:"tier_limits"`
	// Kind is KindChat (the default) or KindEmbedding.
	Kind string `yaml:"kind"`
	// EmbeddingDimensions is an embedding model's vector length.
	EmbeddingDimensions int `yaml:"embedding_dimensions"`
	// Aliases are other names clients may ask for this model by: exact
	// names ("claude-sonnet-4-5") or patterns where * stands for any run of
	// characters ("claude-*"), for clients with built-in model lists. A
	// name is resolved to a model's ID first, then to an exact alias, then
	// to the first pattern that matches, in catalog order.
	Aliases []string `yaml:"aliases"`
	// CacheHitPriceNanosPerMillion is the price of a million tokens (prompt
	// and completion together) of an answer served from the response cache,
	// in nano-USD; zero (the default) makes cache hits free.
	CacheHitPriceNanosPerMillion int64 `yaml:"cache_hit_price_nanos_per_million"`
	// BatchInputPriceNanosPerMillion and BatchOutputPriceNanosPerMillion
	// are the prices of a batch's tokens (the Batch API: work run on idle
	// capacity); unset, half the interactive prices (rounded up).
	BatchInputPriceNanosPerMillion  *int64 `yaml:"batch_input_price_nanos_per_million,omitempty"`
	BatchOutputPriceNanosPerMillion *int64 `yaml:"batch_output_price_nanos_per_million,omitempty"`

	// version is a hash of the entry as loaded (see Version).
	version string
}

// Version is a hash of the model's catalog entry: it changes whenever any of
// its settings does, so what was cached under one entry (response cache
// keys) is never served under another.
func (m *Model) Version() string { return m.version }

// BatchPrices are the model's prices for a batch's prompt and completion
// tokens, per million in nano-USD.
func (m *Model) BatchPrices() (input, output int64) {
	input, output = (m.InputPriceNanosPerMillion+1)/2, (m.OutputPriceNanosPerMillion+1)/2
	if m.BatchInputPriceNanosPerMillion != nil {
		input = *m.BatchInputPriceNanosPerMillion
	}
	if m.BatchOutputPriceNanosPerMillion != nil {
		output = *m.BatchOutputPriceNanosPerMillion
	}
	return input, output
}

// BatchCost is the price in nano-USD of a batch line's tokens, rounded up
// as Cost is.
func (m *Model) BatchCost(promptTokens, completionTokens int64) int64 {
	in, out := m.BatchPrices()
	return priceOf(promptTokens, in) + priceOf(completionTokens, out)
}

// CacheHitCost is the price in nano-USD of an answer of the given tokens
// served from the response cache.
func (m *Model) CacheHitCost(promptTokens, completionTokens int64) int64 {
	return priceOf(promptTokens+completionTokens, m.CacheHitPriceNanosPerMillion)
}

// The kinds of model.
const (
	KindChat      = "chat"
	KindEmbedding = "embedding"
)

// The capabilities a chat model may have (Model.Capabilities).
const (
	CapTools            = "tools"
	CapStructuredOutput = "structured_output"
	CapReasoning        = "reasoning"
)

// DefaultCapabilities are a chat model's when its entry names none.
func DefaultCapabilities() []string { return []string{CapTools, CapStructuredOutput} }

// Can reports whether the model has the capability (CapTools, …).
func (m *Model) Can(capability string) bool { return slices.Contains(m.Capabilities, capability) }

// Embeds reports whether the model is an embedding model.
func (m *Model) Embeds() bool { return m.Kind == KindEmbedding }

// TierLimit is one tier's allowance on one model per window.
type TierLimit struct {
	// Requests per window.
	Requests int64 `yaml:"requests"`
	// InputTokens per window.
	InputTokens int64 `yaml:"input_tokens"`
	// OutputTokens per window.
	OutputTokens int64 `yaml:"output_tokens"`
	// Window is the period over which the allowances refill.
	Window time.Duration `yaml:"window"`
}

// Cost is the price in nano-USD of the given tokens, each part rounded up
// to a whole nano-USD so no request is free by rounding.
func (m *Model) Cost(promptTokens, completionTokens int64) int64 {
	return priceOf(promptTokens, m.InputPriceNanosPerMillion) + priceOf(completionTokens, m.OutputPriceNanosPerMillion)
}

func priceOf(tokens, nanosPerMillion int64) int64 {
	if tokens <= 0 || nanosPerMillion <= 0 {
		return 0
	}
	return (tokens*nanosPerMillion + 999_999) / 1_000_000
}

// Accepts reports whether the model takes inputs of the modality.
func (m *Model) Accepts(modality string) bool { return slices.Contains(m.Modalities, modality) }

// Catalog is the set of models offered, in a fixed order: those configured,
// then those learned from workers at the operator's default price
// (learn.go). It is safe for concurrent use; lookups take no lock.
type Catalog struct {
	snap atomic.Pointer[snapshot]

	mu       sync.Mutex // serialises learning
	unpriced Unpriced
	logger   *slog.Logger
	learned  map[string]bool     // served at the default price
	refused  map[string][]string // unpriced and refused: model → "worker (pool)" serving it
}

// snapshot is the catalog's models at one time; never changed once published.
type snapshot struct {
	models   []*Model
	byID     map[string]*Model
	byAlias  map[string]*Model
	patterns []aliasPattern // in catalog order
}

type aliasPattern struct {
	pattern string
	model   *Model
}

// Lookup returns the model named id: by its ID, or by one of its aliases.
func (c *Catalog) Lookup(id string) (*Model, bool) {
	s := c.snap.Load()
	if m, ok := s.byID[id]; ok {
		return m, true
	}
	if m, ok := s.byAlias[id]; ok {
		return m, true
	}
	for _, p := range s.patterns {
		if matchAlias(p.pattern, id) {
			return p.model, true
		}
	}
	return nil, false
}

// matchAlias reports whether name matches pattern, where each * stands for
// any run of characters (none included).
func matchAlias(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return strings.HasSuffix(name, parts[len(parts)-1])
}

// All returns every model, in catalog order.
func (c *Catalog) All() []*Model { return c.snap.Load().models }

// New makes a catalog, checking every model's settings.
func New(models []*Model) (*Catalog, error) {
	c := &snapshot{byID: map[string]*Model{}, byAlias: map[string]*Model{}}
	for _, m := range models {
		if m.ID != "" {
			c.byID[m.ID] = nil // reserved: an alias may not name a model
		}
	}
	for i, m := range models {
		where := fmt.Sprintf("models[%d] (%s)", i, m.ID)
		switch {
		case m.ID == "":
			return nil, fmt.Errorf("models[%d]: id is required", i)
		case c.byID[m.ID] != nil:
			return nil, fmt.Errorf("%s: duplicate id", where)
		}
		for j, a := range m.Aliases {
			at := fmt.Sprintf("%s: aliases[%d] %q", where, j, a)
			if _, isID := c.byID[a]; isID {
				return nil, fmt.Errorf("%s: names a model", at)
			}
			switch {
			case a == "" || a == "*" || strings.ContainsAny(a, " \t\n"):
				return nil, fmt.Errorf("%s: an alias is a name without spaces, or a pattern with * and at least one other character", at)
			case strings.Contains(a, "*"):
				for _, p := range c.patterns {
					if p.pattern == a {
						return nil, fmt.Errorf("%s: also an alias of %s", at, p.model.ID)
					}
				}
				c.patterns = append(c.patterns, aliasPattern{a, m})
			case c.byAlias[a] != nil:
				return nil, fmt.Errorf("%s: also an alias of %s", at, c.byAlias[a].ID)
			default:
				c.byAlias[a] = m
			}
		}
		switch {
		case m.Kind != "" && m.Kind != KindChat && m.Kind != KindEmbedding:
			return nil, fmt.Errorf("%s: kind must be chat or embedding", where)
		case m.Kind == KindEmbedding && (m.ContextWindow <= 0 || m.EmbeddingDimensions <= 0):
			// (Its tier_limits, if any, bound the indexing of web projects'
			// files; no web chat runs on it.)
			return nil, fmt.Errorf("%s: an embedding model needs context_window and embedding_dimensions", where)
		case m.Kind != KindEmbedding && (m.ContextWindow <= 0 || m.MaxOutputTokens <= 0 || m.MaxOutputTokens >= m.ContextWindow):
			return nil, fmt.Errorf("%s: need 0 < max_output_tokens < context_window", where)
		case m.InputPriceNanosPerMillion < 0 || m.OutputPriceNanosPerMillion < 0 || m.CacheHitPriceNanosPerMillion < 0:
			return nil, fmt.Errorf("%s: prices must not be negative", where)
		case m.BatchInputPriceNanosPerMillion != nil && *m.BatchInputPriceNanosPerMillion < 0,
			m.BatchOutputPriceNanosPerMillion != nil && *m.BatchOutputPriceNanosPerMillion < 0:
			return nil, fmt.Errorf("%s: batch prices must not be negative", where)
		}
		if len(m.Modalities) == 0 {
			m.Modalities = []string{"text"}
		}
		if m.Kind == "" {
			m.Kind = KindChat
		}
		switch {
		case m.Kind == KindEmbedding && len(m.Capabilities) > 0:
			return nil, fmt.Errorf("%s: an embedding model has no capabilities", where)
		case m.Kind == KindChat && m.Capabilities == nil:
			m.Capabilities = DefaultCapabilities()
		}
		for j, c := range m.Capabilities {
			if c != CapTools && c != CapStructuredOutput && c != CapReasoning {
				return nil, fmt.Errorf("%s: capabilities[%d] %q: must be tools, structured_output or reasoning", where, j, c)
			}
		}
		for tier, l := range m.TierLimits {
			if !tier.Valid() || l.Window <= 0 || l.Requests <= 0 || l.InputTokens <= 0 || l.OutputTokens <= 0 {
				return nil, fmt.Errorf("%s: tier_limits[%s]: need a known tier and positive limits and window", where, tier)
			}
		}
		entry, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		sum := sha256.Sum256(entry)
		m.version = hex.EncodeToString(sum[:8])
		c.models = append(c.models, m)
		c.byID[m.ID] = m
	}
	if len(c.models) == 0 {
		return nil, errors.New("models: the catalog is empty")
	}
	cat := &Catalog{learned: map[string]bool{}, refused: map[string][]string{}, logger: slog.New(slog.DiscardHandler)}
	cat.snap.Store(c)
	return cat, nil
}

// Load reads a catalog from a YAML file ({models: [...]}), or returns the
// default catalog when path is empty.
func Load(path string) (*Catalog, error) {
	ms, err := read(path)
	if err != nil {
		return nil, err
	}
	return New(ms)
}

func read(path string) ([]*Model, error) {
	if path == "" {
		return Defaults(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	var file struct {
		Models []*Model `yaml:"models"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	return file.Models, nil
}

// WithAliases sets ms's aliases from spec, a comma-separated list of
// NAME=MODEL (NAME exact or a pattern with *): "" keeps them, "off" drops
// them all, and a list replaces them all (e.g. "claude-*=sim-large").
func WithAliases(ms []*Model, spec string) ([]*Model, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return ms, nil
	}
	out := make([]*Model, len(ms))
	byID := map[string]*Model{}
	for i, m := range ms {
		c := *m
		c.Aliases = nil
		out[i] = &c
		byID[c.ID] = &c
	}
	if spec == "off" {
		return out, nil
	}
	for _, pair := range strings.Split(spec, ",") {
		name, id, ok := strings.Cut(strings.TrimSpace(pair), "=")
		m := byID[strings.TrimSpace(id)]
		switch {
		case !ok || strings.TrimSpace(name) == "":
			return nil, fmt.Errorf("model aliases: %q is not NAME=MODEL", pair)
		case m == nil:
			return nil, fmt.Errorf("model aliases: %q: no model %q in the catalog", pair, strings.TrimSpace(id))
		}
		m.Aliases = append(m.Aliases, strings.TrimSpace(name))
	}
	return out, nil
}

// Defaults is the embedded catalog: the sim engine's models, priced like
// small and large hosted models so billing is exercised realistically.
func Defaults() []*Model {
	limits := func(scale int64) map[store.Tier]TierLimit {
		const window = 3 * time.Hour
		return map[store.Tier]TierLimit{
			store.TierFree: {Requests: 20 * scale, InputTokens: 100_000 * scale, OutputTokens: 20_000 * scale, Window: window},
			store.TierPlus: {Requests: 100 * scale, InputTokens: 500_000 * scale, OutputTokens: 100_000 * scale, Window: window},
			store.TierPro:  {Requests: 500 * scale, InputTokens: 2_500_000 * scale, OutputTokens: 500_000 * scale, Window: window},
			store.TierMax:  {Requests: 2000 * scale, InputTokens: 10_000_000 * scale, OutputTokens: 2_000_000 * scale, Window: window},
		}
	}
	return []*Model{
		{
			ID: "sim-small", DisplayName: "Sim Small (simulated)",
			Description:   "A simulated model served by Parley's built-in sim engine: deterministic text, no real inference.",
			Simulated:     true,
			ContextWindow: 16_384, MaxOutputTokens: 1024,
			InputPriceNanosPerMillion: 150_000_000, OutputPriceNanosPerMillion: 600_000_000,
			Modalities: []string{"text", "image", "document"},
			TierLimits: limits(2),
		},
		{
			ID: "sim-large", DisplayName: "Sim Large (simulated)",
			Description:   "A larger simulated model served by Parley's built-in sim engine: deterministic text, no real inference.",
			Simulated:     true,
			ContextWindow: 131_072, MaxOutputTokens: 4096,
			InputPriceNanosPerMillion: 2_500_000_000, OutputPriceNanosPerMillion: 10_000_000_000,
			Modalities: []string{"text", "image", "document"},
			TierLimits: limits(1),
			// Clients with built-in model lists (Claude Code, Codex) ask
			// for names of their own: on the embedded default, those are
			// the large sim (its window holds their system prompts).
			Aliases: []string{"claude-*", "gpt-*"},
		},
		{
			ID: "sim-embed", DisplayName: "Sim Embed (simulated)",
			Description: "A simulated embedding model served by Parley's built-in sim engine: vectors hashed from " +
				"the words of the text, so texts sharing words are close; no real model runs.",
			Simulated: true, Kind: KindEmbedding, EmbeddingDimensions: 512,
			ContextWindow:             8192,
			InputPriceNanosPerMillion: 20_000_000,
			// Indexing a web project's files counts here.
			TierLimits: limits(10),
		},
	}
}

// Permits reports whether a list of allowed models (an organisation key's:
// ids or aliases; empty allows every model) lets a request that asked for
// asked use m.
func (c *Catalog) Permits(allowed []string, asked string, m *Model) bool {
	if len(allowed) == 0 {
		return true
	}
	for _, a := range allowed {
		if a == asked || a == m.ID {
			return true
		}
		if am, ok := c.Lookup(a); ok && am.ID == m.ID {
			return true
		}
	}
	return false
}

// Visible is All narrowed to what allowed permits (every model when it is
// empty).
func (c *Catalog) Visible(allowed []string) []*Model {
	all := c.All()
	if len(allowed) == 0 {
		return all
	}
	var out []*Model
	for _, m := range all {
		if c.Permits(allowed, m.ID, m) {
			out = append(out, m)
		}
	}
	return out
}
