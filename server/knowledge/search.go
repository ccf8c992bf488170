package knowledge

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/store"
)

// Query is a search of one or more of the caller's vector stores.
type Query struct {
	StoreIDs []string
	// Text is what to look for (several texts are joined).
	Text string
	// Limit is the most results (1 to store.MaxVectorResults; 0: 10).
	Limit int
	// Filter keeps the chunks whose attributes match, applied before the
	// nearest are chosen.
	Filter *store.AttributeFilter
	// MinScore drops results scored below it.
	MinScore float64
	// Weights sets how the vector and the lexical ranking are fused; nil
	// is DefaultWeights.
	Weights *Weights
}

// Weights are the weights of reciprocal rank fusion (OpenAI's
// ranking_options.hybrid_search): a chunk's fused score is the sum over the
// two rankings of weight/(rrfK + rank). A zero TextWeight is vector search
// alone (scores are cosine similarities); a zero EmbeddingWeight is lexical
// (BM25) search alone.
type Weights struct {
	EmbeddingWeight float64
	TextWeight      float64
}

// DefaultWeights fuse the two rankings as equals.
var DefaultWeights = Weights{EmbeddingWeight: 1, TextWeight: 1}

// rrfK is reciprocal rank fusion's constant (60, as its authors found best).
const rrfK = 60

// Fuse merges a vector and a lexical ranking of chunks by weighted
// reciprocal rank fusion, best first (ties by chunk ID), at most limit.
// Scores are the fused score over its largest possible value (a chunk
// first in both rankings scores 1), so they stay in [0, 1].
func Fuse(vector, text []store.ChunkMatch, w Weights, limit int) []store.ChunkMatch {
	if w.TextWeight == 0 {
		return vector[:min(len(vector), limit)]
	}
	best := (w.EmbeddingWeight + w.TextWeight) / (rrfK + 1)
	at := map[string]int{}
	var out []store.ChunkMatch
	add := func(list []store.ChunkMatch, weight float64) {
		if weight == 0 {
			return
		}
		for rank, m := range list {
			i, ok := at[m.ID]
			if !ok {
				i = len(out)
				at[m.ID] = i
				m.Score = 0
				out = append(out, m)
			}
			out[i].Score += weight / (rrfK + float64(rank+1)) / best
		}
	}
	add(vector, w.EmbeddingWeight)
	add(text, w.TextWeight)
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Score > out[j].Score || out[i].Score == out[j].Score && out[i].ID < out[j].ID
	})
	return out[:min(len(out), limit)]
}

// candidates is how deep each ranking is read before fusion.
func candidates(limit int) int { return min(store.MaxVectorResults, max(2*limit, 20)) }

// Result is one chunk found, with its file's name.
type Result struct {
	store.ChunkMatch
	Filename string
}

// MaxStoresPerSearch bounds the stores one search covers.
const MaxStoresPerSearch = 10

