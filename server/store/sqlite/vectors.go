package sqlite

import (
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/parleyhq/parley/server/store"
)

// Vectors returns the vector index kept in db: chunks in the vector_chunks
// table, searched exactly in Go over each store's vectors, held in memory
// once read (the embedded default's "NumPy stage": a scan of unit vectors,
// split over the CPUs).
func (db *DB) Vectors() store.VectorIndex { return vectors{db} }

type vectors struct{ db *DB }

// VectorCacheFloats bounds the vectors held in memory for searches, in
// float32s, over all stores (256 MiB). A store that does not fit is read
// from the database for each search.
const VectorCacheFloats = 64 << 20

// vectorCache holds each searched store's unit vectors and attributes. A
// write to a store bumps its generation; a load installs its result only
// if the generation it read under is still current, so a search never keeps
// vectors a later write replaced.
type vectorCache struct {
	mu     sync.Mutex
	stores map[string]*storeVectors
	gen    map[string]uint64
	floats int
}

type storeVectors struct {
	dims  int
	ids   []string
	vecs  []float32 // len(ids)×dims, each row of unit length
	attrs []map[string]any
}

func (c *vectorCache) invalidate(storeIDs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == nil {
		c.gen = map[string]uint64{}
	}
	for _, id := range storeIDs {
		if sv := c.stores[id]; sv != nil {
			c.floats -= len(sv.vecs)
			delete(c.stores, id)
		}
		c.gen[id]++
	}
}

