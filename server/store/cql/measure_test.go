package cql_test

import (
	"fmt"
	"math/rand/v2"
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

// TestMeasureVectorSearch puts N chunks of 512 dimensions into one vector
// store — clustered as embeddings are (200 topics, each chunk its topic's
// centre plus noise of 0.5 its size), queried near a chunk (one perturbed
// as much again); PARLEY_MEASURE_RANDOM=1 makes them independent normal
// vectors instead, the hardest case for a graph index — and reports the
// SAI ANN search's latency and its recall@10 against the exact nearest
// (computed here), over 50 queries, unfiltered and with a filter (which is
// an exact scan of the store). PARLEY_MEASURE=1; PARLEY_MEASURE_CHUNKS sets
// N (default 10,000).
func TestMeasureVectorSearch(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("PARLEY_MEASURE not set")
	}
	n := 10_000
	if s := os.Getenv("PARLEY_MEASURE_CHUNKS"); s != "" {
		fmt.Sscan(s, &n)
	}
	ix := newVectorIndex(t)
	ctx := t.Context()
	const dims = 512
	r := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	random := os.Getenv("PARLEY_MEASURE_RANDOM") != ""
	near := func(c []float32) []float32 {
		v := vec()
		for i := range v {
			v[i] = c[i] + 0.5*v[i]
		}
		return v
	}
	centres := make([][]float32, 200)
	for i := range centres {
		centres[i] = vec()
	}
	chunks := make([]store.Chunk, n)
	start := time.Now()
	for i := range chunks {
		v := vec()
		if !random {
			v = near(centres[r.IntN(len(centres))])
		}
		chunks[i] = store.Chunk{ID: fmt.Sprintf("c%07d", i), StoreID: "vs_m", FileID: fmt.Sprint("f", i/100), Ordinal: i % 100,
			Text: "a passage", Vector: v, Attributes: map[string]any{"year": float64(2000 + i%25)}}
	}
	for lo := 0; lo < n; lo += 500 {
		if err := ix.PutChunks(ctx, chunks[lo:min(lo+500, n)]); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d chunks of %d dimensions put in %v (%.0f chunks/s)", n, dims, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds())
	for _, filtered := range []bool{false, true} {
		var d []time.Duration
		recall := 0.0
		for range 50 {
			q := store.VectorQuery{StoreIDs: []string{"vs_m"}, Vector: vec(), Limit: 10}
			if !random {
				q.Vector = near(chunks[r.IntN(n)].Vector)
			}
			keep := func(store.Chunk) bool { return true }
			if filtered {
				q.Filter = &store.AttributeFilter{Op: "gte", Key: "year", Value: float64(2020)}
				keep = func(c store.Chunk) bool { return c.Attributes["year"].(float64) >= 2020 }
			}
			t0 := time.Now()
			ms, err := ix.SearchChunks(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			d = append(d, time.Since(t0))
			type sc struct {
				id string
				s  float64
			}
			var all []sc
			for _, c := range chunks {
				if keep(c) {
					all = append(all, sc{c.ID, store.Cosine(c.Vector, q.Vector)})
				}
			}
			slices.SortFunc(all, func(a, b sc) int {
				if a.s > b.s {
					return -1
				}
				if a.s < b.s {
					return 1
				}
				return 0
			})
			hit := 0
			for _, m := range ms {
				for _, e := range all[:10] {
					if e.id == m.ID {
						hit++
					}
				}
			}
			recall += float64(hit) / 10 / 50
		}
		slices.Sort(d)
		name := "ANN (no filter)"
		if filtered {
			name = "filter year ≥ 2020 (exact scan)"
		}
		t.Logf("%d chunks, top 10, %-32s p50 %8v  p99 %8v  recall@10 %.3f (50 searches)", n, name, d[25].Round(time.Microsecond), d[49].Round(time.Microsecond), recall)
	}
}
