package limits

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// Rate is one tier's request rate (docs/scaling.md, the elastic gateway): PerMinute
// requests, refilled continuously, at most Burst at once; above each step's
// load both are multiplied by its factor (the smallest factor passed
// applies).
type Rate struct {
	PerMinute, Burst int64
	Steps            []Step
}

// Step tightens a Rate: above Load (busy worker slots / all, 0–1) the rate
// and burst are multiplied by Factor (0–1].
type Step struct {
	Load, Factor float64
}

// Rates are the request rates by tier; a tier without one has no request
// rate limit (its tier limits still apply).
type Rates map[store.Tier]Rate

// DefaultRates are the elastic stage's figures (docs/scaling.md), tightened lowest tiers first: 600
// requests a minute with a burst of 20, halved (300, burst 10) above 70 %
// load for Free, 80 % for Plus and 90 % for Pro; Max is never tightened.
func DefaultRates() Rates {
	halve := func(at float64) []Step { return []Step{{Load: at, Factor: 0.5}} }
	return Rates{
		store.TierFree: {PerMinute: 600, Burst: 20, Steps: halve(0.7)},
		store.TierPlus: {PerMinute: 600, Burst: 20, Steps: halve(0.8)},
		store.TierPro:  {PerMinute: 600, Burst: 20, Steps: halve(0.9)},
		store.TierMax:  {PerMinute: 600, Burst: 20},
	}
}

// Factor is the multiplier at load.
func (r Rate) Factor(load float64) float64 {
	f := 1.0
	for _, s := range r.Steps {
		if load > s.Load {
			f = min(f, s.Factor)
		}
	}
	return f
}

// at is the bucket of the rate at factor f: a burst of units refilled at
// the rate, so a whole burst takes burst/rate minutes to refill.
func (r Rate) at(f float64) (burst int64, window time.Duration) {
	perMinute := max(1, int64(math.Round(float64(r.PerMinute)*f)))
	burst = max(1, int64(math.Round(float64(r.Burst)*f)))
	return burst, time.Duration(burst) * time.Minute / time.Duration(perMinute)
}

// ParseRates reads --rate-limits: "off" (none), or comma-separated
// TIER=PER_MINUTE/BURST[@LOAD:FACTOR]... or TIER=off, each replacing the
// default of its tier, e.g. "free=600/20@0.7:0.5@0.9:0.25,max=off".
func ParseRates(s string) (Rates, error) {
	s = strings.TrimSpace(s)
	if s == "off" {
		return Rates{}, nil
	}
	rates := DefaultRates()
	if s == "" {
		return rates, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		name, spec, ok := strings.Cut(strings.TrimSpace(item), "=")
		tier := store.Tier(name)
		if !ok || !tier.Valid() {
			return nil, fmt.Errorf("--rate-limits: %q: want TIER=PER_MINUTE/BURST[@LOAD:FACTOR]... with a tier of free, plus, pro or max", item)
		}
		if spec == "off" {
			delete(rates, tier)
			continue
		}
		parts := strings.Split(spec, "@")
		per, burst, ok := strings.Cut(parts[0], "/")
		r := Rate{}
		var err1, err2 error
		r.PerMinute, err1 = strconv.ParseInt(per, 10, 64)
		r.Burst, err2 = strconv.ParseInt(burst, 10, 64)
		if !ok || err1 != nil || err2 != nil || r.PerMinute <= 0 || r.Burst <= 0 {
			return nil, fmt.Errorf("--rate-limits: %s: %q: want positive PER_MINUTE/BURST", tier, parts[0])
		}
		for _, st := range parts[1:] {
			load, factor, ok := strings.Cut(st, ":")
			l, err1 := strconv.ParseFloat(load, 64)
			f, err2 := strconv.ParseFloat(factor, 64)
			if !ok || err1 != nil || err2 != nil || l < 0 || l >= 1 || f <= 0 || f > 1 {
				return nil, fmt.Errorf("--rate-limits: %s: step %q: want LOAD:FACTOR with 0 <= LOAD < 1 and 0 < FACTOR <= 1", tier, st)
			}
			r.Steps = append(r.Steps, Step{Load: l, Factor: f})
		}
		slices.SortFunc(r.Steps, func(a, b Step) int { return int(math.Copysign(1, a.Load-b.Load)) })
		rates[tier] = r
	}
	return rates, nil
}

// rateKey is the user's request-rate bucket. The user id is hash-tagged so
// that, with Redis Cluster, the bucket lands in the slot of the user's other
// limit keys when those are tagged by user too (Admit takes them in one
// script).
func rateKey(userID string) string { return "rate:{" + userID + "}" }

// rateTake is the take of one request from the user's rate at the current
// load; false when the tier has no rate.
func (l *Limits) rateTake(userID string, tier store.Tier) (store.Take, bool) {
	r, ok := l.Rates[tier]
	if !ok {
		return store.Take{}, false
	}
	burst, window := r.at(r.Factor(l.Load.Current()))
	return store.Take{Key: rateKey(userID), Limit: burst, Window: window, N: 1}, true
}

// Rate takes one request from the user's request rate (the API channel;
// web generations take it in Admit). Over it, it answers resource_exhausted
// with the rate's state and when to retry (Retry-After on HTTP).
func (l *Limits) Rate(ctx context.Context, userID string, tier store.Tier) error {
	if l == nil {
		return nil
	}
	t, ok := l.rateTake(userID, tier)
	if !ok {
		return nil
	}
	now := l.now()
	d, err := l.limiter.Take(ctx, now, []store.Take{t})
	if err != nil {
		return apierr.Unavailable("limits are unavailable", 2*time.Second)
	}
	if !d.Allowed {
		return l.rateDenied(tier, t, d.States[0], d.RetryAfter, now)
	}
	return nil
}

func (l *Limits) rateDenied(tier store.Tier, t store.Take, st store.LimitState, retry time.Duration, now time.Time) error {
	load := l.Load.Current()
	perMinute := int64(math.Round(float64(t.Limit) * float64(time.Minute) / float64(t.Window)))
	return apierr.LimitExceeded(fmt.Sprintf("request rate limit reached: the %s tier may send %d requests a minute (a burst of %d) while the workers are %.0f%% busy; retry in %v",
		tier, perMinute, t.Limit, 100*load, retry.Round(time.Millisecond)), rateStatus(t, st, now), retry)
}

func rateStatus(t store.Take, st store.LimitState, now time.Time) *parleyv1.LimitStatus {
	ls := &parleyv1.LimitStatus{
		Kind: parleyv1.LimitKind_LIMIT_KIND_REQUEST_RATE, Limit: t.Limit, Used: t.Limit - st.Remaining, Remaining: st.Remaining,
		Window: durationpb.New(t.Window), ResetsAt: timestamppb.New(st.ResetAt), NextRequestAmount: 1,
	}
	if at, ok := availableAt(st.ResetAt, t.Limit, t.Window, 1); ok {
		ls.NextRequestAt = timestamppb.New(maxTime(at, now))
	}
	return ls
}
