package billing

import (
	"flag"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config is billing as `parley serve` configures it: how long an unsettled
// hold lives and how often expired ones are released.
type Config struct {
	HoldTTL, SweepInterval time.Duration
}

// RegisterFlags registers the billing settings with their defaults,
// filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.HoldTTL, "hold-ttl", 15*time.Minute, "how long an unsettled billing hold lives before the sweeper releases it")
	fs.DurationVar(&c.SweepInterval, "sweep-interval", 30*time.Second, "how often expired billing holds are released")
}

// RegisterMetrics makes b.Holds, the gauge of holds this process made and
// has not settled, and registers it on reg.
func (b *Billing) RegisterMetrics(reg prometheus.Registerer) {
	b.Holds = prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_billing_holds_outstanding",
		Help: "Billing holds this gateway made and has not settled yet (requests in flight)."})
	reg.MustRegister(b.Holds)
}
