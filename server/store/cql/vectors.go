package cql

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/parleyhq/parley/server/store"
)

// Vectors returns the vector index kept in db's keyspace, on Apache
// Cassandra 5's storage-attached indexes (SAI):
//
//   - vector_store_dims records each vector store's vector length, set once
//     by a lightweight transaction, since a CQL vector column has a fixed
//     length: the chunks of stores of length N live in vector_chunks_dN
//     (made on first use), one partition per vector store, clustered by
//     chunk ID, with an SAI vector index (cosine) and one on file_id.
//   - vector_terms is the lexical index (SearchChunksText), an inverted
//     index kept here, since Cassandra 5.0's SAI has no analysed text
//     index: one partition per store and term, a row per chunk holding it
//     with its count there and the chunk's length, scored by BM25.
//   - An unfiltered search is the index's approximate nearest-neighbour
//     query within the store's partition, asking for 4× the matches wanted
//     and re-ranking them by exact cosine; a filtered one reads the
//     partition's vectors and attributes and picks the nearest that pass,
//     exactly — the filter applies before the top k, as SAI cannot filter
//     on a JSON attribute. Scores are the cosine computed here from the
//     stored vector (Cassandra's similarity_cosine is (1+cos)/2).
//
// A PutChunks that fails after its checks may have stored some chunks:
// putting the same chunks again completes it (chunk IDs make it
// idempotent).
func (db *DB) Vectors() store.VectorIndex { return &vectors{db: db, made: map[int]bool{}} }

type vectors struct {
	db   *DB
	mu   sync.Mutex
	dir  bool         // vector_store_dims and vector_terms made
	made map[int]bool // vector_chunks_dN made

	countMu sync.Mutex
	counts  map[string]chunkCount // each searched store's chunk count, for BM25
}

// MaxVectorDims bounds a vector's length on CQL.
const MaxVectorDims = 8192

// vec binds a vector<float, N>: N big-endian float32s.
type vec []float32

func (v vec) MarshalCQL(gocql.TypeInfo) ([]byte, error) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.BigEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b, nil
}

func (v *vec) UnmarshalCQL(_ gocql.TypeInfo, data []byte) error {
	if len(data)%4 != 0 {
		return fmt.Errorf("cql: a vector of %d bytes", len(data))
	}
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.BigEndian.Uint32(data[4*i:]))
	}
	*v = out
	return nil
}

func table(dims int) string { return fmt.Sprintf("vector_chunks_d%d", dims) }

