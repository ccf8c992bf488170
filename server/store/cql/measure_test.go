package cql_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
)

// TestMeasureLatency measures message append and read (a 50-message page)
// latency, one caller at a time. Run with PARLEY_MEASURE=1.
func TestMeasureLatency(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	m := newStore(t).Messages
	ctx := t.Context()
	const convs, per = 20, 100
	var appends, reads []time.Duration
	for c := range convs {
		conv := uuid.NewString()
		for i := range per {
			msg := store.Message{ID: uuid.NewString(), ConversationID: conv, Role: "user",
				Parts:     []store.Part{{Text: fmt.Sprintf("message %d of a conversation, of a typical length for a chat turn", i)}},
				CreatedAt: time.Unix(1_750_000_000+int64(c*per+i), 0)}
			start := time.Now()
			if err := m.Append(ctx, msg); err != nil {
				t.Fatal(err)
			}
			appends = append(appends, time.Since(start))
		}
		for range 10 {
			start := time.Now()
			if _, _, err := m.List(ctx, conv, store.PageRequest{Size: 50}); err != nil {
				t.Fatal(err)
			}
			reads = append(reads, time.Since(start))
		}
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		slices.Sort(d)
		return d[int(float64(len(d)-1)*p)].Round(time.Microsecond)
	}
	t.Logf("append p50 %v p99 %v (%d); read 50 p50 %v p99 %v (%d)",
		pct(appends, .5), pct(appends, .99), len(appends), pct(reads, .5), pct(reads, .99), len(reads))
}
