package models

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"connectrpc.com/connect"

	"github.com/parleyhq/parley/server/apierr"
)

// Unpriced says what the gateway does with a model its workers serve that
// the catalog does not price: refuse it (the zero value) — with a log line,
// a /readyz message and a clear error to the clients that ask for it — or
// serve it at the operator's default prices and limits.
type Unpriced struct {
	// Serve takes such models at the prices below; false refuses them.
	Serve bool
	// InputPriceNanosPerMillion and OutputPriceNanosPerMillion are their
	// prices, in nano-USD per million tokens.
	InputPriceNanosPerMillion, OutputPriceNanosPerMillion int64
	// ContextWindow and MaxOutputTokens bound their requests.
	ContextWindow, MaxOutputTokens int64
}

// ParseUnpriced reads the --unpriced-models mode ("refuse" or "default")
// and the default prices and limits; a price below zero is unset, and
// "default" needs both prices.
func ParseUnpriced(mode string, input, output, contextWindow, maxOutput int64) (Unpriced, error) {
	switch mode {
	case "refuse", "":
		return Unpriced{}, nil
	case "default":
	default:
		return Unpriced{}, fmt.Errorf("--unpriced-models: %q: want refuse or default", mode)
	}
	u := Unpriced{Serve: true, InputPriceNanosPerMillion: input, OutputPriceNanosPerMillion: output,
		ContextWindow: contextWindow, MaxOutputTokens: maxOutput}
	switch {
	case input < 0 || output < 0:
		return Unpriced{}, fmt.Errorf("--unpriced-models=default needs --unpriced-input-price and --unpriced-output-price (nano-USD per million tokens, 0 or more)")
	case maxOutput <= 0 || maxOutput >= contextWindow:
		return Unpriced{}, fmt.Errorf("--unpriced-max-output-tokens: need 0 < it < --unpriced-context-window")
	}
	return u, nil
}

// SetUnpriced sets the policy for unpriced models and where learning logs.
// Call it before Learn.
func (c *Catalog) SetUnpriced(u Unpriced, logger *slog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unpriced = u
	if logger != nil {
		c.logger = logger
	}
}

// Learn takes the models a worker (of pool) serves. One the catalog does
// not price is added at the default price or refused, by the policy, and
// logged once either way.
func (c *Catalog) Learn(worker, pool string, ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	by := worker + " (pool " + pool + ")"
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, ok := c.Lookup(id); ok {
			continue
		}
		if !c.unpriced.Serve {
			first := len(c.refused[id]) == 0
			if !slices.Contains(c.refused[id], by) {
				c.refused[id] = append(c.refused[id], by)
			}
			if first {
				c.logger.Error("a worker serves a model the catalog does not price: refused; price it in --models-file, or start the gateway with --unpriced-models=default and default prices",
					"model", id, "worker", worker, "pool", pool)
			}
			continue
		}
		u := c.unpriced
		m := &Model{ID: id, DisplayName: id, Description: "Served by a worker; priced at the gateway's default for models its catalog does not list.",
			Kind: KindChat, Modalities: []string{"text"}, Capabilities: DefaultCapabilities(), ContextWindow: u.ContextWindow, MaxOutputTokens: u.MaxOutputTokens,
			InputPriceNanosPerMillion: u.InputPriceNanosPerMillion, OutputPriceNanosPerMillion: u.OutputPriceNanosPerMillion}
		old := c.snap.Load()
		next := &snapshot{models: append(slices.Clip(old.models), m), byID: maps.Clone(old.byID), byAlias: old.byAlias, patterns: old.patterns}
		next.byID[id] = m
		c.snap.Store(next)
		c.learned[id] = true
		c.logger.Warn("a worker serves a model the catalog does not price: serving it at the default price",
			"model", id, "worker", worker, "pool", pool,
			"input_price_nanos_per_million", u.InputPriceNanosPerMillion, "output_price_nanos_per_million", u.OutputPriceNanosPerMillion)
	}
}

// DefaultPriced reports whether id was learned from a worker and is served
// at the default price.
func (c *Catalog) DefaultPriced(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.learned[id]
}

// Refused reports the workers serving id when it is refused for want of a
// price.
func (c *Catalog) Refused(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.refused[id])
}

// Unknown is the error for a request naming id, a model the catalog does
// not offer: not found — saying so plainly when workers serve it but it is
// refused for want of a price.
func (c *Catalog) Unknown(field, id string) *connect.Error {
	if by := c.Refused(id); len(by) > 0 {
		return apierr.NotFoundModel(field, id, fmt.Sprintf(
			"model %q is served by %s but this gateway's catalog has no price for it, so it is refused (the operator can price it in --models-file or start the gateway with --unpriced-models=default)",
			id, strings.Join(by, ", ")))
	}
	return apierr.UnknownModel(field, id)
}

// Warning is a readiness message that does not make the gateway unready.
type Warning struct{ msg string }

func (w Warning) Error() string { return w.msg }

// Warning marks it for /readyz.
func (Warning) Warning() bool { return true }

// Ready is the /readyz check of learned models: a warning naming each
// model refused for want of a price, nil when there is none.
func (c *Catalog) Ready(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.refused) == 0 {
		return nil
	}
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(c.refused)) {
		parts = append(parts, fmt.Sprintf("%q (served by %s)", id, strings.Join(c.refused[id], ", ")))
	}
	return Warning{"models served by workers but not priced in the catalog, refused: " + strings.Join(parts, "; ") +
		" — price them in --models-file or start with --unpriced-models=default"}
}

// Server is one worker as the availability view needs it.
type Server struct {
	Address, Pool, State string
	// Up: connected and in rotation.
	Up     bool
	Models []string
}

// Status is one model's availability: a catalog model served by no worker
// that is up is unavailable; an unpriced one is refused or default-priced.
type Status struct {
	ID           string
	State        string // StateAvailable, StateUnavailable or StateRefused
	DefaultPrice bool
	Servers      []Server // Models unset
}

// The availability states.
const (
	StateAvailable   = "available"
	StateUnavailable = "unavailable"
	StateRefused     = "refused"
)

// Availability lists every model — the catalog's, in order, then those only
// workers serve, by id — with the workers serving each.
func (c *Catalog) Availability(servers []Server) []Status {
	by := map[string][]Server{}
	for _, s := range servers {
		for _, id := range s.Models {
			by[id] = append(by[id], Server{Address: s.Address, Pool: s.Pool, State: s.State, Up: s.Up})
		}
	}
	var out []Status
	seen := map[string]bool{}
	for _, m := range c.All() {
		seen[m.ID] = true
		st := Status{ID: m.ID, State: StateUnavailable, DefaultPrice: c.DefaultPriced(m.ID), Servers: by[m.ID]}
		if slices.ContainsFunc(st.Servers, func(s Server) bool { return s.Up }) {
			st.State = StateAvailable
		}
		out = append(out, st)
	}
	var extra []Status
	for id, ss := range by {
		if !seen[id] {
			extra = append(extra, Status{ID: id, State: StateRefused, Servers: ss})
		}
	}
	slices.SortFunc(extra, func(a, b Status) int { return cmp.Compare(a.ID, b.ID) })
	return append(out, extra...)
}
