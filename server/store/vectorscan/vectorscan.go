// Package vectorscan is the exact, in-memory nearest-neighbour search the
// relational vector indexes share (SQLite's and PostgreSQL's): each
// searched store's unit vectors and attributes are read once into a Set,
// kept in a Cache bounded in floats, and scanned in Go, split over the
// CPUs, the filter applied to every chunk before the top k are chosen.
// The engines keep the chunks and say when a cached Set is still current.
package vectorscan

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/parleyhq/parley/server/store"
)

// DefaultMaxFloats bounds a Cache's vectors when MaxFloats is zero: 64 Mi
// float32s (256 MiB) over all stores.
const DefaultMaxFloats = 64 << 20

// Set is one store's vectors as a search scans them: row i is chunk IDs[i],
// its unit vector Vecs[i*Dims:(i+1)*Dims] and its attributes Attrs[i].
type Set struct {
	Dims  int
	IDs   []string
	Vecs  []float32 // len(IDs)×Dims, each row of unit length
	Attrs []map[string]any
}

// Len is the number of chunks in s.
func (s *Set) Len() int { return len(s.IDs) }

// Add appends a chunk whose vector is blob (as EncodeUnit makes it). Every
// chunk of a Set has one length: the first one added sets Dims.
func (s *Set) Add(id string, attrs map[string]any, blob []byte) error {
	if len(blob) == 0 || len(blob)%4 != 0 {
		return fmt.Errorf("chunk %s: a vector of %d bytes", id, len(blob))
	}
	dims := len(blob) / 4
	if s.Dims == 0 {
		s.Dims = dims
	}
	if dims != s.Dims {
		return fmt.Errorf("chunk %s: a vector of %d bytes, the store's have %d dimensions", id, len(blob), s.Dims)
	}
	s.IDs = append(s.IDs, id)
	s.Attrs = append(s.Attrs, attrs)
	for i := 0; i < dims; i++ {
		s.Vecs = append(s.Vecs, math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:])))
	}
	return nil
}

// Search scores every chunk of s that passes q's filter against query (a
// unit vector, so the dot product is the cosine) and returns the best
// q.Limit at or above q.MinScore, unordered, split over the CPUs when the
// set is large. Matches carry ID and Attributes only.
func (s *Set) Search(ctx context.Context, query []float32, q store.VectorQuery) []store.ChunkMatch {
	n := len(s.IDs)
	parts := min(runtime.GOMAXPROCS(0), max(1, n/16384))
	tops := make([]matchHeap, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Go(func() {
			top := &tops[p]
			for i := lo; i < hi; i++ {
				if i&4095 == 0 && ctx.Err() != nil {
					return
				}
				if q.Filter != nil && !q.Filter.Match(s.Attrs[i]) {
					continue
				}
				row := s.Vecs[i*s.Dims : (i+1)*s.Dims]
				var dot float32
				for j, x := range query {
					dot += x * row[j]
				}
				score := float64(dot)
				if q.MinScore != 0 && score < q.MinScore {
					continue
				}
				if top.Len() == q.Limit && !better(score, s.IDs[i], (*top)[0]) {
					continue
				}
				pushTop(top, store.ChunkMatch{Chunk: store.Chunk{ID: s.IDs[i], Attributes: s.Attrs[i]}, Score: score}, q.Limit)
			}
		})
	}
	wg.Wait()
	var out []store.ChunkMatch
	for _, t := range tops {
		out = append(out, t...)
	}
	return out
}

// Search runs q (already validated) over the Sets that load returns for
// each of q's stores (each once), and returns the best q.Limit, highest
// score first (ties by chunk ID). Matches carry ID, StoreID and
// Attributes; the caller fills the rest. A store whose Set has other
// dimensions than q's vector is an ErrInvalidArgument.
func Search(ctx context.Context, q store.VectorQuery, load func(ctx context.Context, storeID string) (*Set, error)) ([]store.ChunkMatch, error) {
	query := Unit(q.Vector)
	top := &matchHeap{}
	for _, id := range Dedupe(q.StoreIDs) {
		s, err := load(ctx, id)
		if err != nil {
			return nil, err
		}
		if s == nil || s.Len() == 0 {
			continue
		}
		if s.Dims != len(query) {
			return nil, fmt.Errorf("%w: query vector: %d dimensions, the chunks of %s have %d", store.ErrInvalidArgument, len(query), id, s.Dims)
		}
		for _, m := range s.Search(ctx, query, q) {
			m.StoreID = id
			pushTop(top, m, q.Limit)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]store.ChunkMatch, top.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(top).(store.ChunkMatch)
	}
	return out, nil
}

