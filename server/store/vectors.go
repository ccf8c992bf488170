package store

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
)

// Chunk is one indexed passage of a file in a vector store: its text, its
// embedding and the attributes a search can filter on. The index keys chunks
// by ID; a file's chunks are told apart by Ordinal (their order in the file).
type Chunk struct {
	// ID is the caller-made chunk ID. Putting a chunk whose ID is stored
	// replaces it, so an ingestion that is retried writes no duplicate.
	ID      string
	StoreID string
	FileID  string
	// Ordinal is the chunk's position in its file, from 0.
	Ordinal int
	Text    string
	// Vector is the chunk's embedding. Stores compare vectors by cosine
	// similarity; every vector of one vector store has the same length.
	Vector []float32
	// Attributes are the file's attributes (see ValidateAttributes).
	Attributes map[string]any
}

// ChunkMatch is a chunk found by a search with its cosine similarity to the
// query, in [-1, 1]; Vector is not filled.
type ChunkMatch struct {
	Chunk
	Score float64
}

// VectorQuery is a nearest-neighbour search over one or more vector stores.
type VectorQuery struct {
	StoreIDs []string
	Vector   []float32
	// Limit is the most matches returned (1 to MaxVectorResults).
	Limit int
	// Filter, when set, keeps only the chunks whose attributes match it. It
	// is applied before the nearest are chosen, never to the top Limit after.
	Filter *AttributeFilter
	// MinScore drops matches whose score is below it; the zero value keeps
	// every match, negative scores included.
	MinScore float64
}

// MaxVectorResults bounds VectorQuery.Limit.
const MaxVectorResults = 50

// Attribute limits, as OpenAI's vector store files have them.
const (
	MaxAttributes       = 16
	MaxAttributeKey     = 64
	MaxAttributeString  = 512
	maxFilterDepth      = 8
	maxFilterComparison = 64
)

// VectorIndex keeps the chunks of vector stores and finds the ones nearest a
// query vector. The caller owns the vector stores (and checks who may read
// them); the index knows only their IDs.
type VectorIndex interface {
	// PutChunks stores chunks, replacing any stored under the same ID. A
	// chunk whose vector's length differs from the store's other chunks is
	// refused with ErrInvalidArgument, and then none of chunks is stored.
	PutChunks(ctx context.Context, chunks []Chunk) error
	// DeleteFileChunks removes every chunk of fileID in storeID and says how
	// many there were.
	DeleteFileChunks(ctx context.Context, storeID, fileID string) (int, error)
	// SetFileAttributes replaces the attributes of every chunk of fileID in
	// storeID (a file's attributes changed) and says how many there are.
	SetFileAttributes(ctx context.Context, storeID, fileID string, attrs map[string]any) (int, error)
	// DeleteStoreChunks removes every chunk of storeID.
	DeleteStoreChunks(ctx context.Context, storeID string) (int, error)
	// CountChunks counts the chunks of storeID (of fileID only, when set).
	CountChunks(ctx context.Context, storeID, fileID string) (int, error)
	// SearchChunks returns the matches of q, highest score first (ties by
	// chunk ID), at most q.Limit.
	SearchChunks(ctx context.Context, q VectorQuery) ([]ChunkMatch, error)
	// SearchChunksText is the lexical search: the chunks holding any of
	// q's terms (QueryTerms), ranked by BM25 over each chunk's text, best
	// first (ties by chunk ID), at most q.Limit. Score is the BM25 score
	// (higher is better; comparable only within one search). Vector is
	// not filled.
	SearchChunksText(ctx context.Context, q TextQuery) ([]ChunkMatch, error)
}

// TextQuery is a lexical search over one or more vector stores.
type TextQuery struct {
	StoreIDs []string
	// Text is what to look for; its terms are QueryTerms(Text).
	Text string
	// Limit is the most matches returned (1 to MaxVectorResults).
	Limit int
	// Filter, as in VectorQuery, is applied before the best are chosen.
	Filter *AttributeFilter
}