// Search finds the chunks of the caller's stores that best answer the
// query, by hybrid retrieval: the nearest chunks by cosine similarity to
// the query embedded with the stores' model (unbilled: searches are free)
// and the best by BM25 over the chunks' words, read at once and fused by
// reciprocal rank (Fuse, q.Weights), attribute filters applied in the index
// before either ranking is cut. Every store must be the caller's (another's
// is not found).
func (s *Service) Search(ctx context.Context, q Query) ([]Result, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, apierr.Unauthenticated("no credentials")
	}
	switch {
	case len(q.StoreIDs) == 0:
		return nil, apierr.InvalidArgument("vector_store_ids", "must name at least one vector store")
	case len(q.StoreIDs) > MaxStoresPerSearch:
		return nil, apierr.InvalidArgument("vector_store_ids", fmt.Sprintf("%d vector stores; at most %d", len(q.StoreIDs), MaxStoresPerSearch))
	case q.Text == "":
		return nil, apierr.InvalidArgument("query", "must not be empty")
	case q.Limit < 0 || q.Limit > store.MaxVectorResults:
		return nil, apierr.InvalidArgument("max_num_results", fmt.Sprintf("must be 1 to %d", store.MaxVectorResults))
	case q.MinScore < 0 || q.MinScore > 1:
		return nil, apierr.InvalidArgument("ranking_options.score_threshold", "must be 0 to 1")
	}
	if q.Filter != nil {
		if err := q.Filter.Validate("filters"); err != nil {
			return nil, apierr.InvalidArgument("filters", trimSentinel(err))
		}
	}
	if q.Limit == 0 {
		q.Limit = 10
	}
	w := DefaultWeights
	if q.Weights != nil {
		w = *q.Weights
	}
	if err := w.validate(); err != nil {
		return nil, err
	}
	model := ""
	now := s.now()
	for i, id := range q.StoreIDs {
		v, err := s.Stores.GetVectorStore(ctx, p.UserID, id)
		if err != nil {
			return nil, storeErr(err, fmt.Sprintf("vector_store_ids[%d]", i))
		}
		if model != "" && v.EmbeddingModel != model {
			return nil, apierr.InvalidArgument("vector_store_ids", "the vector stores were embedded with different models; search them one at a time")
		}
		model = v.EmbeddingModel
		_ = s.Stores.TouchVectorStore(ctx, p.UserID, id, now)
	}
	matches, err := s.rank(ctx, q, model, w)
	if err != nil {
		return nil, err
	}
	if q.MinScore > 0 {
		matches = slices.DeleteFunc(matches, func(m store.ChunkMatch) bool { return m.Score < q.MinScore })
	}
	names := map[string]string{}
	results := make([]Result, 0, len(matches))
	for _, m := range matches {
		name, ok := names[m.FileID]
		if !ok {
			if a, err := s.Files.Get(ctx, p.UserID, m.FileID); err == nil {
				name = a.Filename
			}
			names[m.FileID] = name
		}
		results = append(results, Result{ChunkMatch: m, Filename: name})
	}
	return results, nil
}

func (w Weights) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"embedding_weight", w.EmbeddingWeight}, {"text_weight", w.TextWeight}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return apierr.InvalidArgument("ranking_options.hybrid_search."+f.name, "must be a finite number, 0 or more")
		}
	}
	if w.EmbeddingWeight == 0 && w.TextWeight == 0 {
		return apierr.InvalidArgument("ranking_options.hybrid_search", "embedding_weight and text_weight must not both be 0")
	}
	return nil
}

// rank runs the vector and the lexical search the weights ask for, at
// once, and fuses them.
func (s *Service) rank(ctx context.Context, q Query, model string, w Weights) ([]store.ChunkMatch, error) {
	depth := candidates(q.Limit)
	var vector, text []store.ChunkMatch
	g, gctx := errgroup.WithContext(ctx)
	if w.EmbeddingWeight > 0 {
		g.Go(func() error {
			out, err := s.Embed.Embed(gctx, chat.EmbedRequest{Model: model, Inputs: []string{q.Text}, Unbilled: true,
				Rename: func(string) string { return "query" }})
			if err != nil {
				return err
			}
			vq := store.VectorQuery{StoreIDs: q.StoreIDs, Vector: out.Vectors[0], Limit: depth, Filter: q.Filter}
			if w.TextWeight == 0 {
				vq.Limit = q.Limit
			}
			vector, err = s.Index.SearchChunks(gctx, vq)
			return err
		})
	}
	if w.TextWeight > 0 {
		g.Go(func() (err error) {
			text, err = s.Index.SearchChunksText(gctx, store.TextQuery{StoreIDs: q.StoreIDs, Text: q.Text, Limit: depth, Filter: q.Filter})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return Fuse(vector, text, w, q.Limit), nil
}

// Retrieve is Search for the file search of a generation (chat.Retriever).
func (s *Service) Retrieve(ctx context.Context, q chat.Retrieval) ([]chat.Passage, error) {
	found, err := s.Search(ctx, Query{StoreIDs: q.StoreIDs, Text: q.Text, Limit: q.Limit, Filter: q.Filter, MinScore: q.MinScore})
	if err != nil {
		return nil, err
	}
	return Passages(found), nil
}

// Passages are results as a generation's file search gives them to the
// model.
func Passages(found []Result) []chat.Passage {
	out := make([]chat.Passage, len(found))
	for i, r := range found {
		out[i] = chat.Passage{FileID: r.FileID, Filename: r.Filename, StoreID: r.StoreID, Text: r.Text, Score: r.Score, Attributes: r.Attributes, Ordinal: r.Ordinal}
	}
	return out
}
