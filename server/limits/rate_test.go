package limits

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlimit"
)

// burst counts the requests the user gets in at once, then lets the bucket
// refill (the clock moves a minute).
func burst(t *testing.T, l *Limits, clock *time.Time, user string, tier store.Tier) (n int, retry time.Duration) {
	t.Helper()
	for range 100 {
		err := l.Rate(context.Background(), user, tier)
		if err != nil {
			var le parleyv1.LimitExceeded
			if connect.CodeOf(err) != connect.CodeResourceExhausted || !apierr.Detail(err, &le) ||
				le.GetLimit().GetKind() != parleyv1.LimitKind_LIMIT_KIND_REQUEST_RATE {
				t.Fatalf("refused with %v", err)
			}
			retry, _ = apierr.RetryAfter(err)
			break
		}
		n++
	}
	*clock = clock.Add(time.Minute)
	return n, retry
}

func TestRateHalvesUnderLoadLowestTiersFirstAndRecovers(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	var busy atomic.Int64
	load, err := NewLoad(LoadConfig{Sample: func() (float64, float64) { return float64(busy.Load()), 10 }, Window: 2 * time.Second, Every: 500 * time.Millisecond, Rates: DefaultRates()})
	if err != nil {
		t.Fatal(err)
	}
	l := New(memlimit.New(0), func() time.Time { return clock })
	l.Rates, l.Load = DefaultRates(), load
	ctx := context.Background()
	tick := func(n int) {
		for range n {
			clock = clock.Add(500 * time.Millisecond)
			load.Tick(ctx, clock)
		}
	}
	tick(1)
	if n, _ := burst(t, l, &clock, "free", store.TierFree); n != 20 {
		t.Fatalf("idle: a free user's burst is %d, want 20", n)
	}
	busy.Store(10) // saturated
	tick(5)        // the window is all saturated now
	if got := load.Current(); got != 1 {
		t.Fatalf("load %v, want 1", got)
	}
	n, retry := burst(t, l, &clock, "free", store.TierFree)
	if n != 10 {
		t.Fatalf("saturated: a free user's burst is %d, want 10", n)
	}
	// 300 a minute: one request every 200 ms.
	if retry <= 0 || retry > 200*time.Millisecond {
		t.Fatalf("retry after %v, want at most 200 ms", retry)
	}
	if n, _ := burst(t, l, &clock, "max", store.TierMax); n != 20 {
		t.Fatalf("saturated: a max user's burst is %d, want 20 (never tightened)", n)
	}
	busy.Store(8) // 80 %: free and plus tightened, pro not yet
	tick(5)
	for tier, want := range map[store.Tier]int{store.TierFree: 10, store.TierPlus: 20, store.TierPro: 20} {
		if tier == store.TierPlus {
			want = 20 // 0.8 is not above plus's 0.8
		}
		if n, _ := burst(t, l, &clock, "u-"+string(tier), tier); n != want {
			t.Fatalf("at 80%%: %s burst %d, want %d", tier, n, want)
		}
	}
	busy.Store(0)
	tick(5)
	if n, _ := burst(t, l, &clock, "free", store.TierFree); n != 20 {
		t.Fatalf("recovered: a free user's burst is %d, want 20", n)
	}
}

func TestLoadWindowAverages(t *testing.T) {
	var busy atomic.Int64
	load, _ := NewLoad(LoadConfig{Sample: func() (float64, float64) { return float64(busy.Load()), 4 }, Window: 2 * time.Second})
	now := time.Unix(0, 0)
	for range 4 { // 2 s idle
		now = now.Add(500 * time.Millisecond)
		load.Tick(context.Background(), now)
	}
	busy.Store(4)
	now = now.Add(500 * time.Millisecond)
	load.Tick(context.Background(), now)
	if got := load.Current(); got <= 0 || got >= 0.5 {
		t.Fatalf("one saturated sample in an idle window: %v", got)
	}
}

