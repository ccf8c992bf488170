package scheduler

import (
	"flag"
	"strings"
	"time"
)

// RegisterFlags registers the settings of `parley serve` that place requests
// on workers (--workers, --worker-pool, the queue and pool spill bounds and
// the scaling signal), with their defaults, filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("workers", "comma-separated worker addresses, host:port, or inference servers addressed directly, openai+http://host:port/v1 (none: one in-process sim worker)", func(s string) error {
		c.Workers = nil
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				c.Workers = append(c.Workers, part)
			}
		}
		return nil
	})
	// Worker pools (docs/config.md), tried in order: the first is primary.
	fs.Func("worker-pool", "a named, ordered pool of workers, name=host:port[,host:port…] (or openai+http://host:port/v1 addresses); repeat it, primary first (instead of --workers)", func(v string) error {
		p, err := ParsePool(v)
		c.Pools = append(c.Pools, p)
		return err
	})
	fs.IntVar(&c.QueueLimit, "queue-limit", 256, "requests per model that may wait for a worker before new ones are refused")
	fs.DurationVar(&c.MaxQueueWait, "max-queue-wait", 30*time.Second, "longest a request waits for a worker")
	fs.DurationVar(&c.SpillWait, "pool-spill-wait", 500*time.Millisecond, "queue wait for a busy pool past which a request goes on to the next pool, and the pool counts as saturated")
	fs.DurationVar(&c.SpillHold, "pool-spill-hold", 10*time.Second, "how long a pool counts as saturated after a request waited past --pool-spill-wait for it")
	// The scaling signal: a pool is recommended one more worker while its
	// queue wait p95 is over --scale-up-wait, one fewer while every wait is
	// under --scale-down-wait and a worker was idle all window.
	fs.DurationVar(&c.ScaleWindow, "scale-window", time.Minute, "window of queue waits and idle workers behind the recommended worker count (parley_scheduler_pool_workers_recommended)")
	fs.DurationVar(&c.ScaleUpWait, "scale-up-wait", 5*time.Second, "recent queue wait (p95 over --scale-window) past which a pool is recommended one more worker")
	fs.DurationVar(&c.ScaleDownWait, "scale-down-wait", time.Second, "recent queue wait under which a pool with a worker idle all window is recommended one fewer")
}

// InProcess says whether no worker address is configured, so the gateway
// serves from one in-process sim worker.
func (c *Config) InProcess() bool { return len(c.Workers) == 0 && len(c.Pools) == 0 }
