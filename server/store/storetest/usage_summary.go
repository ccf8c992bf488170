package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestUsageSummary is the conformance suite for store.Usage.Summarize.
func TestUsageSummary(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	a, b := newID(), newID()
	day0 := t0.Truncate(24 * time.Hour) // 2025-06-01 00:00 UTC
	rec := func(user, model string, at time.Time, prompt, completion, cost int64) store.UsageRecord {
		return store.UsageRecord{RequestID: newID(), UserID: user, Channel: store.ChannelAPI, Model: model,
			PromptTokens: prompt, CompletionTokens: completion, CachedTokens: prompt / 10, CostNanos: cost,
			FinishReason: "stop", CreatedAt: at}
	}
	recs := []store.UsageRecord{
		rec(a, "m1", day0.Add(1*time.Hour), 100, 10, 1000),
		rec(a, "m1", day0.Add(23*time.Hour), 200, 20, 2000), // day 1 at UTC+2
		rec(a, "m2", day0.Add(2*time.Hour), 300, 30, 3000),
		rec(a, "m1", day0.Add(25*time.Hour), 400, 40, 4000),
		rec(a, "m1", day0.Add(-time.Nanosecond), 1, 1, 1), // before from
		rec(a, "m1", day0.Add(48*time.Hour), 1, 1, 1),     // at to: excluded
		rec(b, "m1", day0.Add(time.Hour), 9, 9, 9),
	}
	noErr(t, s.Usage.Record(ctx, recs), "Record")
	noErr(t, s.Usage.Record(ctx, recs[:2]), "Record again") // counted once

	d := day0.Unix() / 86400
	got, err := s.Usage.Summarize(ctx, a, day0, day0.Add(48*time.Hour), 0)
	noErr(t, err, "Summarize UTC")
	want := []store.UsageDay{
		{Day: d, Model: "m1", Requests: 2, PromptTokens: 300, CompletionTokens: 30, CachedTokens: 30, CostNanos: 3000},
		{Day: d, Model: "m2", Requests: 1, PromptTokens: 300, CompletionTokens: 30, CachedTokens: 30, CostNanos: 3000},
		{Day: d + 1, Model: "m1", Requests: 1, PromptTokens: 400, CompletionTokens: 40, CachedTokens: 40, CostNanos: 4000},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Summarize UTC:\n got %+v\nwant %+v", got, want)
	}
	got, err = s.Usage.Summarize(ctx, a, day0, day0.Add(48*time.Hour), 2*time.Hour)
	noErr(t, err, "Summarize UTC+2")
	want = []store.UsageDay{
		{Day: d, Model: "m1", Requests: 1, PromptTokens: 100, CompletionTokens: 10, CachedTokens: 10, CostNanos: 1000},
		{Day: d, Model: "m2", Requests: 1, PromptTokens: 300, CompletionTokens: 30, CachedTokens: 30, CostNanos: 3000},
		{Day: d + 1, Model: "m1", Requests: 2, PromptTokens: 600, CompletionTokens: 60, CachedTokens: 60, CostNanos: 6000},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Summarize UTC+2:\n got %+v\nwant %+v", got, want)
	}
	got, err = s.Usage.Summarize(ctx, a, day0, day0.Add(48*time.Hour), -2*time.Hour)
	noErr(t, err, "Summarize UTC-2")
	want = []store.UsageDay{
		{Day: d - 1, Model: "m1", Requests: 1, PromptTokens: 100, CompletionTokens: 10, CachedTokens: 10, CostNanos: 1000},
		{Day: d, Model: "m1", Requests: 2, PromptTokens: 600, CompletionTokens: 60, CachedTokens: 60, CostNanos: 6000},
		{Day: d, Model: "m2", Requests: 1, PromptTokens: 300, CompletionTokens: 30, CachedTokens: 30, CostNanos: 3000},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Summarize UTC-2:\n got %+v\nwant %+v", got, want)
	}
	// Per key: the same records, the web channel's under no key.
	k1, k2 := "key-1-"+newID(), "key-2-"+newID()
	c := newID()
	keyed := []store.UsageRecord{rec(c, "m1", day0.Add(time.Hour), 10, 1, 100), rec(c, "m1", day0.Add(2*time.Hour), 20, 2, 200),
		rec(c, "m1", day0.Add(3*time.Hour), 40, 4, 400), rec(c, "m2", day0.Add(4*time.Hour), 80, 8, 800), rec(c, "m1", day0.Add(5*time.Hour), 1, 1, 0)}
	keyed[0].APIKeyID, keyed[1].APIKeyID, keyed[2].APIKeyID, keyed[3].APIKeyID = k1, k2, k1, k1
	keyed[4].Channel = store.ChannelWeb
	noErr(t, s.Usage.Record(ctx, keyed), "Record keyed")
	got, err = s.Usage.SummarizeKeys(ctx, c, day0, day0.Add(48*time.Hour), 0)
	noErr(t, err, "SummarizeKeys")
	want = []store.UsageDay{
		{Day: d, Model: "m1", Requests: 1, PromptTokens: 1, CompletionTokens: 1, CachedTokens: 0, CostNanos: 0},
		{Day: d, Model: "m1", APIKeyID: k1, Requests: 2, PromptTokens: 50, CompletionTokens: 5, CachedTokens: 5, CostNanos: 500},
		{Day: d, Model: "m1", APIKeyID: k2, Requests: 1, PromptTokens: 20, CompletionTokens: 2, CachedTokens: 2, CostNanos: 200},
		{Day: d, Model: "m2", APIKeyID: k1, Requests: 1, PromptTokens: 80, CompletionTokens: 8, CachedTokens: 8, CostNanos: 800},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("SummarizeKeys:\n got %+v\nwant %+v", got, want)
	}
	got, err = s.Usage.Summarize(ctx, c, day0, day0.Add(48*time.Hour), 0)
	noErr(t, err, "Summarize keyed")
	if len(got) != 2 || got[0].Requests != 4 || got[0].APIKeyID != "" {
		t.Fatalf("Summarize of keyed records: %+v, want m1 (4 requests, no key) and m2", got)
	}

	got, err = s.Usage.Summarize(ctx, newID(), day0, day0.Add(48*time.Hour), 0)
	noErr(t, err, "Summarize nobody")
	if len(got) != 0 {
		t.Fatalf("Summarize of a user with no records: %+v", got)
	}
}