func TestLoadIsSharedOnTheBoard(t *testing.T) {
	board := memlimit.NewBoard()
	now := time.Unix(0, 0)
	busyA := 4.0
	a, _ := NewLoad(LoadConfig{Sample: func() (float64, float64) { return busyA, 4 }, Board: board, Gateway: "a"})
	b, _ := NewLoad(LoadConfig{Sample: func() (float64, float64) { return 0, 0 }, Board: board, Gateway: "b"})
	a.Tick(context.Background(), now)
	b.Tick(context.Background(), now)
	if a.Current() != 1 || b.Current() != 1 {
		t.Fatalf("a %v, b %v: b has no workers of its own but shares a's load", a.Current(), b.Current())
	}
	// a stops publishing: its figure expires and b is back to its own.
	now = now.Add(10 * time.Second)
	b.Tick(context.Background(), now)
	if b.Current() != 0 {
		t.Fatalf("b %v after a's figure expired", b.Current())
	}
}

func TestParseRates(t *testing.T) {
	r, err := ParseRates("free=120/6@0.5:0.5@0.9:0.25,max=off")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r[store.TierMax]; ok {
		t.Fatal("max=off kept a rate")
	}
	if f := r[store.TierFree]; f.PerMinute != 120 || f.Burst != 6 || f.Factor(0.6) != 0.5 || f.Factor(0.95) != 0.25 || f.Factor(0.4) != 1 {
		t.Fatalf("free = %+v", f)
	}
	if r[store.TierPlus].PerMinute != 600 {
		t.Fatal("an unnamed tier lost its default")
	}
	if r, _ := ParseRates("off"); len(r) != 0 {
		t.Fatal("off kept rates")
	}
	for _, bad := range []string{"gold=1/1", "free=1", "free=0/1", "free=10/2@1.5:0.5", "free=10/2@0.5:0", "free=10/2@x"} {
		if _, err := ParseRates(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

// Web generations take the request rate in Admit, in the same call as the
// tier limits: refused by the rate, nothing of the tier limits is taken;
// Release gives the rate's unit back; Status reports it.
func TestAdmitTakesTheRate(t *testing.T) {
	l, c := newLimits()
	l.Rates = Rates{store.TierFree: {PerMinute: 60, Burst: 2}}
	ctx := context.Background()
	big := &models.Model{ID: "big", TierLimits: map[store.Tier]models.TierLimit{
		store.TierFree: {Requests: 100, InputTokens: 100000, OutputTokens: 100000, Window: time.Hour}}}
	g, err := l.Admit(ctx, "u", store.TierFree, big, 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx, g)
	for i := range 2 {
		if _, err := l.Admit(ctx, "u", store.TierFree, big, 10, 10); err != nil {
			t.Fatalf("request %d: %v (a released grant gave back its rate unit)", i, err)
		}
	}
	_, err = l.Admit(ctx, "u", store.TierFree, big, 10, 10)
	var le parleyv1.LimitExceeded
	if !apierr.Detail(err, &le) || le.GetLimit().GetKind() != parleyv1.LimitKind_LIMIT_KIND_REQUEST_RATE {
		t.Fatalf("third request at once: %v", err)
	}
	if d, _ := apierr.RetryAfter(err); d != time.Second {
		t.Fatalf("retry after %v, want 1 s (60 a minute)", d)
	}
	st, err := l.Status(ctx, "u", store.TierFree, []*models.Model{big}, NextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if last := st[len(st)-1]; last.GetKind() != parleyv1.LimitKind_LIMIT_KIND_REQUEST_RATE || last.GetRemaining() != 0 || last.GetLimit() != 2 {
		t.Fatalf("status %v", last)
	}
	// The next request is a second away, as the refusal said: not the 2 s
	// to a full burst.
	if last := st[len(st)-1]; !last.GetNextRequestAt().AsTime().Equal(c.Now().Add(time.Second)) || last.GetNextRequestAmount() != 1 {
		t.Fatalf("rate next request at %v (now %v)", last.GetNextRequestAt().AsTime(), c.Now())
	}
	for _, s := range st[:len(st)-1] {
		if s.GetKind() == parleyv1.LimitKind_LIMIT_KIND_REQUESTS && s.GetUsed() != 2 {
			t.Fatalf("the refused request took a tier request: %v", s)
		}
	}
	c.Advance(time.Second)
	if _, err := l.Admit(ctx, "u", store.TierFree, big, 10, 10); err != nil {
		t.Fatalf("a second later: %v", err)
	}
}
