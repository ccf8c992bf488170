package knowledge

import (
	"math"
	"slices"
	"testing"

	"github.com/parleyhq/parley/server/store"
)

func matches(scored ...any) []store.ChunkMatch {
	var out []store.ChunkMatch
	for i := 0; i < len(scored); i += 2 {
		out = append(out, store.ChunkMatch{Chunk: store.Chunk{ID: scored[i].(string)}, Score: scored[i+1].(float64)})
	}
	return out
}

func ids(ms []store.ChunkMatch) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestFuse(t *testing.T) {
	vector := matches("a", 0.9, "b", 0.8, "c", 0.7)
	text := matches("c", 12.0, "d", 3.0)

	got := Fuse(vector, text, DefaultWeights, 10)
	if want := []string{"c", "a", "b", "d"}; !slices.Equal(ids(got), want) {
		t.Fatalf("fused order %v, want %v (c in both lists first; b and d tie at rank 2, by id)", ids(got), want)
	}
	for id, want := range map[string]float64{"c": (1.0/63 + 1.0/61) / (2.0 / 61), "a": 0.5, "b": 61.0 / 124, "d": 61.0 / 124} {
		i := slices.IndexFunc(got, func(m store.ChunkMatch) bool { return m.ID == id })
		if math.Abs(got[i].Score-want) > 1e-12 {
			t.Errorf("score of %s: %v, want %v", id, got[i].Score, want)
		}
	}
	if got := Fuse(vector, text, DefaultWeights, 2); !slices.Equal(ids(got), []string{"c", "a"}) {
		t.Fatalf("limit 2: %v", ids(got))
	}
	// A chunk first in both rankings scores 1.
	if got := Fuse(matches("x", 0.1), matches("x", 1.0), Weights{EmbeddingWeight: 3, TextWeight: 0.5}, 5); len(got) != 1 || math.Abs(got[0].Score-1) > 1e-12 {
		t.Fatalf("first in both: %+v", got)
	}
	// Weights move the order: text-heavy puts d above a.
	if got := Fuse(vector, text, Weights{EmbeddingWeight: 1, TextWeight: 3}, 10); !slices.Equal(ids(got), []string{"c", "d", "a", "b"}) {
		t.Fatalf("text-leaning order %v", ids(got))
	}
	// Vector alone keeps the cosine scores; lexical alone is rank-scored.
	if got := Fuse(vector, nil, Weights{EmbeddingWeight: 1}, 2); !slices.Equal(ids(got), []string{"a", "b"}) || got[0].Score != 0.9 {
		t.Fatalf("vector alone: %+v", got)
	}
	if got := Fuse(nil, text, Weights{TextWeight: 1}, 10); !slices.Equal(ids(got), []string{"c", "d"}) || got[0].Score != 1 || math.Abs(got[1].Score-61.0/62) > 1e-12 {
		t.Fatalf("lexical alone: %+v", got)
	}
	// The inputs are not changed.
	if vector[0].Score != 0.9 || text[0].Score != 12 {
		t.Fatalf("Fuse changed its inputs: %+v %+v", vector, text)
	}
}

func TestWeightsValidate(t *testing.T) {
	for _, w := range []Weights{{}, {EmbeddingWeight: -1, TextWeight: 1}, {EmbeddingWeight: math.NaN(), TextWeight: 1}, {EmbeddingWeight: 1, TextWeight: math.Inf(1)}} {
		if w.validate() == nil {
			t.Errorf("%+v accepted", w)
		}
	}
	for _, w := range []Weights{DefaultWeights, {EmbeddingWeight: 1}, {TextWeight: 0.2}} {
		if err := w.validate(); err != nil {
			t.Errorf("%+v: %v", w, err)
		}
	}
}
