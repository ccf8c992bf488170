package clickhouse_test

import (
	"fmt"
	"os"
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
