package models

import (
	"strings"
	"testing"
)

func TestAliases(t *testing.T) {
	ms, err := WithAliases(Defaults(), "claude-haiku-*=sim-small,claude-*=sim-large,gpt-5-codex=sim-small,gpt-*=sim-large")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(ms)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"sim-small":                  "sim-small", // an ID is itself
		"claude-haiku-4-5":           "sim-small", // the first pattern that matches, in catalog order
		"claude-sonnet-4-5-20250929": "sim-large",
		"gpt-5-codex":                "sim-small", // an exact alias before any pattern
		"gpt-5":                      "sim-large",
		"claude-":                    "sim-large", // * matches no characters too
	} {
		m, ok := c.Lookup(name)
		if !ok || m.ID != want {
			t.Errorf("Lookup(%q) = %v %v, want %s", name, m, ok, want)
		}
	}
	for _, name := range []string{"", "claude", "xclaude-3", "no-such-model", "gpt"} {
		if m, ok := c.Lookup(name); ok {
			t.Errorf("Lookup(%q) = %s, want none", name, m.ID)
		}
	}
	// The embedded catalog's own.
	d, _ := New(Defaults())
	if m, ok := d.Lookup("claude-opus-4-1"); !ok || m.ID != "sim-large" {
		t.Errorf("the embedded catalog answers claude-opus-4-1 with %v", m)
	}
	off, _ := WithAliases(Defaults(), "off")
	if d, _ := New(off); d != nil {
		if _, ok := d.Lookup("claude-opus-4-1"); ok {
			t.Error("--model-aliases off left an alias")
		}
	}
}

func TestAliasesRefused(t *testing.T) {
	for spec, want := range map[string]string{
		"sim-small=sim-large":       "names a model",
		"a=sim-small,a=sim-large":   "also an alias of sim-small",
		"a*=sim-small,a*=sim-large": "also an alias of sim-small",
		"*=sim-small":               "pattern with *",
		"a b=sim-small":             "without spaces",
		"claude=nope":               `no model "nope"`,
		"claude":                    "not NAME=MODEL",
	} {
		ms, err := WithAliases(Defaults(), spec)
		if err == nil {
			_, err = New(ms)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error saying %q", spec, err, want)
		}
	}
}
