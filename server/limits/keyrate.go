package limits

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// KeyRates are an organisation key's own bounds a minute; 0 is none.
type KeyRates struct {
	RequestsPerMinute, TokensPerMinute int64
}

// KeyRate takes one request and tokens (the prompt and the most output)
// from the key's per-minute buckets, both or neither, shared by every
// gateway through the limiter. giveBack returns the tokens a request did
// not use once it is done (call it with the tokens used; 0 when it never
// ran). Over a bound it answers resource_exhausted naming it, with when
// to retry.
func (l *Limits) KeyRate(ctx context.Context, keyID string, r KeyRates, tokens int64) (giveBack func(used int64), err error) {
	none := func(int64) {}
	if l == nil || (r.RequestsPerMinute <= 0 && r.TokensPerMinute <= 0) {
		return none, nil
	}
	var takes []store.Take
	if r.RequestsPerMinute > 0 {
		takes = append(takes, store.Take{Key: "keyrate:{" + keyID + "}:requests", Limit: r.RequestsPerMinute, Window: time.Minute, N: 1})
	}
	tokenTake := -1
	if r.TokensPerMinute > 0 {
		tokenTake = len(takes)
		takes = append(takes, store.Take{Key: "keyrate:{" + keyID + "}:tokens", Limit: r.TokensPerMinute, Window: time.Minute, N: min(tokens, r.TokensPerMinute)})
	}
	now := l.now()
	d, err := l.limiter.Take(ctx, now, takes)
	if err != nil {
		return none, apierr.Unavailable("limits are unavailable", 2*time.Second)
	}
	if !d.Allowed {
		i := max(d.Denied, 0)
		t, st := takes[i], d.States[i]
		kind, what := parleyv1.LimitKind_LIMIT_KIND_KEY_REQUEST_RATE, "requests"
		if i == tokenTake {
			kind, what = parleyv1.LimitKind_LIMIT_KIND_KEY_TOKEN_RATE, "tokens (input and the most output)"
		}
		ls := &parleyv1.LimitStatus{Kind: kind, Limit: t.Limit, Used: t.Limit - st.Remaining, Remaining: st.Remaining,
			Window: durationpb.New(t.Window), ResetsAt: timestamppb.New(st.ResetAt), NextRequestAmount: t.N}
		if at, ok := availableAt(st.ResetAt, t.Limit, t.Window, t.N); ok {
			ls.NextRequestAt = timestamppb.New(maxTime(at, now))
		}
		return none, apierr.LimitExceeded(fmt.Sprintf("this API key's rate limit reached: at most %d %s a minute; retry in %v",
			t.Limit, what, d.RetryAfter.Round(time.Millisecond)), ls, d.RetryAfter)
	}
	if tokenTake < 0 {
		return none, nil
	}
	t := takes[tokenTake]
	return func(used int64) {
		if back := t.N - used; back > 0 {
			_, _ = l.limiter.Refund(context.WithoutCancel(ctx), l.now(), t.Key, t.Limit, t.Window, back)
		}
	}, nil
}