func (v vectors) PutChunks(ctx context.Context, chunks []store.Chunk) error {
	if len(chunks) == 0 {
		return nil
	}
	dims := map[string]int{}
	for i, c := range chunks {
		if c.ID == "" || c.StoreID == "" || c.FileID == "" {
			return fmt.Errorf("%w: chunks[%d]: id, store and file are required", store.ErrInvalidArgument, i)
		}
		if len(c.Vector) == 0 {
			return fmt.Errorf("%w: chunks[%d].vector: empty", store.ErrInvalidArgument, i)
		}
		if d, ok := dims[c.StoreID]; ok && d != len(c.Vector) {
			return fmt.Errorf("%w: chunks[%d].vector: %d dimensions, the other chunks of the store have %d", store.ErrInvalidArgument, i, len(c.Vector), d)
		}
		dims[c.StoreID] = len(c.Vector)
		if err := store.ValidateAttributes(c.Attributes); err != nil {
			return fmt.Errorf("chunks[%d]: %w", i, err)
		}
	}
	stores := make([]string, 0, len(dims))
	err := v.db.write(ctx, func(tx *txn) error {
		for id, d := range dims {
			stores = append(stores, id)
			var have int
			err := tx.QueryRowContext(ctx, `SELECT dims FROM vector_chunks WHERE store_id = ? LIMIT 1`, id).Scan(&have)
			if err == nil && have != d {
				return fmt.Errorf("%w: vector: %d dimensions, the store's chunks have %d", store.ErrInvalidArgument, d, have)
			}
		}
		for _, c := range chunks {
			attrs := []byte("{}")
			if len(c.Attributes) > 0 {
				var err error
				if attrs, err = json.Marshal(c.Attributes); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO vector_chunks (id, store_id, file_id, ordinal, text, attributes, dims, vector)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET store_id = excluded.store_id, file_id = excluded.file_id, ordinal = excluded.ordinal,
					text = excluded.text, attributes = excluded.attributes, dims = excluded.dims, vector = excluded.vector`,
				c.ID, c.StoreID, c.FileID, c.Ordinal, c.Text, string(attrs), len(c.Vector), encodeUnit(c.Vector)); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
	// Invalidated whether or not the write committed: a failed write's
	// cache is still right, but reloading it costs only a search's time.
	v.db.vec.invalidate(stores...)
	if err != nil {
		return fmt.Errorf("sqlite: put chunks: %w", err)
	}
	return nil
}

func (v vectors) DeleteFileChunks(ctx context.Context, storeID, fileID string) (int, error) {
	return v.delete(ctx, storeID, `DELETE FROM vector_chunks WHERE store_id = ? AND file_id = ?`, storeID, fileID)
}

func (v vectors) SetFileAttributes(ctx context.Context, storeID, fileID string, attrs map[string]any) (int, error) {
	data := []byte("{}")
	if len(attrs) > 0 {
		var err error
		if data, err = json.Marshal(attrs); err != nil {
			return 0, err
		}
	}
	return v.delete(ctx, storeID, `UPDATE vector_chunks SET attributes = ? WHERE store_id = ? AND file_id = ?`, string(data), storeID, fileID)
}

func (v vectors) DeleteStoreChunks(ctx context.Context, storeID string) (int, error) {
	return v.delete(ctx, storeID, `DELETE FROM vector_chunks WHERE store_id = ?`, storeID)
}

// delete runs a statement that deletes or changes chunks of storeID (whose
// cached vectors it drops) and says how many.
func (v vectors) delete(ctx context.Context, storeID, query string, args ...any) (int, error) {
	res, err := v.db.exec(ctx, query, args...)
	v.db.vec.invalidate(storeID)
	if err != nil {
		return 0, fmt.Errorf("sqlite: change chunks: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (v vectors) CountChunks(ctx context.Context, storeID, fileID string) (int, error) {
	q, args := `SELECT count(*) FROM vector_chunks WHERE store_id = ?`, []any{storeID}
	if fileID != "" {
		q, args = q+` AND file_id = ?`, append(args, fileID)
	}
	var n int
	if err := v.db.r.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count chunks: %w", err)
	}
	return n, nil
}

func (v vectors) SearchChunks(ctx context.Context, q store.VectorQuery) ([]store.ChunkMatch, error) {
	if err := store.ValidateVectorQuery(q); err != nil {
		return nil, err
	}
	query := unit(q.Vector)
	top := &matchHeap{}
	for _, id := range dedupe(q.StoreIDs) {
		sv, err := v.load(ctx, id)
		if err != nil {
			return nil, err
		}
		if len(sv.ids) == 0 {
			continue
		}
		if sv.dims != len(query) {
			return nil, fmt.Errorf("%w: query vector: %d dimensions, the chunks of %s have %d", store.ErrInvalidArgument, len(query), id, sv.dims)
		}
		for _, m := range sv.search(ctx, query, q) {
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
	return out, v.fill(ctx, out)
}

// load returns storeID's vectors, from the cache or read and cached.
func (v vectors) load(ctx context.Context, storeID string) (*storeVectors, error) {
	c := &v.db.vec
	c.mu.Lock()
	if sv := c.stores[storeID]; sv != nil {
		c.mu.Unlock()
		return sv, nil
	}
	gen := c.gen[storeID]
	c.mu.Unlock()

	rows, err := v.db.r.QueryContext(ctx, `SELECT id, attributes, dims, vector FROM vector_chunks WHERE store_id = ? ORDER BY id`, storeID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read chunks: %w", err)
	}
	defer rows.Close()
	sv := &storeVectors{}
	for rows.Next() {
		var id, attrs string
		var dims int
		var blob []byte
		if err := rows.Scan(&id, &attrs, &dims, &blob); err != nil {
			return nil, fmt.Errorf("sqlite: read chunks: %w", err)
		}
		if sv.dims == 0 {
			sv.dims = dims
		}
		if dims != sv.dims || len(blob) != 4*dims {
			return nil, fmt.Errorf("sqlite: chunk %s: a vector of %d bytes, the store's have %d dimensions", id, len(blob), sv.dims)
		}
		var a map[string]any
		if attrs != "{}" {
			if err := json.Unmarshal([]byte(attrs), &a); err != nil {
				return nil, fmt.Errorf("sqlite: chunk %s attributes: %w", id, err)
			}
		}
		sv.ids = append(sv.ids, id)
		sv.attrs = append(sv.attrs, a)
		for i := 0; i < dims; i++ {
			sv.vecs = append(sv.vecs, math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:])))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read chunks: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[storeID] == gen && c.stores[storeID] == nil && c.floats+len(sv.vecs) <= VectorCacheFloats {
		if c.stores == nil {
			c.stores = map[string]*storeVectors{}
		}
		c.stores[storeID] = sv
		c.floats += len(sv.vecs)
	}
	return sv, nil
}

// search scores every chunk that passes q's filter against query (a unit
// vector, so the dot product is the cosine) and returns the best q.Limit
// at or above q.MinScore, split over the CPUs when the store is large.
func (sv *storeVectors) search(ctx context.Context, query []float32, q store.VectorQuery) []store.ChunkMatch {
	n := len(sv.ids)
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
				if q.Filter != nil && !q.Filter.Match(sv.attrs[i]) {
					continue
				}
				row := sv.vecs[i*sv.dims : (i+1)*sv.dims]
				var dot float32
				for j, x := range query {
					dot += x * row[j]
				}
				score := float64(dot)
				if q.MinScore != 0 && score < q.MinScore {
					continue
				}
				if top.Len() == q.Limit && !better(score, sv.ids[i], (*top)[0]) {
					continue
				}
				pushTop(top, store.ChunkMatch{Chunk: store.Chunk{ID: sv.ids[i], Attributes: sv.attrs[i]}, Score: score}, q.Limit)
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

// fill reads the text, store, file and ordinal of the matches.
func (v vectors) fill(ctx context.Context, ms []store.ChunkMatch) error {
	if len(ms) == 0 {
		return nil
	}
	at := make(map[string]int, len(ms))
	args := make([]any, len(ms))
	for i, m := range ms {
		at[m.ID] = i
		args[i] = m.ID
	}
	rows, err := v.db.r.QueryContext(ctx, `SELECT id, store_id, file_id, ordinal, text FROM vector_chunks WHERE id IN (?`+strings.Repeat(", ?", len(ms)-1)+`)`, args...)
	if err != nil {
		return fmt.Errorf("sqlite: read chunks: %w", err)
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var id string
		var c store.Chunk
		if err := rows.Scan(&id, &c.StoreID, &c.FileID, &c.Ordinal, &c.Text); err != nil {
			return fmt.Errorf("sqlite: read chunks: %w", err)
		}
		m := &ms[at[id]]
		m.StoreID, m.FileID, m.Ordinal, m.Text = c.StoreID, c.FileID, c.Ordinal, c.Text
		found++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: read chunks: %w", err)
	}
	if found != len(ms) {
		// A chunk deleted between the scan and this read.
		return fmt.Errorf("sqlite: search: %w", errors.Join(store.ErrConflict, errors.New("chunks changed during the search; retry")))
	}
	return nil
}

// encodeUnit is v scaled to unit length as little-endian float32s (all
// zeros stay zeros).
func encodeUnit(v []float32) []byte {
	u := unit(v)
	b := make([]byte, 4*len(u))
	for i, x := range u {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func unit(v []float32) []float32 {
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

func dedupe(ids []string) []string {
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

// SearchChunksText ranks the chunks of q's stores that hold any of its
// terms by FTS5's BM25 (the store column weighted 0), the filter applied to
// each match in rank order until q.Limit pass.
func (v vectors) SearchChunksText(ctx context.Context, q store.TextQuery) ([]store.ChunkMatch, error) {
	if err := store.ValidateTextQuery(q); err != nil {
		return nil, err
	}
	terms := store.QueryTerms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	phrase := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	stores := dedupe(q.StoreIDs)
	for i, id := range stores {
		stores[i] = phrase(id)
	}
	for i, t := range terms {
		terms[i] = phrase(t)
	}
	match := "store : (" + strings.Join(stores, " OR ") + ") AND text : (" + strings.Join(terms, " OR ") + ")"
	query := `SELECT r.chunk_id, -bm25(vector_chunk_text, 0.0, 1.0) AS score, c.store_id, c.file_id, c.ordinal, c.text, c.attributes
		FROM vector_chunk_text JOIN vector_chunk_rows r ON r.id = vector_chunk_text.rowid JOIN vector_chunks c ON c.id = r.chunk_id
		WHERE vector_chunk_text MATCH ? ORDER BY score DESC, r.chunk_id`
	args := []any{match}
	if q.Filter == nil {
		query += ` LIMIT ?`
		args = append(args, q.Limit)
	}
	rows, err := v.db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: text search: %w", err)
	}
	defer rows.Close()
	var out []store.ChunkMatch
	for rows.Next() && len(out) < q.Limit {
		var m store.ChunkMatch
		var attrs string
		if err := rows.Scan(&m.ID, &m.Score, &m.StoreID, &m.FileID, &m.Ordinal, &m.Text, &attrs); err != nil {
			return nil, fmt.Errorf("sqlite: text search: %w", err)
		}
		if attrs != "{}" {
			if err := json.Unmarshal([]byte(attrs), &m.Attributes); err != nil {
				return nil, fmt.Errorf("sqlite: chunk %s attributes: %w", m.ID, err)
			}
		}
		if q.Filter != nil && !q.Filter.Match(m.Attributes) {
			continue
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: text search: %w", err)
	}
	return out, nil
}
