package batch

import (
	"flag"
	"fmt"
	"time"
)

// Config is the Batch API's settings.
type Config struct {
	// Concurrency bounds the lines one gateway runs at once, per batch.
	Concurrency int
	// Parallel bounds the batches one gateway runs at once.
	Parallel int
	// Lease is how long a gateway's claim on a batch lasts unrenewed.
	Lease time.Duration
	// Poll is how often a gateway looks for batches to run.
	Poll time.Duration
	// MaxLines bounds one input file's requests.
	MaxLines int
	// Window, TESTING ONLY, replaces the 24 hours of the "24h" completion
	// window (0: 24 hours).
	Window time.Duration
}

// RegisterFlags registers the batch settings with their defaults, filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Concurrency, "batch-concurrency", 32, "most lines of one batch a gateway runs at once (each still takes a worker only from idle capacity)")
	fs.IntVar(&c.Parallel, "batch-parallel", 4, "most batches one gateway runs at once, oldest first (so one user's long batch does not hold up every other)")
	fs.DurationVar(&c.Lease, "batch-lease", time.Minute, "how long a gateway's claim on a batch lasts; a gateway that dies mid-batch leaves it to another after this")
	fs.DurationVar(&c.Poll, "batch-poll", time.Second, "how often a gateway looks for batches to run (a new batch wakes it at once)")
	fs.IntVar(&c.MaxLines, "batch-max-lines", 50_000, "most requests one batch's input file may hold (OpenAI's bound)")
}

// RegisterTestingFlags registers the settings only tests use.
func (c *Config) RegisterTestingFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Window, "test-batch-window", 0, "TESTING ONLY, never in production: the length of a batch's \"24h\" completion window (0: 24 hours)")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Concurrency < 1 || c.Concurrency > 4096:
		return fmt.Errorf("--batch-concurrency %d: 1 to 4096", c.Concurrency)
	case c.Parallel < 1 || c.Parallel > 256:
		return fmt.Errorf("--batch-parallel %d: 1 to 256", c.Parallel)
	case c.Lease < time.Second:
		return fmt.Errorf("--batch-lease %v: at least 1s", c.Lease)
	case c.Poll <= 0:
		return fmt.Errorf("--batch-poll %v: must be positive", c.Poll)
	case c.MaxLines < 1:
		return fmt.Errorf("--batch-max-lines %d: at least 1", c.MaxLines)
	case c.Window < 0:
		return fmt.Errorf("--test-batch-window %v: must not be negative", c.Window)
	}
	return nil
}

func (c Config) window() time.Duration {
	if c.Window > 0 {
		return c.Window
	}
	return 24 * time.Hour
}