// ensure makes vector_store_dims and, when dims > 0, the chunk table of
// that length, unless this process has made them.
func (v *vectors) ensure(ctx context.Context, dims int) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.dir {
		for _, stmt := range []string{
			`CREATE TABLE IF NOT EXISTS vector_store_dims (store_id text PRIMARY KEY, dims int)`,
			termsTable,
		} {
			err := store.CreateSchema(ctx, schemaRetryable, func() error { return v.db.s.ContextQuery(ctx, stmt, nil).ExecRelease() })
			if err != nil {
				return fmt.Errorf("cql: vector index schema: %w", err)
			}
		}
		v.dir = true
	}
	if dims == 0 || v.made[dims] {
		return nil
	}
	t := table(dims)
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS ` + t + ` (store_id text, id text, file_id text, ordinal int, text text, attributes text,
			v vector<float, ` + fmt.Sprint(dims) + `>, PRIMARY KEY ((store_id), id))`,
		`CREATE CUSTOM INDEX IF NOT EXISTS ` + t + `_v ON ` + t + ` (v) USING 'StorageAttachedIndex' WITH OPTIONS = {'similarity_function': 'cosine'}`,
		`CREATE CUSTOM INDEX IF NOT EXISTS ` + t + `_file ON ` + t + ` (file_id) USING 'StorageAttachedIndex'`,
	} {
		err := store.CreateSchema(ctx, schemaRetryable, func() error { return v.db.s.ContextQuery(ctx, stmt, nil).ExecRelease() })
		if err != nil {
			return fmt.Errorf("cql: %s: %w", t, err)
		}
	}
	v.made[dims] = true
	return nil
}

// dims returns storeID's vector length, 0 when it has none yet.
func (v *vectors) dims(ctx context.Context, storeID string) (int, error) {
	if err := v.ensure(ctx, 0); err != nil {
		return 0, err
	}
	var d int
	err := v.db.s.ContextQuery(ctx, `SELECT dims FROM vector_store_dims WHERE store_id = ?`, nil).Bind(storeID).Scan(&d)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cql: vector store dims: %w", err)
	}
	return d, nil
}

func (v *vectors) PutChunks(ctx context.Context, chunks []store.Chunk) error {
	dims := map[string]int{}
	for i, c := range chunks {
		if c.ID == "" || c.StoreID == "" || c.FileID == "" {
			return fmt.Errorf("%w: chunks[%d]: id, store and file are required", store.ErrInvalidArgument, i)
		}
		if len(c.Vector) == 0 || len(c.Vector) > MaxVectorDims {
			return fmt.Errorf("%w: chunks[%d].vector: %d dimensions, 1 to %d", store.ErrInvalidArgument, i, len(c.Vector), MaxVectorDims)
		}
		if d, ok := dims[c.StoreID]; ok && d != len(c.Vector) {
			return fmt.Errorf("%w: chunks[%d].vector: %d dimensions, the other chunks of the store have %d", store.ErrInvalidArgument, i, len(c.Vector), d)
		}
		dims[c.StoreID] = len(c.Vector)
		if err := store.ValidateAttributes(c.Attributes); err != nil {
			return fmt.Errorf("chunks[%d]: %w", i, err)
		}
	}
	ids := make([]string, 0, len(dims))
	for id := range dims {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := v.ensure(ctx, dims[id]); err != nil {
			return err
		}
		// The store's length is set once, by whichever writer is first.
		applied := map[string]any{}
		ok, err := v.db.s.ContextQuery(ctx, `INSERT INTO vector_store_dims (store_id, dims) VALUES (?, ?) IF NOT EXISTS`, nil).
			Bind(id, dims[id]).Consistency(gocql.LocalQuorum).MapScanCAS(applied)
		if err != nil {
			return fmt.Errorf("cql: vector store dims: %w", err)
		}
		if !ok {
			if have, _ := applied["dims"].(int); have != dims[id] {
				return fmt.Errorf("%w: vector: %d dimensions, the store's chunks have %d", store.ErrInvalidArgument, dims[id], have)
			}
		}
	}
	if err := v.putTerms(ctx, chunks); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, c := range chunks {
		attrs := []byte("{}")
		if len(c.Attributes) > 0 {
			var err error
			if attrs, err = json.Marshal(c.Attributes); err != nil {
				return err
			}
		}
		g.Go(func() error {
			return v.db.s.ContextQuery(gctx, `INSERT INTO `+table(len(c.Vector))+` (store_id, id, file_id, ordinal, text, attributes, v) VALUES (?, ?, ?, ?, ?, ?, ?)`, nil).
				Bind(c.StoreID, c.ID, c.FileID, c.Ordinal, c.Text, string(attrs), vec(c.Vector)).ExecRelease()
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cql: put chunks: %w", err)
	}
	return nil
}

func (v *vectors) DeleteFileChunks(ctx context.Context, storeID, fileID string) (int, error) {
	d, err := v.dims(ctx, storeID)
	if err != nil || d == 0 {
		return 0, err
	}
	if err := v.ensure(ctx, d); err != nil {
		return 0, err
	}
	ids, err := v.dropTerms(ctx, storeID, d, fileID)
	if err != nil {
		return 0, fmt.Errorf("cql: delete file chunks: %w", err)
	}
	for start := 0; start < len(ids); start += 100 {
		batch := ids[start:min(start+100, len(ids))]
		if err := v.db.s.ContextQuery(ctx, `DELETE FROM `+table(d)+` WHERE store_id = ? AND id IN ?`, nil).Bind(storeID, batch).ExecRelease(); err != nil {
			return 0, fmt.Errorf("cql: delete file chunks: %w", err)
		}
	}
	return len(ids), nil
}

func (v *vectors) SetFileAttributes(ctx context.Context, storeID, fileID string, attrs map[string]any) (int, error) {
	d, err := v.dims(ctx, storeID)
	if err != nil || d == 0 {
		return 0, err
	}
	if err := v.ensure(ctx, d); err != nil {
		return 0, err
	}
	data := []byte("{}")
	if len(attrs) > 0 {
		if data, err = json.Marshal(attrs); err != nil {
			return 0, err
		}
	}
	var ids []string
	if err := v.db.s.ContextQuery(ctx, `SELECT id FROM `+table(d)+` WHERE store_id = ? AND file_id = ?`, nil).Bind(storeID, fileID).SelectRelease(&ids); err != nil {
		return 0, fmt.Errorf("cql: set file attributes: %w", err)
	}
	for start := 0; start < len(ids); start += 100 {
		batch := ids[start:min(start+100, len(ids))]
		if err := v.db.s.ContextQuery(ctx, `UPDATE `+table(d)+` SET attributes = ? WHERE store_id = ? AND id IN ?`, nil).Bind(string(data), storeID, batch).ExecRelease(); err != nil {
			return 0, fmt.Errorf("cql: set file attributes: %w", err)
		}
	}
	return len(ids), nil
}

func (v *vectors) DeleteStoreChunks(ctx context.Context, storeID string) (int, error) {
	d, err := v.dims(ctx, storeID)
	if err != nil || d == 0 {
		return 0, err
	}
	if err := v.ensure(ctx, d); err != nil {
		return 0, err
	}
	ids, err := v.dropTerms(ctx, storeID, d, "")
	if err != nil {
		return 0, fmt.Errorf("cql: delete store chunks: %w", err)
	}
	n := len(ids)
	if err := v.db.s.ContextQuery(ctx, `DELETE FROM `+table(d)+` WHERE store_id = ?`, nil).Bind(storeID).ExecRelease(); err != nil {
		return 0, fmt.Errorf("cql: delete store chunks: %w", err)
	}
	if err := v.db.s.ContextQuery(ctx, `DELETE FROM vector_store_dims WHERE store_id = ?`, nil).Bind(storeID).ExecRelease(); err != nil {
		return 0, fmt.Errorf("cql: delete store chunks: %w", err)
	}
	return n, nil
}

func (v *vectors) CountChunks(ctx context.Context, storeID, fileID string) (int, error) {
	d, err := v.dims(ctx, storeID)
	if err != nil || d == 0 {
		return 0, err
	}
	if err := v.ensure(ctx, d); err != nil {
		return 0, err
	}
	q, args := `SELECT count(*) FROM `+table(d)+` WHERE store_id = ?`, []any{storeID}
	if fileID != "" {
		q, args = q+` AND file_id = ?`, append(args, fileID)
	}
	var n int64
	if err := v.db.s.ContextQuery(ctx, q, nil).Bind(args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("cql: count chunks: %w", err)
	}
	return int(n), nil
}

func (v *vectors) SearchChunks(ctx context.Context, q store.VectorQuery) ([]store.ChunkMatch, error) {
	if err := store.ValidateVectorQuery(q); err != nil {
		return nil, err
	}
	var all []store.ChunkMatch
	seen := map[string]bool{}
	for _, id := range q.StoreIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		d, err := v.dims(ctx, id)
		if err != nil {
			return nil, err
		}
		if d == 0 {
			continue
		}
		if d != len(q.Vector) {
			return nil, fmt.Errorf("%w: query vector: %d dimensions, the chunks of %s have %d", store.ErrInvalidArgument, len(q.Vector), id, d)
		}
		if err := v.ensure(ctx, d); err != nil {
			return nil, err
		}
		var ms []store.ChunkMatch
		if q.Filter == nil {
			ms, err = v.nearest(ctx, id, q)
		} else {
			ms, err = v.scan(ctx, id, q)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].Score > all[j].Score || all[i].Score == all[j].Score && all[i].ID < all[j].ID
	})
	out := all[:0]
	for _, m := range all {
		if q.MinScore != 0 && m.Score < q.MinScore {
			continue
		}
		out = append(out, m)
	}
	return out[:min(len(out), q.Limit)], nil
}

// annOversample is how many times q.Limit candidates the ANN query asks
// for (at least annMinCandidates), re-ranked here by their exact cosine:
// the graph's own top 10 of random 32-dimension vectors found as few as 7
// of the exact 10.
const (
	annOversample    = 4
	annMinCandidates = 40
)

// nearest is the SAI index's ANN query within storeID's partition.
func (v *vectors) nearest(ctx context.Context, storeID string, q store.VectorQuery) ([]store.ChunkMatch, error) {
	it := v.db.s.ContextQuery(ctx, `SELECT id, file_id, ordinal, text, attributes, v FROM `+table(len(q.Vector))+
		` WHERE store_id = ? ORDER BY v ANN OF ? LIMIT ?`, nil).Bind(storeID, vec(q.Vector), max(annOversample*q.Limit, annMinCandidates)).Iter()
	var ms []store.ChunkMatch
	for {
		m := store.ChunkMatch{Chunk: store.Chunk{StoreID: storeID}}
		var attrs string
		var got vec
		if !it.Scan(&m.ID, &m.FileID, &m.Ordinal, &m.Text, &attrs, &got) {
			break
		}
		if err := decodeAttrs(attrs, &m.Attributes); err != nil {
			return nil, err
		}
		m.Score = store.Cosine(got, q.Vector)
		ms = append(ms, m)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cql: search chunks: %w", err)
	}
	return ms, nil
}

// scan reads storeID's vectors and attributes page by page and keeps the
// q.Limit nearest that pass q.Filter, then reads their text.
func (v *vectors) scan(ctx context.Context, storeID string, q store.VectorQuery) ([]store.ChunkMatch, error) {
	t := table(len(q.Vector))
	it := v.db.s.ContextQuery(ctx, `SELECT id, attributes, v FROM `+t+` WHERE store_id = ?`, nil).Bind(storeID).PageSize(1000).Iter()
	var top []store.ChunkMatch
	for {
		var id, attrs string
		var got vec
		if !it.Scan(&id, &attrs, &got) {
			break
		}
		m := store.ChunkMatch{Chunk: store.Chunk{ID: id, StoreID: storeID}}
		if err := decodeAttrs(attrs, &m.Attributes); err != nil {
			return nil, err
		}
		if !q.Filter.Match(m.Attributes) {
			continue
		}
		m.Score = store.Cosine(got, q.Vector)
		top = keepTop(top, m, q.Limit)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cql: search chunks: %w", err)
	}
	for i := range top {
		m := &top[i]
		if err := v.db.s.ContextQuery(ctx, `SELECT file_id, ordinal, text FROM `+t+` WHERE store_id = ? AND id = ?`, nil).
			Bind(storeID, m.ID).Scan(&m.FileID, &m.Ordinal, &m.Text); err != nil {
			return nil, fmt.Errorf("cql: read chunk %s: %w", m.ID, err)
		}
	}
	return top, nil
}

// keepTop inserts m into top (sorted best first) and keeps at most k.
func keepTop(top []store.ChunkMatch, m store.ChunkMatch, k int) []store.ChunkMatch {
	i := sort.Search(len(top), func(i int) bool {
		return m.Score > top[i].Score || m.Score == top[i].Score && m.ID < top[i].ID
	})
	if i >= k {
		return top
	}
	top = append(top, store.ChunkMatch{})
	copy(top[i+1:], top[i:])
	top[i] = m
	return top[:min(len(top), k)]
}

func decodeAttrs(s string, into *map[string]any) error {
	if s == "" || s == "{}" {
		return nil
	}
	if err := json.Unmarshal([]byte(s), into); err != nil {
		return fmt.Errorf("cql: chunk attributes: %w", err)
	}
	return nil
}
