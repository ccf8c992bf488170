package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// The usage summary adds up exactly the caller's usage records (SQLite).
func TestUsageSummary(t *testing.T) {
	usageSummarySuite(t, startServer(t, fastAuth...))
}

// The same over PostgreSQL, and over ClickHouse when it is configured
// (records copied there by the outbox relay).
func TestUsageSummaryScale(t *testing.T) {
	if os.Getenv("PARLEY_TEST_CLICKHOUSE_URL") == "" {
		t.Skip("PARLEY_TEST_CLICKHOUSE_URL not set (scripts/services.sh up; eval \"$(scripts/services.sh env)\")")
	}
	scaleMode(t)
	usageSummarySuite(t, startServer(t, fastAuth...))
}

func usageSummarySuite(t *testing.T, s *server) {
	a, b := s.newAccount(t, "spender@example.com"), s.newAccount(t, "bystander@example.com")
	s.topup(t, a, "10")
	s.topup(t, b, "10")
	ctx := ctxTimeout(t, 90*time.Second)
	key, web := s.api(protocols[0], cred{bearer: a.Key}), s.api(protocols[0], cred{cookie: a.Cookie})
	n := 0
	for i, model := range []string{"sim-small", "sim-large", "sim-small", "sim-small"} {
		_, err := key.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: model, Messages: userText(fmt.Sprintf("Question %d about soup", i)), MaxOutputTokens: int64(10 + i)}))
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	send(t, ctx, web, &parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("A web question"), MaxOutputTokens: 12})
	n++
	if _, err := s.api(protocols[0], cred{bearer: b.Key}).Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText("not yours"), MaxOutputTokens: 50})); err != nil {
		t.Fatal(err)
	}
	recs := waitUsage(t, s, a, n)

	const offset = 5*60 + 30 // UTC+5:30: days are not UTC days
	zone := time.FixedZone("", offset*60)
	type key2 struct{ day, model string }
	want := map[key2]*parleyv1.UsageBucket{}
	total := &parleyv1.UsageBucket{}
	add := func(b *parleyv1.UsageBucket, r *parleyv1.UsageRecord) {
		b.Requests++
		b.PromptTokens += r.GetUsage().GetPromptTokens()
		b.CompletionTokens += r.GetUsage().GetCompletionTokens()
		b.CachedTokens += r.GetUsage().GetCachedTokens()
		b.CostNanos += r.GetCostNanos()
	}
	for _, r := range recs {
		for _, k := range []key2{{r.GetCreatedAt().AsTime().In(zone).Format(time.DateOnly), r.GetModel()},
			{r.GetCreatedAt().AsTime().In(zone).Format(time.DateOnly), ""}, {"", r.GetModel()}} {
			if want[k] == nil {
				want[k] = &parleyv1.UsageBucket{Day: k.day, Model: k.model}
			}
			add(want[k], r)
		}
		add(total, r)
	}
	summary := func(g parleyv1.UsageGroupBy) *parleyv1.GetUsageSummaryResponse {
		t.Helper()
		res, err := web.Billing.GetUsageSummary(ctx, connect.NewRequest(&parleyv1.GetUsageSummaryRequest{
			StartTime: timestamppb.New(time.Now().Add(-24 * time.Hour)), EndTime: timestamppb.New(time.Now().Add(time.Minute)),
			GroupBy: g, UtcOffsetMinutes: offset,
		}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Msg
	}
	for _, g := range []parleyv1.UsageGroupBy{parleyv1.UsageGroupBy_USAGE_GROUP_BY_DAY_AND_MODEL, parleyv1.UsageGroupBy_USAGE_GROUP_BY_DAY, parleyv1.UsageGroupBy_USAGE_GROUP_BY_MODEL} {
		res := summary(g)
		var exp []*parleyv1.UsageBucket
		for k, b := range want {
			byDay, byModel := k.day != "", k.model != ""
			if (g == parleyv1.UsageGroupBy_USAGE_GROUP_BY_DAY_AND_MODEL && byDay && byModel) ||
				(g == parleyv1.UsageGroupBy_USAGE_GROUP_BY_DAY && byDay && !byModel) ||
				(g == parleyv1.UsageGroupBy_USAGE_GROUP_BY_MODEL && !byDay && byModel) {
				exp = append(exp, b)
			}
		}
		slices.SortFunc(exp, func(a, b *parleyv1.UsageBucket) int {
			return strings.Compare(a.GetDay()+"\x00"+a.GetModel(), b.GetDay()+"\x00"+b.GetModel())
		})
		if len(res.GetBuckets()) != len(exp) {
			t.Fatalf("%v: %d buckets %v, want %v", g, len(res.GetBuckets()), res.GetBuckets(), exp)
		}
		for i := range exp {
			if !proto.Equal(res.GetBuckets()[i], exp[i]) {
				t.Fatalf("%v bucket %d = %v, want %v", g, i, res.GetBuckets()[i], exp[i])
			}
		}
		if !proto.Equal(res.GetTotal(), total) {
			t.Fatalf("%v total = %v, want %v", g, res.GetTotal(), total)
		}
	}
	// The money adds up with the balance: $10 less what the records cost.
	bal, err := key.Billing.GetBalance(ctx, connect.NewRequest(&parleyv1.GetBalanceRequest{}))
	if err != nil || bal.Msg.GetBalanceNanos() != 10_000_000_000-total.GetCostNanos() || total.GetCostNanos() == 0 || total.GetRequests() != int64(n) {
		t.Fatalf("balance %v (%v), total %v", bal, err, total)
	}
	// A range with nothing in it.
	res, err := web.Billing.GetUsageSummary(ctx, connect.NewRequest(&parleyv1.GetUsageSummaryRequest{
		StartTime: timestamppb.New(time.Now().Add(-48 * time.Hour)), EndTime: timestamppb.New(time.Now().Add(-24 * time.Hour)),
	}))
	if err != nil || len(res.Msg.GetBuckets()) != 0 || res.Msg.GetTotal().GetRequests() != 0 {
		t.Fatalf("empty range: %v %v", res, err)
	}
	for what, req := range map[string]*parleyv1.GetUsageSummaryRequest{
		"utc_offset_minutes": {UtcOffsetMinutes: 841},
		"end_time":           {StartTime: timestamppb.Now(), EndTime: timestamppb.New(time.Now().Add(-time.Hour))},
		"end_time (span)":    {StartTime: timestamppb.New(time.Now().Add(-401 * 24 * time.Hour))},
		"group_by":           {GroupBy: 99},
	} {
		_, err := web.Billing.GetUsageSummary(ctx, connect.NewRequest(req))
		wantCode(t, what, err, connect.CodeInvalidArgument)
		if err != nil && !strings.Contains(err.Error(), strings.Fields(what)[0]) {
			t.Fatalf("%s: the error does not name the field: %v", what, err)
		}
	}

	// The limits say when the next default-sized request is admitted.
	lim, err := web.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "sim-small"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lim.Msg.GetLimits() {
		want := map[parleyv1.LimitKind]int64{parleyv1.LimitKind_LIMIT_KIND_REQUESTS: 1, parleyv1.LimitKind_LIMIT_KIND_INPUT_TOKENS: 1,
			parleyv1.LimitKind_LIMIT_KIND_OUTPUT_TOKENS: 1024}[l.GetKind()] // sim-small's max_output_tokens
		if l.GetNextRequestAmount() != want || l.GetNextRequestAt() == nil || l.GetNextRequestAt().AsTime().After(l.GetResetsAt().AsTime().Add(time.Second)) {
			t.Fatalf("limit %v: next request of %d at %v", l, want, l.GetNextRequestAt())
		}
	}
	big, err := web.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "sim-small", MaxOutputTokens: 1 << 40, InputTokens: 1 << 40}))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range big.Msg.GetLimits() {
		if l.GetKind() != parleyv1.LimitKind_LIMIT_KIND_REQUESTS && l.GetNextRequestAt() != nil {
			t.Fatalf("a request over the limit is never admitted, yet %v", l)
		}
	}
}