// Cache holds searched stores' Sets, at most MaxFloats float32s in all
// (DefaultMaxFloats when zero); a Set that does not fit is not cached, and
// is read again for each search. It is safe for concurrent use.
//
// Each Set is cached under a version, the engine's word for the state it
// was read at (0 where the engine has none): Get returns it only for that
// version. Apart from versions, Invalidate drops a store's Set and makes
// every read of it begun before (Begin) unable to install what it read, so
// a search never keeps vectors a later write in this process replaced.
type Cache struct {
	MaxFloats int

	mu     sync.Mutex
	sets   map[string]entry
	gen    map[string]uint64 // bumped by Invalidate
	floats int
}

type entry struct {
	set     *Set
	version uint64
}

func (c *Cache) max() int {
	if c.MaxFloats > 0 {
		return c.MaxFloats
	}
	return DefaultMaxFloats
}

// Get returns storeID's Set if it is cached at version, else nil.
func (c *Cache) Get(storeID string, version uint64) *Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.sets[storeID]; ok && e.version == version {
		return e.set
	}
	return nil
}

// Begin starts a read of storeID's Set, for Put: the ticket it returns is
// spent by an Invalidate of the store.
func (c *Cache) Begin(storeID string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen[storeID]
}

// Put caches s, read at version under ticket (Begin), and returns the Set
// to search: s, or the one cached at the same version by a read that
// finished first. s is not cached if storeID was invalidated since the
// ticket, if a Set of a later version is cached, or if it does not fit.
func (c *Cache) Put(storeID string, ticket, version uint64, s *Set) *Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[storeID] != ticket {
		return s
	}
	e, had := c.sets[storeID]
	if had {
		if e.version == version {
			return e.set
		}
		if e.version > version {
			return s
		}
	}
	free := c.floats
	if had {
		free -= len(e.set.Vecs)
	}
	if free+len(s.Vecs) > c.max() {
		return s
	}
	if c.sets == nil {
		c.sets = map[string]entry{}
	}
	c.sets[storeID] = entry{s, version}
	c.floats = free + len(s.Vecs)
	return s
}

// Invalidate drops the Sets of storeIDs and spends the tickets of their
// reads in progress.
func (c *Cache) Invalidate(storeIDs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == nil {
		c.gen = map[string]uint64{}
	}
	for _, id := range storeIDs {
		if e, ok := c.sets[id]; ok {
			c.floats -= len(e.set.Vecs)
			delete(c.sets, id)
		}
		c.gen[id]++
	}
}

// Floats is the number of float32s cached (tests, metrics).
func (c *Cache) Floats() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.floats
}

// EncodeUnit is v scaled to unit length as little-endian float32s (all
// zeros stay zeros).
func EncodeUnit(v []float32) []byte {
	u := Unit(v)
	b := make([]byte, 4*len(u))
	for i, x := range u {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Unit is v scaled to unit length (all zeros stay zeros).
func Unit(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	u := make([]float32, len(v))
	if s == 0 {
		return u
	}
	inv := 1 / math.Sqrt(s)
	for i, x := range v {
		u[i] = float32(float64(x) * inv)
	}
	return u
}

// Dedupe is ids without repeats, in order.
func Dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// better orders matches: higher score first, then the lower chunk ID.
func better(score float64, id string, than store.ChunkMatch) bool {
	return score > than.Score || score == than.Score && id < than.ID
}

// matchHeap is a min-heap of the best matches so far: its root is the worst.
type matchHeap []store.ChunkMatch

func (h matchHeap) Len() int           { return len(h) }
func (h matchHeap) Less(i, j int) bool { return better(h[j].Score, h[j].ID, h[i]) }
func (h matchHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *matchHeap) Push(x any)        { *h = append(*h, x.(store.ChunkMatch)) }
func (h *matchHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// pushTop adds m to the k best in h.
func pushTop(h *matchHeap, m store.ChunkMatch, k int) {
	if h.Len() < k {
		heap.Push(h, m)
		return
	}
	if better(m.Score, m.ID, (*h)[0]) {
		(*h)[0] = m
		heap.Fix(h, 0)
	}
}
