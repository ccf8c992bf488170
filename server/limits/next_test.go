package limits

import (
	"context"
	"testing"
	"time"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// next_request_at is when the next request of a typical size is admitted,
// the time Admit's own retry-after names, not the time to a full refill
// (resets_at): the web banner's "resets in 3 h" when a send works in 10
// minutes.
func TestNextRequestAtIsTheRetryTime(t *testing.T) {
	l, c := newLimits()
	ctx := context.Background()
	m := &models.Model{ID: "m2", MaxOutputTokens: 40, TierLimits: map[store.Tier]models.TierLimit{
		store.TierFree: {Requests: 100, InputTokens: 100_000, OutputTokens: 100, Window: time.Hour},
	}}
	g, err := l.Admit(ctx, "u", store.TierFree, m, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	l.Settle(ctx, g, 100) // the output allowance is spent
	start := c.Now()

	output := func(next NextRequest) *parleyv1.LimitStatus {
		t.Helper()
		st, err := l.Status(ctx, "u", store.TierFree, []*models.Model{m}, next)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st {
			if s.GetKind() == parleyv1.LimitKind_LIMIT_KIND_OUTPUT_TOKENS {
				return s
			}
		}
		t.Fatal("no output limit")
		return nil
	}
	s := output(NextRequest{})
	if got := s.GetResetsAt().AsTime(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("resets_at %v, want a full refill at +1h", got.Sub(start))
	}
	// A default send reserves the model's 40 output tokens: 40% of the hour.
	want := start.Add(24 * time.Minute)
	if s.GetNextRequestAmount() != 40 || !s.GetNextRequestAt().AsTime().Equal(want) {
		t.Fatalf("next request: %d at %v, want 40 at +24m", s.GetNextRequestAmount(), s.GetNextRequestAt().AsTime().Sub(start))
	}
	// Admit refuses it with the same retry time.
	_, err = l.Admit(ctx, "u", store.TierFree, m, 10, 40)
	if d, ok := apierr.RetryAfter(err); !ok || !start.Add(d).Equal(want) {
		t.Fatalf("Admit: %v (retry after %v), want retry at +24m", err, d)
	}
	// A smaller request is sooner.
	if s := output(NextRequest{MaxOutputTokens: 10}); !s.GetNextRequestAt().AsTime().Equal(start.Add(6 * time.Minute)) {
		t.Fatalf("10 tokens at %v, want +6m", s.GetNextRequestAt().AsTime().Sub(start))
	}
	// More than the limit ever holds: no time.
	if s := output(NextRequest{MaxOutputTokens: 101}); s.GetNextRequestAt() != nil {
		t.Fatalf("101 tokens at %v, want unset", s.GetNextRequestAt())
	}
	c.Advance(24*time.Minute - time.Nanosecond)
	if _, err := l.Admit(ctx, "u", store.TierFree, m, 10, 40); err == nil {
		t.Fatal("admitted before next_request_at")
	}
	c.Advance(time.Nanosecond)
	if s := output(NextRequest{}); !s.GetNextRequestAt().AsTime().Equal(c.Now()) {
		t.Fatalf("at next_request_at it says %v", s.GetNextRequestAt().AsTime().Sub(c.Now()))
	}
	if _, err := l.Admit(ctx, "u", store.TierFree, m, 10, 40); err != nil {
		t.Fatalf("refused at next_request_at: %v", err)
	}
}

// A limit and window whose product overflows int64 still gives an exact
// time.
func TestAvailableAtLargeLimits(t *testing.T) {
	full := time.Unix(2_000_000_000, 0)
	at, ok := availableAt(full, 10_000_000_000, 720*time.Hour, 5_000_000_000)
	if !ok || !at.Equal(full.Add(-360*time.Hour)) {
		t.Fatalf("availableAt = %v %v", full.Sub(at), ok)
	}
}
