package region

import (
	"fmt"
	"slices"
)

// Route is what the edge router announces for the anycast prefix.
type Route struct {
	// Announced is false when the prefix is withdrawn.
	Announced bool
	// Prepend is how many times the origin AS is repeated (0–3) while
	// announced: the region's weight, lowered.
	Prepend int
}

// Action names the route for logs and metrics: "announce" or "withdraw".
func (r Route) Action() string {
	if r.Announced {
		return "announce"
	}
	return "withdraw"
}

func (r Route) String() string {
	if !r.Announced {
		return "withdraw"
	}
	return fmt.Sprintf("announce prepend %d", r.Prepend)
}

// Decision is the outcome of one check.
type Decision struct {
	// Route is what should be announced after this check.
	Route Route
	// Changed says Route differs from the one before this check.
	Changed bool
	// Target is the prepend count this observation alone asked for.
	Target int
	// Reasons explain Route: the rules over their thresholds, or why it
	// changed or held.
	Reasons []string
	// Reports are findings that do not move the route (GPU queue depth).
	Reports []string
}

// Decider turns a series of observations into routes. It holds the
// hysteresis: the route is withdrawn after FailAfter failed origin checks
// in a row and announced again only after RecoverAfter good ones; it is
// weakened once RaiseAfter checks in a row all asked for more prepends (to
// the least of them) and strengthened once LowerAfter in a row all asked
// for fewer (to the most of them). A Decider is not safe for concurrent use.
type Decider struct {
	rules   Rules
	route   Route
	fails   int   // consecutive failed origin checks
	goods   int   // consecutive good origin checks
	targets []int // the last max(RaiseAfter, LowerAfter) targets, oldest first
}

// NewDecider starts from the route the router has now (read back from the
// state BIRD was last given; withdrawn when there is none, so a region is
// announced only once its origin has passed RecoverAfter checks).
func NewDecider(rules Rules, current Route) *Decider {
	return &Decider{rules: rules, route: current}
}

// Route is the route decided last.
func (d *Decider) Route() Route { return d.route }

// Next takes one observation and decides.
func (d *Decider) Next(o Observation) Decision {
	r := d.rules
	switch o.Origin {
	case OriginUp:
		d.fails, d.goods = 0, d.goods+1
	case OriginDown:
		d.fails, d.goods = d.fails+1, 0
	}
	target, reasons, reports := r.Target(o)
	d.targets = append(d.targets, target)
	if keep := max(r.RaiseAfter, r.LowerAfter, r.RecoverAfter); len(d.targets) > keep {
		d.targets = d.targets[len(d.targets)-keep:]
	}
	before := d.route
	dec := Decision{Target: target, Reports: reports}
	if o.Origin == OriginDown {
		reports = append(reports, fmt.Sprintf("origin check failed (%d in a row): %s", d.fails, o.OriginDetail))
		dec.Reports = reports
	}

	switch {
	case d.route.Announced && d.fails >= r.FailAfter:
		d.route = Route{}
		reasons = []string{fmt.Sprintf("origin failed %d consecutive checks: %s", d.fails, o.OriginDetail)}
	case !d.route.Announced && d.goods >= r.RecoverAfter:
		// Back at the weakest weight any recent check asked for.
		d.route = Route{Announced: true, Prepend: slices.Max(d.last(r.RecoverAfter))}
		reasons = append([]string{fmt.Sprintf("origin passed %d consecutive checks", d.goods)}, reasons...)
	case !d.route.Announced:
		reasons = []string{fmt.Sprintf("withdrawn until the origin passes %d consecutive checks (%d so far)", r.RecoverAfter, d.goods)}
	default:
		if recent := d.last(r.RaiseAfter); len(recent) == r.RaiseAfter && slices.Min(recent) > d.route.Prepend {
			d.route.Prepend = slices.Min(recent)
		} else if recent := d.last(r.LowerAfter); len(recent) == r.LowerAfter && slices.Max(recent) < d.route.Prepend {
			d.route.Prepend = slices.Max(recent)
			reasons = append(reasons, fmt.Sprintf("%d checks in a row within thresholds for prepend %d", r.LowerAfter, d.route.Prepend))
		} else if target != d.route.Prepend {
			reasons = append(reasons, fmt.Sprintf("holding prepend %d (this check asks for %d)", d.route.Prepend, target))
		}
	}
	dec.Route, dec.Changed, dec.Reasons = d.route, d.route != before, reasons
	if dec.Reasons == nil {
		dec.Reasons = []string{}
	}
	return dec
}

// last returns up to n most recent targets.
func (d *Decider) last(n int) []int {
	if n > len(d.targets) {
		n = len(d.targets)
	}
	return d.targets[len(d.targets)-n:]
}
