package storetest

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestUsage is the conformance suite for store.Usage.
func TestUsage(t *testing.T, newStore NewStore) {
	t.Run("RecordList", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		a, b := newID(), newID()
		var recs []store.UsageRecord
		for i := range 30 {
			recs = append(recs, store.UsageRecord{RequestID: newID(), UserID: a, APIKeyID: newID(), Channel: store.ChannelAPI,
				Model: "sim-small", PromptTokens: int64(100 + i), CompletionTokens: int64(i), CachedTokens: int64(i / 2),
				Estimated: i%2 == 0, CostNanos: int64(i) * 1_000, FinishReason: "stop",
				CreatedAt: t0.Add(time.Duration(i/3) * time.Second)})
		}
		recs = append(recs, store.UsageRecord{RequestID: newID(), UserID: b, Channel: store.ChannelWeb, Model: "m", CreatedAt: t0})
		noErr(t, s.Usage.Record(ctx, recs[:20]), "Record first batch")
		// A retried batch overlapping the first is stored once.
		noErr(t, s.Usage.Record(ctx, recs[10:]), "Record overlapping batch")
		noErr(t, s.Usage.Record(ctx, nil), "Record empty")

		list := func(p store.PageRequest) ([]store.UsageRecord, string, error) { return s.Usage.List(ctx, a, p) }
		got := collect(t, 7, list)
		if len(got) != 30 {
			t.Fatalf("listed %d records, want 30", len(got))
		}
		byID := map[string]store.UsageRecord{}
		for _, r := range recs {
			byID[r.RequestID] = r
		}
		for i, g := range got {
			want, ok := byID[g.RequestID]
			if !ok {
				t.Fatalf("unknown record %s", g.RequestID)
			}
			delete(byID, g.RequestID)
			sameTime(t, g.CreatedAt, want.CreatedAt, "CreatedAt")
			g.CreatedAt = want.CreatedAt
			if g != want {
				t.Fatalf("record = %+v, want %+v", g, want)
			}
			if i > 0 {
				p := got[i-1]
				if p.CreatedAt.Before(g.CreatedAt) || (p.CreatedAt.Equal(g.CreatedAt) && p.RequestID < g.RequestID) {
					t.Fatalf("records %d and %d not newest first", i-1, i)
				}
			}
		}
		bl, _, err := s.Usage.List(ctx, b, store.PageRequest{})
		noErr(t, err, "List b")
		if len(bl) != 1 || bl[0].Channel != store.ChannelWeb {
			t.Fatalf("user b records = %+v", bl)
		}
		checkBadCursors(t, list)
	})
}
