package postgres_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestMeasureVectorSearch reports SearchChunks and SearchChunksText latency
// over one vector store of 10,000 chunks of 512 dimensions (the sim's
// embeddings; PARLEY_MEASURE_CHUNKS=10000,100000 for more sizes): the first
// search (which reads the store's vectors) apart from the rest, with and
// without an attribute filter, and the first search on a second gateway
// after the other's write. A measurement, not a check: run with
// PARLEY_MEASURE=1 go test -run MeasureVector -v ./server/store/postgres
// (and the test database's env).
func TestMeasureVectorSearch(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("set PARLEY_MEASURE=1 to measure")
	}
	sizes := []int{10_000}
	if s := os.Getenv("PARLEY_MEASURE_CHUNKS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	ctx := t.Context()
	dbs := openGateways(t, 2)
	ix, other := dbs[0].Vectors(), dbs[1].Vectors()
	const dims = 512
	rng := uint64(1)
	next := func() uint64 { // xorshift: reproducible and cheap
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return rng
	}
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(int64(next()>>11)%2001-1000) / 1000
		}
		return v
	}
	// Text of 120 words from a vocabulary of 5,000 (Zipf-ish: small ranks
	// are common), about a chunk of prose's length in terms.
	text := func() string {
		var b strings.Builder
		for i := range 120 {
			r := next() % 5000
			r = r * (next() % 5000) / 5000
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "w%d", r)
		}
		return b.String()
	}
	p := func(d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("p50 %8v  p99 %8v", d[len(d)/2].Round(time.Microsecond), d[len(d)*99/100].Round(time.Microsecond))
	}
	for _, size := range sizes {
		store_ := fmt.Sprint("vs_", size)
		start := time.Now()
		for have := 0; have < size; {
			batch := make([]store.Chunk, 0, 1000)
			for range min(1000, size-have) {
				batch = append(batch, store.Chunk{ID: fmt.Sprintf("%s_%07d", store_, have), StoreID: store_, FileID: fmt.Sprint("file_", have/100),
					Ordinal: have % 100, Text: text(), Vector: vec(), Attributes: map[string]any{"year": float64(2000 + have%25)}})
				have++
			}
			if err := ix.PutChunks(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%d chunks of %d dimensions (120 terms each) put in %v", size, dims, time.Since(start).Round(time.Millisecond))
		q := store.VectorQuery{StoreIDs: []string{store_}, Limit: 10}
		t0 := time.Now()
		q.Vector = vec()
		if _, err := ix.SearchChunks(ctx, q); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d chunks: the first search (reads the vectors) %v", size, time.Since(t0).Round(time.Microsecond))
		for _, filtered := range []bool{false, true} {
			q.Filter = nil
			name := "no filter"
			if filtered {
				q.Filter = &store.AttributeFilter{Op: "gte", Key: "year", Value: float64(2020)}
				name = "year ≥ 2020 (1 in 5)"
			}
			d := make([]time.Duration, 50)
			for i := range d {
				q.Vector = vec()
				t0 := time.Now()
				if _, err := ix.SearchChunks(ctx, q); err != nil {
					t.Fatal(err)
				}
				d[i] = time.Since(t0)
			}
			t.Logf("%d chunks, top 10, %-22s %s (50 searches, cached, generation checked)", size, name, p(d))
		}
		// Another gateway's write: the next search here reads the store again.
		q.Filter = nil
		d := make([]time.Duration, 5)
		for i := range d {
			if _, err := other.SetFileAttributes(ctx, store_, "file_0", map[string]any{"year": float64(1999 + i)}); err != nil {
				t.Fatal(err)
			}
			q.Vector = vec()
			t0 := time.Now()
			if _, err := ix.SearchChunks(ctx, q); err != nil {
				t.Fatal(err)
			}
			d[i] = time.Since(t0)
		}
		t.Logf("%d chunks: the first search after another gateway's write (re-reads) %s (5 writes)", size, p(d))
		for _, nTerms := range []int{1, 4} {
			d := make([]time.Duration, 30)
			for i := range d {
				words := strings.Fields(text())[:nTerms]
				t0 := time.Now()
				if _, err := ix.SearchChunksText(ctx, store.TextQuery{StoreIDs: []string{store_}, Text: strings.Join(words, " "), Limit: 10}); err != nil {
					t.Fatal(err)
				}
				d[i] = time.Since(t0)
			}
			t.Logf("%d chunks, BM25 top 10, %d term(s) drawn like the text: %s (30 searches)", size, nTerms, p(d))
		}
	}
}
