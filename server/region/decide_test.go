package region

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// obs is a compact recorded check: origin up or down, p95, 5xx share, with
// 100 requests in each window.
type obs struct {
	up    bool
	p95   time.Duration
	err   float64
	queue float64
}

func (s obs) observation() Observation {
	o := Observation{Origin: OriginDown, OriginDetail: "0/2 gateways ready", LatencyRequests: 100, P95: s.p95,
		Requests: 100, Errors: s.err * 100, QueueDepth: s.queue, QueueKnown: true}
	if s.up {
		o.Origin, o.OriginDetail = OriginUp, "2/2 gateways ready"
	}
	return o
}

func repeat(n int, s obs) []obs {
	out := make([]obs, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func series(parts ...[]obs) []obs {
	var out []obs
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	healthy = obs{up: true, p95: 80 * time.Millisecond}
	slow    = obs{up: true, p95: 640 * time.Millisecond}  // one prepend
	slower  = obs{up: true, p95: 1500 * time.Millisecond} // two
	failing = obs{up: true, p95: 80 * time.Millisecond, err: 0.03}
	down    = obs{}
)

// run feeds the series to a decider and returns the route after each check.
func run(t *testing.T, rules Rules, start Route, s []obs) ([]Route, []Decision) {
	t.Helper()
	d := NewDecider(rules, start)
	var routes []Route
	var decs []Decision
	for _, o := range s {
		dec := d.Next(o.observation())
		routes = append(routes, dec.Route)
		decs = append(decs, dec)
	}
	return routes, decs
}

func changes(routes []Route, start Route) []string {
	var out []string
	prev := start
	for i, r := range routes {
		if r != prev {
			out = append(out, strconv.Itoa(i)+": "+r.String())
		}
		prev = r
	}
	return out
}

func TestTargetGradesAndReasons(t *testing.T) {
	r := DefaultRules()
	cases := []struct {
		o       Observation
		prepend int
		reason  string
	}{
		{healthy.observation(), 0, ""},
		{slow.observation(), 1, "p95 640ms > 500ms"},
		{slower.observation(), 2, "p95 1500ms > 500ms"},
		{obs{up: true, p95: 3 * time.Second}.observation(), 3, "p95 3000ms > 500ms"},
		{failing.observation(), 2, "5xx 3% > 1%"},
		{obs{up: true, p95: 640 * time.Millisecond, err: 0.015}.observation(), 2, "p95 640ms > 500ms"},
		{obs{up: true, p95: 3 * time.Second, err: 0.5}.observation(), 3, "5xx 50% > 1%"}, // capped
		// Too few requests: the rules abstain.
		{Observation{Origin: OriginUp, LatencyRequests: 5, P95: 5 * time.Second, Requests: 5, Errors: 5}, 0, ""},
	}
	for _, c := range cases {
		p, reasons, _ := r.Target(c.o)
		if p != c.prepend {
			t.Errorf("%+v: prepend %d, want %d (reasons %q)", c.o, p, c.prepend, reasons)
		}
		if c.reason != "" && !strings.Contains(strings.Join(reasons, "|"), c.reason) {
			t.Errorf("%+v: reasons %q, want %q", c.o, reasons, c.reason)
		}
		if c.reason == "" && len(reasons) > 0 {
			t.Errorf("%+v: reasons %q, want none", c.o, reasons)
		}
	}
	_, _, reports := r.Target(obs{up: true, queue: 1200}.observation())
	if len(reports) != 1 || !strings.Contains(reports[0], "gpu queue depth 1200 > 1000") {
		t.Errorf("queue report %q", reports)
	}
}

func TestDeciderHysteresis(t *testing.T) {
	rules := DefaultRules() // fail 3, recover 10, raise 3, lower 30
	announced := Route{Announced: true}
	cases := []struct {
		name   string
		start  Route
		series []obs
		want   []string // "check index: route" at each change
	}{
		{"steady", announced, repeat(100, healthy), nil},
		{"slow region weakened after 3 checks, restored after 30 good ones", announced,
			series(repeat(2, healthy), repeat(10, slow), repeat(40, healthy)),
			[]string{"4: announce prepend 1", "41: announce prepend 0"}},
		{"worse latency weakens further", announced,
			series(repeat(5, slow), repeat(5, slower)),
			[]string{"2: announce prepend 1", "7: announce prepend 2"}},
		{"5xx weakens", announced, repeat(3, failing), []string{"2: announce prepend 2"}},
		{"a spike of two checks moves nothing", announced,
			series(repeat(5, healthy), repeat(2, slower), repeat(20, healthy)), nil},
		{"a flapping metric does not flap the route", announced, nil, nil}, // series below
		{"lowering waits for the whole window", Route{Announced: true, Prepend: 2},
			series(repeat(29, healthy), repeat(1, slow), repeat(29, healthy), repeat(1, healthy)),
			[]string{"29: announce prepend 1", "59: announce prepend 0"}},
		{"two failed origin checks are not enough", announced,
			series(repeat(2, down), repeat(5, healthy), repeat(2, down), repeat(5, healthy)), nil},
		{"three withdraw; ten good announce again", announced,
			series(repeat(3, down), repeat(5, down), repeat(9, healthy), repeat(5, healthy)),
			[]string{"2: withdraw", "17: announce prepend 0"}},
		{"back weakened when the recent checks were slow", announced,
			series(repeat(3, down), repeat(10, slow)),
			[]string{"2: withdraw", "12: announce prepend 1"}},
		{"no state at start: announced once the origin is proven", Route{},
			repeat(12, healthy), []string{"9: announce prepend 0"}},
		{"queue depth never moves the route", announced,
			repeat(50, obs{up: true, p95: 80 * time.Millisecond, queue: 5000}), nil},
	}
	// Flapping: slow and healthy alternate, and errors come and go.
	var flap []obs
	for i := range 100 {
		if i%2 == 0 {
			flap = append(flap, slower)
		} else {
			flap = append(flap, healthy)
		}
	}
	cases[5].series = flap
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			routes, decs := run(t, rules, c.start, c.series)
			got := changes(routes, c.start)
			if strings.Join(got, ", ") != strings.Join(c.want, ", ") {
				t.Errorf("changes %q, want %q", got, c.want)
			}
			for i, d := range decs {
				if d.Changed != (i == 0 && d.Route != c.start || i > 0 && d.Route != decs[i-1].Route) {
					t.Errorf("check %d: Changed %v", i, d.Changed)
				}
				if d.Route.Announced && d.Route.Prepend > rules.MaxPrepend {
					t.Errorf("check %d: prepend %d", i, d.Route.Prepend)
				}
			}
		})
	}
}