// MaxQueryTerms bounds the terms of one lexical search.
const MaxQueryTerms = 32

// QueryTerms splits text into the terms a lexical search looks for: runs of
// letters and digits, lower-cased, each once, in order, at most
// MaxQueryTerms. Indexes tokenise chunk text the same way.
func QueryTerms(text string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, w := range words(text) {
		if !seen[w] {
			seen[w] = true
			terms = append(terms, w)
			if len(terms) == MaxQueryTerms {
				break
			}
		}
	}
	return terms
}

// TermCounts is how often each term (as QueryTerms splits them) occurs in
// text, and how many terms text has in all: what a lexical index keeps of a
// chunk.
func TermCounts(text string) (map[string]int, int) {
	ws := words(text)
	tf := make(map[string]int, len(ws))
	for _, w := range ws {
		tf[w]++
	}
	return tf, len(ws)
}

// BM25's parameters, as Lucene and SQLite's FTS5 set them.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// BM25 scores each of a set of texts for terms, the way the lexical indexes
// rank chunks: tf[i] is text i's TermCounts and length[i] its term count;
// a term's weight is its inverse document frequency among the texts.
func BM25(terms []string, tf []map[string]int, length []int) []float64 {
	scores := make([]float64, len(tf))
	if len(tf) == 0 {
		return scores
	}
	total := 0
	for _, n := range length {
		total += n
	}
	n := float64(len(tf))
	avg := max(float64(total)/n, 1)
	for _, term := range terms {
		df := 0
		for _, counts := range tf {
			if counts[term] > 0 {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for i, counts := range tf {
			if f := float64(counts[term]); f > 0 {
				scores[i] += idf * f * (BM25K1 + 1) / (f + BM25K1*(1-BM25B+BM25B*float64(length[i])/avg))
			}
		}
	}
	return scores
}

func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// ValidateTextQuery checks q before a store runs it.
func ValidateTextQuery(q TextQuery) error {
	if len(q.StoreIDs) == 0 {
		return fmt.Errorf("%w: vector_store_ids: at least one", ErrInvalidArgument)
	}
	if q.Limit < 1 || q.Limit > MaxVectorResults {
		return fmt.Errorf("%w: max_num_results: %d is outside 1 to %d", ErrInvalidArgument, q.Limit, MaxVectorResults)
	}
	if q.Filter != nil {
		return q.Filter.Validate("filters")
	}
	return nil
}

// AttributeFilter is a search filter on chunk attributes: a comparison (Op
// eq, ne, gt, gte, lt or lte of Key against Value) or a compound (Op and or
// or over Filters), as the OpenAI vector store search takes them.
type AttributeFilter struct {
	Op      string
	Key     string
	Value   any
	Filters []AttributeFilter
}

// ValidateAttributes checks attributes as a vector store file may carry them:
// at most MaxAttributes keys of at most MaxAttributeKey bytes, each value a
// string (at most MaxAttributeString bytes), a finite number or a bool.
func ValidateAttributes(attrs map[string]any) error {
	if len(attrs) > MaxAttributes {
		return fmt.Errorf("%w: attributes: %d keys, at most %d", ErrInvalidArgument, len(attrs), MaxAttributes)
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" || len(k) > MaxAttributeKey {
			return fmt.Errorf("%w: attributes: key %q must be 1 to %d bytes", ErrInvalidArgument, k, MaxAttributeKey)
		}
		if err := validateAttrValue(attrs[k]); err != nil {
			return fmt.Errorf("%w: attributes.%s: %v", ErrInvalidArgument, k, err)
		}
	}
	return nil
}

func validateAttrValue(v any) error {
	switch v := v.(type) {
	case string:
		if len(v) > MaxAttributeString {
			return fmt.Errorf("a string of %d bytes, at most %d", len(v), MaxAttributeString)
		}
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("a number must be finite")
		}
	case bool:
	default:
		return fmt.Errorf("must be a string, a number or a boolean, not %T", v)
	}
	return nil
}

