package vectorscan

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestMeasureScan reports the exact in-memory scan (the one both embedded
// stores search with, once a store's vectors are read) over 1,000,000
// chunks of 512 dimensions: what a search costs at that size when its
// vectors are held (2 GiB of them, over the stores' default cache of
// 256 MiB). A measurement, not a check: run with
// PARLEY_MEASURE=1 go test -run MeasureScan -v ./server/store/vectorscan
// (PARLEY_MEASURE_CHUNKS=100000,1000000 for other sizes).
func TestMeasureScan(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("set PARLEY_MEASURE=1 to measure")
	}
	sizes := []int{1_000_000}
	if v := os.Getenv("PARLEY_MEASURE_CHUNKS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	const dims = 512
	rng := uint64(1)
	next := func() float32 { // xorshift: reproducible and cheap
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return float32(int64(rng>>11)%2001-1000) / 1000
	}
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = next()
		}
		return Unit(v)
	}
	for _, size := range sizes {
		s := &Set{Dims: dims, IDs: make([]string, size), Vecs: make([]float32, 0, size*dims), Attrs: make([]map[string]any, size)}
		years := make([]map[string]any, 25)
		for i := range years {
			years[i] = map[string]any{"year": float64(2000 + i)}
		}
		for i := range size {
			s.IDs[i] = fmt.Sprintf("c_%07d", i)
			s.Attrs[i] = years[i%25]
			s.Vecs = append(s.Vecs, vec()...)
		}
		for _, filtered := range []bool{false, true} {
			q := store.VectorQuery{Limit: 10}
			name := "no filter"
			if filtered {
				q.Filter = &store.AttributeFilter{Op: "gte", Key: "year", Value: float64(2020)}
				name = "year ≥ 2020 (1 in 5)"
			}
			d := make([]time.Duration, 30)
			for i := range d {
				query := vec()
				t0 := time.Now()
				if got := s.Search(context.Background(), query, q); len(got) < 10 {
					t.Fatalf("%d matches", len(got))
				}
				d[i] = time.Since(t0)
			}
			slices.Sort(d)
			t.Logf("%d chunks × %d dims in memory, top 10, %-22s p50 %8v  p99 %8v (30 searches)", size, dims, name, d[15].Round(time.Microsecond), d[29].Round(time.Microsecond))
		}
	}
}