func TestDeciderReasons(t *testing.T) {
	rules := DefaultRules()
	_, decs := run(t, rules, Route{Announced: true}, series(repeat(3, slow), repeat(3, down)))
	if got := decs[2].Reasons; len(got) != 1 || got[0] != "p95 640ms > 500ms" {
		t.Errorf("weakening reasons %q", got)
	}
	last := decs[len(decs)-1]
	if last.Route.Announced || len(last.Reasons) != 1 || !strings.HasPrefix(last.Reasons[0], "origin failed 3 consecutive checks: 0/2 gateways ready") {
		t.Errorf("withdraw decision %+v", last)
	}
}

func TestUnknownOriginNeitherFailsNorPasses(t *testing.T) {
	rules := DefaultRules()
	d := NewDecider(rules, Route{Announced: true})
	seq := []Origin{OriginDown, OriginDown, OriginUnknown, OriginUnknown, OriginDown}
	var last Decision
	for _, o := range seq {
		last = d.Next(Observation{Origin: o})
	}
	if last.Route.Announced {
		t.Fatalf("three failures with unknowns between should withdraw: %+v", last)
	}
}

func TestRulesValidate(t *testing.T) {
	if err := DefaultRules().Validate(); err != nil {
		t.Fatal(err)
	}
	r := DefaultRules()
	r.MaxPrepend = 4
	if err := r.Validate(); err == nil || !strings.HasPrefix(err.Error(), "max-prepend") {
		t.Fatalf("got %v", err)
	}
}
