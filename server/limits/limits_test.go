package limits

import (
	"context"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlimit"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var model = &models.Model{ID: "m", TierLimits: map[store.Tier]models.TierLimit{
	store.TierFree: {Requests: 4, InputTokens: 1000, OutputTokens: 100, Window: time.Hour},
}}

func newLimits() (*Limits, *clock) {
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	return New(memlimit.New(time.Minute), c.Now), c
}

func TestExactAtTheBoundaryAndRefill(t *testing.T) {
	l, c := newLimits()
	ctx := context.Background()
	for i := range 4 {
		if _, err := l.Admit(ctx, "u", store.TierFree, model, 10, 10); err != nil {
			t.Fatalf("request %d refused: %v", i+1, err)
		}
	}
	_, err := l.Admit(ctx, "u", store.TierFree, model, 10, 10)
	var le parleyv1.LimitExceeded
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !apierr.Detail(err, &le) || le.GetLimit().GetKind() != parleyv1.LimitKind_LIMIT_KIND_REQUESTS {
		t.Fatalf("fifth request: %v", err)
	}
	d, ok := apierr.RetryAfter(err)
	if !ok || d != 15*time.Minute { // one request comes back every hour/4
		t.Fatalf("retry after %v", d)
	}
	c.Advance(15*time.Minute - time.Nanosecond)
	if _, err := l.Admit(ctx, "u", store.TierFree, model, 10, 10); err == nil {
		t.Fatal("admitted a nanosecond early")
	}
	c.Advance(time.Nanosecond)
	if _, err := l.Admit(ctx, "u", store.TierFree, model, 10, 10); err != nil {
		t.Fatalf("not refilled after 15 min: %v", err)
	}
	// Another user, another bucket.
	if _, err := l.Admit(ctx, "v", store.TierFree, model, 10, 10); err != nil {
		t.Fatal(err)
	}
}

func TestUnusedOutputIsReturned(t *testing.T) {
	l, _ := newLimits()
	ctx := context.Background()
	g, err := l.Admit(ctx, "u", store.TierFree, model, 10, 100) // holds all 100 output tokens
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(ctx, "u", store.TierFree, model, 10, 1); err == nil {
		t.Fatal("output held at max_output_tokens should leave none")
	}
	l.Settle(ctx, g, 30) // used 30: 70 come back
	st, _ := l.Status(ctx, "u", store.TierFree, []*models.Model{model}, NextRequest{})
	for _, s := range st {
		if s.GetKind() == parleyv1.LimitKind_LIMIT_KIND_OUTPUT_TOKENS && (s.GetUsed() != 30 || s.GetRemaining() != 70) {
			t.Fatalf("output after settle: %v", s)
		}
	}
	if _, err := l.Admit(ctx, "u", store.TierFree, model, 10, 70); err != nil {
		t.Fatalf("refunded output not usable: %v", err)
	}
}

func TestImpossibleRequestIsNotRetryable(t *testing.T) {
	l, _ := newLimits()
	_, err := l.Admit(context.Background(), "u", store.TierFree, model, 5000, 10)
	if _, ok := apierr.RetryAfter(err); connect.CodeOf(err) != connect.CodeResourceExhausted || ok {
		t.Fatalf("%v", err)
	}
	if _, err := l.Admit(context.Background(), "u", store.TierMax, model, 1, 1); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a tier without limits on the model: %v", err)
	}
}

func TestConcurrentAdmitsCannotOvershoot(t *testing.T) {
	l, _ := newLimits()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Admit(context.Background(), "u", store.TierFree, model, 1, 1); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 4 {
		t.Fatalf("%d admitted, want 4", ok)
	}
}

func TestAdjustTakesTheRestOrRefuses(t *testing.T) {
	l, _ := newLimits()
	ctx := t.Context()
	g, err := l.Admit(ctx, "u", store.TierFree, model, 10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Adjust(ctx, &g, 600); err != nil || g.Input != 600 {
		t.Fatalf("Adjust up: %v, input %d", err, g.Input)
	}
	if err := l.Adjust(ctx, &g, 500); err != nil || g.Input != 500 {
		t.Fatalf("Adjust down: %v, input %d", err, g.Input)
	}
	// 500 of 1000 used: a second request at a floor of 10 is admitted, but
	// its exact 600 is not.
	g2, err := l.Admit(ctx, "u", store.TierFree, model, 10, 5)
	if err != nil {
		t.Fatal(err)
	}
	err = l.Adjust(ctx, &g2, 600)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || g2.Input != 10 {
		t.Fatalf("Adjust past the limit: %v, input %d", err, g2.Input)
	}
	l.Release(ctx, g2)
	if err := l.Adjust(ctx, &g2, 2000); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("an impossible count: %v", err)
	}
	// After the release, the second request's take is all given back: 500
	// input tokens are left, and 3 requests.
	st, err := l.Status(ctx, "u", store.TierFree, []*models.Model{model}, NextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		want := map[parleyv1.LimitKind]int64{
			parleyv1.LimitKind_LIMIT_KIND_REQUESTS: 3, parleyv1.LimitKind_LIMIT_KIND_INPUT_TOKENS: 500, parleyv1.LimitKind_LIMIT_KIND_OUTPUT_TOKENS: 95,
		}[s.GetKind()]
		if s.GetRemaining() != want {
			t.Errorf("%v: %d remaining, want %d", s.GetKind(), s.GetRemaining(), want)
		}
	}
}
