// Package limits is the web channel's tier limits: per tier and model, a
// number of requests, input tokens and output tokens per window, taken
// atomically in one Limiter call before scheduling. Output is taken at the
// request's max_output_tokens and the unused part given back after.
package limits

import (
	"context"
	"fmt"
	"math/bits"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// Limits admits web generations against the tiers' allowances, and every
// generation against its user's request rate.
type Limits struct {
	limiter store.Limiter
	now     func() time.Time
	// Rates are the request rates by tier (none when nil), tightened as
	// Load rises (a nil Load is 0).
	Rates Rates
	Load  *Load
}

// New returns limits over limiter with the clock now.
func New(limiter store.Limiter, now func() time.Time) *Limits {
	return &Limits{limiter: limiter, now: now}
}

// Grant is what one admitted request took; Settle gives back the unused output.
type Grant struct {
	key       string
	limit     models.TierLimit
	OutputMax int64
	// Input is the input tokens taken; Adjust brings it to the exact count.
	Input                 int64
	userID, model         string
	tier                  store.Tier
	requestsKey, inputKey string
	requests              int64
	rate                  store.Take // the request rate's take; Key "" when none
}

// kinds in the order of a Take.
var kinds = [3]parleyv1.LimitKind{
	parleyv1.LimitKind_LIMIT_KIND_REQUESTS,
	parleyv1.LimitKind_LIMIT_KIND_INPUT_TOKENS,
	parleyv1.LimitKind_LIMIT_KIND_OUTPUT_TOKENS,
}

// key names a tier bucket. The user is the key's hash tag, as in rateKey:
// one Take (a user's buckets and request rate) stays in one Redis Cluster
// slot, and users spread over the cluster's shards.
func key(userID, model string, kind parleyv1.LimitKind) string {
	return fmt.Sprintf("lim:{%s}:%s:%d", userID, model, kind)
}

func amount(l models.TierLimit, kind parleyv1.LimitKind) int64 {
	switch kind {
	case parleyv1.LimitKind_LIMIT_KIND_REQUESTS:
		return l.Requests
	case parleyv1.LimitKind_LIMIT_KIND_INPUT_TOKENS:
		return l.InputTokens
	}
	return l.OutputTokens
}

// Admit takes one request, inputTokens and maxOutput from the user's
// allowance on m, all or nothing. Over a limit it answers
// resource_exhausted naming the limit, with its state and when to retry.
func (l *Limits) Admit(ctx context.Context, userID string, tier store.Tier, m *models.Model, inputTokens, maxOutput int64) (Grant, error) {
	lim, ok := m.TierLimits[tier]
	if !ok {
		return Grant{}, apierr.PermissionDenied(fmt.Sprintf("the %s tier has no access to %s", tier, m.ID))
	}
	n := [3]int64{1, inputTokens, maxOutput}
	takes := make([]store.Take, 3)
	for i, kind := range kinds {
		takes[i] = store.Take{Key: key(userID, m.ID, kind), Limit: amount(lim, kind), Window: lim.Window, N: n[i]}
	}
	rate, hasRate := l.rateTake(userID, tier)
	if hasRate {
		takes = append(takes, rate)
	}
	now := l.now()
	d, err := l.limiter.Take(ctx, now, takes)
	if err != nil {
		return Grant{}, apierr.Unavailable("limits are unavailable", 2*time.Second)
	}
	if !d.Allowed && d.Denied == len(kinds) {
		return Grant{}, l.rateDenied(tier, rate, d.States[d.Denied], d.RetryAfter, now)
	}
	if !d.Allowed {
		return Grant{}, l.denied(m.ID, tier, lim, kinds[d.Denied], n[d.Denied], d.States[d.Denied], d.Impossible, d.RetryAfter)
	}
	return Grant{
		key: key(userID, m.ID, kinds[2]), limit: lim, OutputMax: maxOutput, Input: inputTokens,
		userID: userID, model: m.ID, tier: tier, requests: 1,
		requestsKey: key(userID, m.ID, kinds[0]), inputKey: key(userID, m.ID, kinds[1]), rate: rate,
	}, nil
}

func (l *Limits) denied(model string, tier store.Tier, lim models.TierLimit, kind parleyv1.LimitKind, n int64, st store.LimitState, impossible bool, retry time.Duration) error {
	status := l.status(model, kind, lim, st, n, l.now())
	name := map[parleyv1.LimitKind]string{kinds[0]: "requests", kinds[1]: "input tokens", kinds[2]: "output tokens"}[kind]
	if impossible {
		return apierr.LimitExceeded(fmt.Sprintf("this request needs %d %s but the %s tier allows %d per %v on %s",
			n, name, tier, amount(lim, kind), lim.Window, model), status, 0)
	}
	return apierr.LimitExceeded(fmt.Sprintf("%s tier limit on %s reached: %d %s per %v; retry in %v",
		tier, model, amount(lim, kind), name, lim.Window, retry.Round(time.Second)), status, retry)
}

// Adjust brings a grant's input tokens to the exact count, once it is
// known: a grant taken at a floor (before the prompt was built and counted)
// takes the rest, all or nothing, or gives back what it took too much. When
// the rest is refused, the error is Admit's and the grant is unchanged
// (Release it).
func (l *Limits) Adjust(ctx context.Context, g *Grant, inputTokens int64) error {
	if g.inputKey == "" || inputTokens == g.Input {
		return nil
	}
	now := l.now()
	if inputTokens < g.Input {
		_, _ = l.limiter.Refund(context.WithoutCancel(ctx), now, g.inputKey, g.limit.InputTokens, g.limit.Window, g.Input-inputTokens)
		g.Input = inputTokens
		return nil
	}
	more := inputTokens - g.Input
	d, err := l.limiter.Take(ctx, now, []store.Take{{Key: g.inputKey, Limit: g.limit.InputTokens, Window: g.limit.Window, N: more}})
	if err != nil {
		return apierr.Unavailable("limits are unavailable", 2*time.Second)
	}
	if !d.Allowed {
		// Judged on the whole count, as Admit would have: impossible when the
		// request alone is over the tier's allowance.
		impossible := inputTokens > g.limit.InputTokens
		return l.denied(g.model, g.tier, g.limit, kinds[1], inputTokens, d.States[0], impossible, d.RetryAfter)
	}
	g.Input = inputTokens
	return nil
}

// Release gives back everything a grant took — the request, its input and
// its output — for a request refused after it was admitted.
func (l *Limits) Release(ctx context.Context, g Grant) {
	if g.key == "" {
		return
	}
	ctx, now := context.WithoutCancel(ctx), l.now()
	if g.requestsKey != "" && g.requests > 0 {
		_, _ = l.limiter.Refund(ctx, now, g.requestsKey, g.limit.Requests, g.limit.Window, g.requests)
	}
	if g.inputKey != "" && g.Input > 0 {
		_, _ = l.limiter.Refund(ctx, now, g.inputKey, g.limit.InputTokens, g.limit.Window, g.Input)
	}
	if g.OutputMax > 0 {
		_, _ = l.limiter.Refund(ctx, now, g.key, g.limit.OutputTokens, g.limit.Window, g.OutputMax)
	}
	if g.rate.Key != "" {
		_, _ = l.limiter.Refund(ctx, now, g.rate.Key, g.rate.Limit, g.rate.Window, g.rate.N)
	}
}

// Settle gives back the output tokens a request held but did not use.
func (l *Limits) Settle(ctx context.Context, g Grant, usedOutput int64) {
	if unused := g.OutputMax - usedOutput; unused > 0 && g.key != "" {
		_, _ = l.limiter.Refund(context.WithoutCancel(ctx), l.now(), g.key, g.limit.OutputTokens, g.limit.Window, unused)
	}
}

// NextRequest is the size of the request whose admission time Status
// reports (LimitStatus.next_request_at).
type NextRequest struct {
	// InputTokens is its prompt; 0 means 1.
	InputTokens int64
	// MaxOutputTokens is its output cap; 0 means the model's
	// max_output_tokens, what a message sent without a cap reserves.
	MaxOutputTokens int64
}

// amounts returns what a request of size next takes from each limit on m,
// in the order of kinds.
func (next NextRequest) amounts(m *models.Model) [3]int64 {
	in, out := next.InputTokens, next.MaxOutputTokens
	if in <= 0 {
		in = 1
	}
	if out <= 0 {
		out = m.MaxOutputTokens
	}
	return [3]int64{1, in, out}
}

// Status reports each limit of the user's tier on each model (or one model),
// with when each admits the next request of size next, then the user's
// request rate (at the current load) when the tier has one.
func (l *Limits) Status(ctx context.Context, userID string, tier store.Tier, ms []*models.Model, next NextRequest) ([]*parleyv1.LimitStatus, error) {
	var out []*parleyv1.LimitStatus
	now := l.now()

	for _, m := range ms {
		lim, ok := m.TierLimits[tier]
		if !ok {
			continue
		}
		n := next.amounts(m)
		for i, kind := range kinds {
			st, err := l.limiter.Peek(ctx, now, key(userID, m.ID, kind), amount(lim, kind), lim.Window)
			if err != nil {
				return nil, apierr.Unavailable("limits are unavailable", 2*time.Second)
			}
			out = append(out, l.status(m.ID, kind, lim, st, n[i], now))
		}
	}
	if t, ok := l.rateTake(userID, tier); ok {
		st, err := l.limiter.Peek(ctx, now, t.Key, t.Limit, t.Window)
		if err != nil {
			return nil, apierr.Unavailable("limits are unavailable", 2*time.Second)
		}
		out = append(out, rateStatus(t, st, now))
	}
	return out, nil
}

func (l *Limits) status(model string, kind parleyv1.LimitKind, lim models.TierLimit, st store.LimitState, n int64, now time.Time) *parleyv1.LimitStatus {
	total := amount(lim, kind)
	ls := &parleyv1.LimitStatus{
		Model: model, Kind: kind, Limit: total, Used: total - st.Remaining, Remaining: st.Remaining,
		Window: durationpb.New(lim.Window), ResetsAt: timestamppb.New(st.ResetAt), NextRequestAmount: n,
	}
	if at, ok := availableAt(st.ResetAt, total, lim.Window, n); ok {
		ls.NextRequestAt = timestamppb.New(maxTime(at, now))
	}
	return ls
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// availableAt is when a bucket of capacity limit, refilled continuously at
// limit per window and full at full, holds n: full less the time to refill
// the limit-n above it, (limit-n)·window/limit, in exact 128-bit integer
// arithmetic (the product overflows int64 for a large limit and a long
// window), rounded down so the bucket does hold n then. False when n is
// more than the bucket ever holds.
func availableAt(full time.Time, limit int64, window time.Duration, n int64) (time.Time, bool) {
	if n > limit || limit <= 0 || window <= 0 {
		return time.Time{}, false
	}
	if n < 0 {
		n = 0
	}
	hi, lo := bits.Mul64(uint64(limit-n), uint64(window))
	q, _ := bits.Div64(hi, lo, uint64(limit)) // hi < limit: the quotient is below window
	return full.Add(-time.Duration(q)), true
}
