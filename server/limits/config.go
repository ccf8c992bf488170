package limits

import (
	"flag"
	"time"
)

// Config is the per-user request rates as `parley serve` configures them:
// the rates by tier (in ParseRates' form) and the load that tightens them.
type Config struct {
	// Rates is --rate-limits, parsed by ParseRates; empty: the defaults.
	Rates string
	// LoadWindow is LoadConfig.Window.
	LoadWindow time.Duration
	// LoadKey is the Redis hash the gateways share their load figures in
	// (empty: parley:load).
	LoadKey string
}

// RegisterFlags registers the rate settings with their defaults, filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Rates, "rate-limits", "", "per-user request rates by tier, tightened under load: off, or TIER=PER_MINUTE/BURST[@LOAD:FACTOR]...,… replacing the defaults (free=600/20@0.7:0.5, plus=600/20@0.8:0.5, pro=600/20@0.9:0.5, max=600/20); TIER=off drops one (unset: the defaults)")
	fs.DurationVar(&c.LoadWindow, "load-window", 5*time.Second, "span the workers' load is averaged over for the request rates")
	fs.StringVar(&c.LoadKey, "load-key", "", "Redis hash the gateways of one deployment share their load figures in (empty: parley:load); deployments sharing a Redis need their own")
}
