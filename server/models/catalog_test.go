package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCostRoundsUpPerPart(t *testing.T) {
	m := &Model{InputPriceNanosPerMillion: 150_000_000, OutputPriceNanosPerMillion: 600_000_000}
	// 1 input token costs 150 nano-USD exactly; 3 output tokens cost 1800.
	if got := m.Cost(1, 3); got != 150+1800 {
		t.Fatalf("cost %d", got)
	}
	cheap := &Model{InputPriceNanosPerMillion: 1, OutputPriceNanosPerMillion: 1}
	if got := cheap.Cost(1, 1); got != 2 {
		t.Fatalf("fractions must round up, got %d", got)
	}
	if got := m.Cost(0, 0); got != 0 {
		t.Fatalf("nothing costs nothing, got %d", got)
	}
}

func TestDefaultsAndFile(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup("sim-small"); !ok {
		t.Fatal("default catalog lacks sim-small")
	}
	path := filepath.Join(t.TempDir(), "models.yaml")
	_ = os.WriteFile(path, []byte("models:\n- id: m\n  context_window: 100\n  max_output_tokens: 200\n"), 0o600)
	if _, err := Load(path); err == nil {
		t.Fatal("max_output_tokens ≥ context_window accepted")
	}
	_ = os.WriteFile(path, []byte("models:\n- id: m\n  context_window: 1000\n  max_output_tokens: 200\n  tier_limits:\n    free: {requests: 1, input_tokens: 10, output_tokens: 10, window: 1h}\n"), 0o600)
	c, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Lookup("m")
	if m.TierLimits["free"].Window.Hours() != 1 || !m.Accepts("text") || m.Accepts("image") {
		t.Fatalf("parsed %+v", m)
	}
}

// A model's version changes with any of its settings (response cache keys
// carry it), and only then.
func TestVersionFollowsTheEntry(t *testing.T) {
	mk := func(price int64) *Model {
		return &Model{ID: "m", ContextWindow: 100, MaxOutputTokens: 10, OutputPriceNanosPerMillion: price}
	}
	a, _ := New([]*Model{mk(1)})
	b, _ := New([]*Model{mk(1)})
	c, _ := New([]*Model{mk(2)})
	va, _ := a.Lookup("m")
	vb, _ := b.Lookup("m")
	vc, _ := c.Lookup("m")
	if va.Version() == "" || va.Version() != vb.Version() || va.Version() == vc.Version() {
		t.Fatalf("versions %q %q %q", va.Version(), vb.Version(), vc.Version())
	}
	if got := vc.CacheHitCost(1_000_000, 0); got != 0 {
		t.Fatalf("cache hits are free by default: %d", got)
	}
	vc.CacheHitPriceNanosPerMillion = 1000
	if got := vc.CacheHitCost(1500, 500); got != 2 {
		t.Fatalf("2,000 tokens at 1,000 nano-USD a million: %d", got)
	}
}

// A chat model's capabilities default to tools and structured output; an
// empty list is none; unknown ones and capabilities of an embedding model
// are refused by name.
func TestCapabilities(t *testing.T) {
	path := filepath.Join(t.TempDir(), "models.yaml")
	load := func(entry string) (*Catalog, error) {
		_ = os.WriteFile(path, []byte("models:\n- id: m\n  context_window: 1000\n  max_output_tokens: 200\n"+entry), 0o600)
		return Load(path)
	}
	for entry, want := range map[string]string{
		"":                                     "tools,structured_output",
		"  capabilities: []\n":                 "",
		"  capabilities: [reasoning, tools]\n": "reasoning,tools",
	} {
		c, err := load(entry)
		if err != nil {
			t.Fatalf("%q: %v", entry, err)
		}
		m, _ := c.Lookup("m")
		if got := strings.Join(m.Capabilities, ","); got != want {
			t.Errorf("%q: capabilities %q, want %q", entry, got, want)
		}
		if m.Can(CapReasoning) != strings.Contains(want, "reasoning") {
			t.Errorf("%q: Can(reasoning) = %v", entry, m.Can(CapReasoning))
		}
	}
	if _, err := load("  capabilities: [vision]\n"); err == nil || !strings.Contains(err.Error(), `capabilities[0] "vision"`) {
		t.Errorf("an unknown capability: %v", err)
	}
	_ = os.WriteFile(path, []byte("models:\n- id: e\n  kind: embedding\n  context_window: 100\n  embedding_dimensions: 8\n  capabilities: [tools]\n"), 0o600)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "no capabilities") {
		t.Errorf("an embedding model with capabilities: %v", err)
	}
	for _, m := range Defaults() {
		c, _ := New([]*Model{m})
		got, _ := c.Lookup(m.ID)
		if got.Embeds() != (len(got.Capabilities) == 0) {
			t.Errorf("embedded %s: capabilities %v", m.ID, got.Capabilities)
		}
	}
}