// Validate checks the filter's shape: known operators, a key and a string,
// number or bool value on comparisons (numbers only for gt, gte, lt, lte),
// at least one filter in a compound, nesting at most 8 deep and at most 64
// comparisons in all. path names the filter in errors (e.g. "filters").
func (f *AttributeFilter) Validate(path string) error {
	n := 0
	return f.validate(path, 1, &n)
}

func (f *AttributeFilter) validate(path string, depth int, n *int) error {
	if depth > maxFilterDepth {
		return fmt.Errorf("%w: %s: filters nest more than %d deep", ErrInvalidArgument, path, maxFilterDepth)
	}
	switch f.Op {
	case "and", "or":
		if len(f.Filters) == 0 {
			return fmt.Errorf("%w: %s.filters: a compound filter needs at least one filter", ErrInvalidArgument, path)
		}
		for i := range f.Filters {
			if err := f.Filters[i].validate(fmt.Sprintf("%s.filters[%d]", path, i), depth+1, n); err != nil {
				return err
			}
		}
		return nil
	case "eq", "ne", "gt", "gte", "lt", "lte":
		*n++
		if *n > maxFilterComparison {
			return fmt.Errorf("%w: %s: more than %d comparisons", ErrInvalidArgument, path, maxFilterComparison)
		}
		if f.Key == "" {
			return fmt.Errorf("%w: %s.key: required", ErrInvalidArgument, path)
		}
		if err := validateAttrValue(f.Value); err != nil {
			return fmt.Errorf("%w: %s.value: %v", ErrInvalidArgument, path, err)
		}
		if _, num := f.Value.(float64); !num && f.Op != "eq" && f.Op != "ne" {
			return fmt.Errorf("%w: %s.value: %s compares numbers", ErrInvalidArgument, path, f.Op)
		}
		return nil
	default:
		return fmt.Errorf("%w: %s.type: %q is not one of eq, ne, gt, gte, lt, lte, and, or", ErrInvalidArgument, path, f.Op)
	}
}

// Match reports whether attrs pass the filter (a nil filter passes all). A
// comparison with a key the attributes lack, or of another type, is false
// (ne included: a chunk without the attribute is not "not equal" to it).
func (f *AttributeFilter) Match(attrs map[string]any) bool {
	if f == nil {
		return true
	}
	switch f.Op {
	case "and":
		for i := range f.Filters {
			if !f.Filters[i].Match(attrs) {
				return false
			}
		}
		return true
	case "or":
		for i := range f.Filters {
			if f.Filters[i].Match(attrs) {
				return true
			}
		}
		return false
	}
	v, ok := attrs[f.Key]
	if !ok {
		return false
	}
	switch want := f.Value.(type) {
	case float64:
		got, ok := v.(float64)
		if !ok {
			return false
		}
		switch f.Op {
		case "eq":
			return got == want
		case "ne":
			return got != want
		case "gt":
			return got > want
		case "gte":
			return got >= want
		case "lt":
			return got < want
		case "lte":
			return got <= want
		}
	case string, bool:
		if fmt.Sprintf("%T", v) != fmt.Sprintf("%T", want) {
			return false
		}
		switch f.Op {
		case "eq":
			return v == want
		case "ne":
			return v != want
		}
	}
	return false
}

// ValidateVectorQuery checks q before a store runs it.
func ValidateVectorQuery(q VectorQuery) error {
	if len(q.StoreIDs) == 0 {
		return fmt.Errorf("%w: vector_store_ids: at least one", ErrInvalidArgument)
	}
	if len(q.Vector) == 0 {
		return fmt.Errorf("%w: query vector: empty", ErrInvalidArgument)
	}
	if q.Limit < 1 || q.Limit > MaxVectorResults {
		return fmt.Errorf("%w: max_num_results: %d is outside 1 to %d", ErrInvalidArgument, q.Limit, MaxVectorResults)
	}
	if q.Filter != nil {
		return q.Filter.Validate("filters")
	}
	return nil
}

// Cosine is the cosine similarity of a and b (0 when either is all zeros).
// They must be of one length.
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
