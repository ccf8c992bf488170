package clickhouse_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
)

// TestMeasureRecord measures usage rows per second written in batches of
// 10,000 (the sink's largest). Run with PARLEY_MEASURE=1.
func TestMeasureRecord(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	db := open(t)
	ctx := t.Context()
	const batches, size = 20, 10_000
	start := time.Now()
	for b := range batches {
		recs := make([]store.UsageRecord, size)
		for i := range recs {
			recs[i] = store.UsageRecord{RequestID: uuid.NewString(), UserID: fmt.Sprintf("u%d", (b*size+i)%5000), Channel: store.ChannelAPI,
				Model: "sim-small", PromptTokens: 100, CompletionTokens: 50, CostNanos: 1234, FinishReason: "stop", CreatedAt: time.Now()}
		}
		if err := db.Record(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	el := time.Since(start)
	t.Logf("%.0f rows/s (%d batches of %d in %v)", float64(batches*size)/el.Seconds(), batches, size, el.Round(time.Millisecond))
}

// TestMeasureSummarize measures the usage pages' query (Summarize and
// SummarizeKeys, FINAL over one billing account's range of the primary
// key) for an organisation with a million requests in 30 days over 50 keys
// and 3 models. Run with PARLEY_MEASURE=1.
func TestMeasureSummarize(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	db := open(t)
	ctx := t.Context()
	const total, size = 1_000_000, 10_000
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	step := 30 * 24 * time.Hour / total
	for b := range total / size {
		recs := make([]store.UsageRecord, size)
		for i := range recs {
			n := b*size + i
			recs[i] = store.UsageRecord{RequestID: uuid.NewString(), UserID: "org-billing", APIKeyID: fmt.Sprintf("key-%02d", n%50), Channel: store.ChannelAPI,
				Model: []string{"sim-small", "sim-large", "sim-embed"}[n%3], PromptTokens: 100, CompletionTokens: 50, CostNanos: 1234,
				FinishReason: "stop", CreatedAt: start.Add(time.Duration(n) * step)}
		}
		if err := db.Record(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	// Another tenant's rows around it, as in a shared table.
	for b := range 10 {
		recs := make([]store.UsageRecord, size)
		for i := range recs {
			recs[i] = store.UsageRecord{RequestID: uuid.NewString(), UserID: fmt.Sprintf("u%d", (b*size+i)%5000), Channel: store.ChannelAPI,
				Model: "sim-small", PromptTokens: 10, CompletionTokens: 5, CostNanos: 12, FinishReason: "stop", CreatedAt: start.Add(time.Duration(b*size+i) * step * 10)}
		}
		if err := db.Record(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []struct {
		name string
		fn   func() ([]store.UsageDay, error)
	}{
		{"Summarize (day, model)", func() ([]store.UsageDay, error) {
			return db.Summarize(ctx, "org-billing", start, start.AddDate(0, 0, 30), 0)
		}},
		{"SummarizeKeys (day, model, key)", func() ([]store.UsageDay, error) {
			return db.SummarizeKeys(ctx, "org-billing", start, start.AddDate(0, 0, 30), time.Hour)
		}},
	} {
		var times []time.Duration
		var rows int
		var requests int64
		for range 5 {
			t0 := time.Now()
			days, err := q.fn()
			if err != nil {
				t.Fatal(err)
			}
			times = append(times, time.Since(t0))
			rows, requests = len(days), 0
			for _, d := range days {
				requests += d.Requests
			}
		}
		slices.Sort(times)
		if requests != total {
			t.Fatalf("%s counted %d requests of %d", q.name, requests, total)
		}
		t.Logf("%s over %d records: median %v, fastest %v, slowest %v of 5 (%d rows)", q.name, total, times[2].Round(time.Millisecond),
			times[0].Round(time.Millisecond), times[4].Round(time.Millisecond), rows)
	}
}
