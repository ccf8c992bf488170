package attach

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/parleyhq/parley/server/blob"
)

// Config is the attachment service as `parley serve` configures it: the
// limits of what is accepted and prepared, and the signed blob URLs.
type Config struct {
	Limits
	// URLExpiry is how long signed upload and download URLs live.
	URLExpiry time.Duration
	// BaseURL is the absolute base of signed blob URLs; empty: relative to
	// the gateway.
	BaseURL string
	// MinFreeBytes is the free-space watermark of the data directory's
	// filesystem under which uploads to the embedded blob store are refused.
	MinFreeBytes int64
	// UnreferencedTTL is how long an upload may wait for a message to
	// reference it before the sweep deletes it (0: never).
	UnreferencedTTL time.Duration
	// SweepInterval is how often abandoned and unreferenced uploads are
	// swept, and SweepLimit the most unreferenced ones one sweep deletes.
	SweepInterval time.Duration
	SweepLimit    int
}

// RegisterFlags registers the attachment settings with their defaults,
// filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultLimits()
	fs.Int64Var(&c.ImageBytes, "attachment-image-bytes", d.ImageBytes, "largest image attachment, in bytes")
	fs.Int64Var(&c.DocumentBytes, "attachment-document-bytes", d.DocumentBytes, "largest document attachment, in bytes")
	fs.Int64Var(&c.UserBytes, "attachment-quota-bytes", 0, "attachment storage per user of every tier, in bytes (unset: each tier's own, --attachment-tier-quota-bytes)")
	c.TierBytes = d.TierBytes
	fs.Func("attachment-tier-quota-bytes", "attachment storage per user by tier, in bytes, e.g. free=50000000,pro=10000000000 (tiers not named: free 50 MB, plus 2 GB, pro 10 GB, max 25 GB)", func(v string) error {
		m, err := ParseTierBytes(v)
		for t, n := range m {
			c.TierBytes[t] = n
		}
		return err
	})
	fs.Int64Var(&c.MinFreeBytes, "attachment-min-free-bytes", 512<<20, "refuse uploads that would leave less than this free on the data directory's filesystem (the embedded blob store; 0: no check)")
	fs.Int64Var(&c.InflateBytes, "document-inflate-bytes", d.InflateBytes, "bytes one document's extraction may decompress and parse; there it stops and the text is cut")
	fs.IntVar(&c.Concurrency, "prepare-concurrency", max(2, runtime.GOMAXPROCS(0)), "image decodes and document extractions running at once (default: the CPUs, at least 2)")
	fs.IntVar(&c.PerUser, "prepare-per-user", max(1, runtime.GOMAXPROCS(0)/4), "of those, how many one user may hold (default: a quarter of the CPUs, at least 1)")
	fs.IntVar(&c.PerUserQueue, "prepare-queue-per-user", d.PerUserQueue, "how many more of one user's wait for their share; past that they are refused")
	fs.DurationVar(&c.URLExpiry, "blob-url-expiry", blob.MaxURLExpiry, "how long signed upload and download URLs live (at most 15m)")
	fs.StringVar(&c.BaseURL, "blob-base-url", "", "absolute base of signed blob URLs (empty: relative to the gateway)")
	c.UnreferencedTTL, c.SweepInterval, c.SweepLimit = 24*time.Hour, 10*time.Minute, DefaultSweepLimit
	fs.Var(checked(&c.UnreferencedTTL, parseDuration(nonNegative)), "attachment-unreferenced-ttl", "uploads no message references for this `duration` after they were created are deleted, bytes and record, freeing their quota (0: kept until their owner deletes them)")
	fs.Var(checked(&c.SweepInterval, parseDuration(positive)), "attachment-sweep-interval", "`duration` between sweeps, which fail abandoned uploads and delete unreferenced ones")
	fs.Var(checked(&c.SweepLimit, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("must be a positive whole number, got %q", v)
		}
		return n, nil
	}), "attachment-sweep-limit", "most unreferenced uploads one sweep deletes, a positive `int`")
}

// checkedValue is a flag whose parse says what is wrong with a value.
type checkedValue[T any] struct {
	p     *T
	parse func(string) (T, error)
}

func checked[T any](p *T, parse func(string) (T, error)) flag.Value {
	return checkedValue[T]{p, parse}
}

func (c checkedValue[T]) String() string {
	if c.p == nil {
		return ""
	}
	return fmt.Sprint(*c.p)
}

func (c checkedValue[T]) Set(v string) error {
	x, err := c.parse(v)
	if err != nil {
		return err
	}
	*c.p = x
	return nil
}

// parseDuration parses a duration that check accepts.
func parseDuration(check func(time.Duration) error) func(string) (time.Duration, error) {
	return func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("must be a duration such as 24h or 90m, got %q", v)
		}
		return d, check(d)
	}
}

func positive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be positive, got %v", d)
	}
	return nil
}

func nonNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must not be negative (0 turns it off), got %v", d)
	}
	return nil
}
