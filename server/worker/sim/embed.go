package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/parleyhq/parley/server/llm"
)

// EmbeddingDimensions is the length of the simulated embedding models'
// vectors.
const EmbeddingDimensions = 512

// Embed returns deterministic unit vectors made by feature hashing: every
// lower-cased word (and every pair of adjacent words) adds a signed weight to
// a few dimensions chosen by its hash. Texts that share words share
// components, so their cosine similarity is higher than that of texts that
// share none (near 0) — enough for a retrieval demo to behave sensibly, and
// nothing like a real model's understanding. Dimensions hashes into that
// many components instead (so short vectors keep the property). The time
// taken is the inputs' prefill at the simulated rate.
func (e *Engine) Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResult, error) {
	if !slices.Contains(e.cfg.EmbedModels, req.Model) {
		return llm.EmbedResult{}, fmt.Errorf("%w: %q does not embed here", llm.ErrUnknownModel, req.Model)
	}
	if len(req.Inputs) == 0 {
		return llm.EmbedResult{}, fmt.Errorf("%w: inputs: none given", llm.ErrInvalidRequest)
	}
	dims := req.Dimensions
	if dims == 0 {
		dims = EmbeddingDimensions
	}
	if dims < 0 || dims > EmbeddingDimensions {
		return llm.EmbedResult{}, fmt.Errorf("%w: dimensions: must be 1 to %d", llm.ErrInvalidRequest, EmbeddingDimensions)
	}
	out := llm.EmbedResult{Vectors: make([][]float32, len(req.Inputs))}
	for i, text := range req.Inputs {
		out.Vectors[i] = embedText(text, dims)
		out.Usage.PromptTokens += e.tok.Count(text)
	}
	if d := time.Duration(float64(out.Usage.PromptTokens) / e.cfg.PrefillRate * e.cfg.TimeScale * float64(time.Second)); d > 0 {
		select {
		case <-e.cfg.Clock.After(d):
		case <-ctx.Done():
			return llm.EmbedResult{}, context.Cause(ctx)
		}
	}
	return out, nil
}

// embedText hashes text's words and word pairs into a unit vector of dims
// components.
func embedText(text string, dims int) []float32 {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	v := make([]float64, dims)
	add := func(feature string, weight float64) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(feature))
		x := h.Sum64()
		for k := range 4 { // each feature touches 4 dimensions, so collisions blur rather than break
			i := int(x % uint64(dims))
			sign := 1.0
			if x&(1<<40) != 0 {
				sign = -1
			}
			v[i] += sign * weight
			x = x*0x9E3779B97F4A7C15 + uint64(k) + 1
		}
	}
	for i, w := range words {
		add(w, 1)
		if i > 0 {
			add(words[i-1]+" "+w, 0.5)
		}
	}
	if len(words) == 0 {
		add(text, 1) // punctuation or spaces only: still a stable vector
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dims)
	if norm == 0 {
		out[0] = 1
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}
