package knowledge

import (
	"context"
	"fmt"

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
}

// Result is one chunk found, with its file's name.
type Result struct {
	store.ChunkMatch
	Filename string
}

// MaxStoresPerSearch bounds the stores one search covers.
const MaxStoresPerSearch = 10

// Search finds the chunks of the caller's stores nearest the query: the
// query embedded with the stores' model (unbilled: searches are free), the
// nearest chunks by cosine similarity, attribute filters applied in the
// index. Every store must be the caller's (another's is not found).
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
	out, err := s.Embed.Embed(ctx, chat.EmbedRequest{Model: model, Inputs: []string{q.Text}, Unbilled: true,
		Rename: func(string) string { return "query" }})
	if err != nil {
		return nil, err
	}
	matches, err := s.Index.SearchChunks(ctx, store.VectorQuery{StoreIDs: q.StoreIDs, Vector: out.Vectors[0], Limit: q.Limit,
		Filter: q.Filter, MinScore: q.MinScore})
	if err != nil {
		return nil, err
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
