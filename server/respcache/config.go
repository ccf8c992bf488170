package respcache

import (
	"flag"
	"fmt"
	"time"
)

// Settings are the response cache as `parley serve` configures it: which
// requests it answers (Mode), where its shared level lives (RedisURL) and
// the Cache's own bounds.
type Settings struct {
	// Mode is off, opt-in (requests with Parley-Cache: on) or on (unless
	// Parley-Cache: off).
	Mode string
	// RedisURL is the shared level's Redis; empty: the --redis-url store's,
	// or none.
	RedisURL string
	Config
}

// RegisterFlags registers the response cache's settings with their
// defaults, filling s.
func (s *Settings) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Mode, "response-cache", "opt-in", "response cache of deterministic API requests: off, opt-in (Parley-Cache: on) or on (unless Parley-Cache: off)")
	fs.IntVar(&s.LocalEntries, "response-cache-entries", 1000, "answers the response cache holds in this process")
	fs.Int64Var(&s.LocalBytes, "response-cache-bytes", 64<<20, "bytes the response cache holds in this process")
	fs.DurationVar(&s.LocalTTL, "response-cache-ttl", 60*time.Second, "how long an answer lives in this process")
	fs.DurationVar(&s.RemoteTTL, "response-cache-redis-ttl", 300*time.Second, "how long an answer lives in Redis")
	fs.StringVar(&s.RedisURL, "response-cache-redis-url", "", "Redis for the response cache's shared level (empty: --redis-url's; none: this process only); when it is down the cache skips it")
}

// ParseMode reads Mode: whether the cache is on at all, and whether
// requests that do not say are in.
func (s *Settings) ParseMode() (on, byDefault bool, err error) {
	switch s.Mode {
	case "off":
		return false, false, nil
	case "opt-in":
		return true, false, nil
	case "on":
		return true, true, nil
	}
	return false, false, fmt.Errorf("--response-cache: %q: want off, opt-in or on", s.Mode)
}
