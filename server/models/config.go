package models

import "flag"

// Config is the model catalog as `parley serve` configures it: the catalog
// file and the policy for models the workers serve that it does not price.
type Config struct {
	// File is the YAML catalog (Load); empty: the embedded sim models.
	File string
	// Aliases is WithAliases' spec: "" keeps the catalog's aliases.
	Aliases string
	// UnpricedMode, UnpricedInput, UnpricedOutput, UnpricedContextWindow and
	// UnpricedMaxOutput are ParseUnpriced's arguments.
	UnpricedMode                                                            string
	UnpricedInput, UnpricedOutput, UnpricedContextWindow, UnpricedMaxOutput int64
}

// RegisterFlags registers the catalog's settings with their defaults,
// filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.File, "models-file", "", "YAML catalog of models (empty: the embedded sim models)")
	fs.StringVar(&c.Aliases, "model-aliases", "", "other names clients may ask for models by, replacing the catalog's: NAME=MODEL,… where NAME may hold * (e.g. claude-*=sim-large), or off (unset: the catalog's; the embedded one answers claude-* and gpt-* with sim-large)")
	fs.StringVar(&c.UnpricedMode, "unpriced-models", "refuse", "models the workers serve that --models-file does not price: refuse (logged, in /readyz, a clear error to clients) or default (served at the --unpriced-* prices)")
	fs.Int64Var(&c.UnpricedInput, "unpriced-input-price", -1, "with --unpriced-models=default: their price per million prompt tokens, in nano-USD (unset: required with --unpriced-models=default)")
	fs.Int64Var(&c.UnpricedOutput, "unpriced-output-price", -1, "with --unpriced-models=default: their price per million completion tokens, in nano-USD (unset: required with --unpriced-models=default)")
	fs.Int64Var(&c.UnpricedContextWindow, "unpriced-context-window", 32_768, "with --unpriced-models=default: their context window, in tokens")
	fs.Int64Var(&c.UnpricedMaxOutput, "unpriced-max-output-tokens", 4096, "with --unpriced-models=default: their completion bound, in tokens")
}

// Catalog loads the catalog File names with the Aliases given.
func (c *Config) Catalog() (*Catalog, error) {
	ms, err := read(c.File)
	if err != nil {
		return nil, err
	}
	if ms, err = WithAliases(ms, c.Aliases); err != nil {
		return nil, err
	}
	return New(ms)
}

// Unpriced parses the unpriced-model policy (ParseUnpriced).
func (c *Config) Unpriced() (Unpriced, error) {
	return ParseUnpriced(c.UnpricedMode, c.UnpricedInput, c.UnpricedOutput, c.UnpricedContextWindow, c.UnpricedMaxOutput)
}
