package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/vectorscan"
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
const VectorCacheFloats = vectorscan.DefaultMaxFloats

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
				c.ID, c.StoreID, c.FileID, c.Ordinal, c.Text, string(attrs), len(c.Vector), vectorscan.EncodeUnit(c.Vector)); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
	// Invalidated whether or not the write committed: a failed write's
	// cache is still right, but reloading it costs only a search's time.
	v.db.vec.Invalidate(stores...)
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
	v.db.vec.Invalidate(storeID)
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
	out, err := vectorscan.Search(ctx, q, v.load)
	if err != nil {
		return nil, err
	}
	return out, v.fill(ctx, out)
}

// load returns storeID's vectors, from the cache or read and cached. A
// write to a store invalidates its cached vectors (and any read of them in
// progress), so a search never keeps vectors a later write replaced.
func (v vectors) load(ctx context.Context, storeID string) (*vectorscan.Set, error) {
	c := &v.db.vec
	if sv := c.Get(storeID, 0); sv != nil {
		return sv, nil
	}
	ticket := c.Begin(storeID)

	rows, err := v.db.r.QueryContext(ctx, `SELECT id, attributes, dims, vector FROM vector_chunks WHERE store_id = ? ORDER BY id`, storeID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read chunks: %w", err)
	}
	defer rows.Close()
	sv := &vectorscan.Set{}
	for rows.Next() {
		var id, attrs string
		var dims int
		var blob []byte
		if err := rows.Scan(&id, &attrs, &dims, &blob); err != nil {
			return nil, fmt.Errorf("sqlite: read chunks: %w", err)
		}
		if len(blob) != 4*dims {
			return nil, fmt.Errorf("sqlite: chunk %s: a vector of %d bytes for %d dimensions", id, len(blob), dims)
		}
		var a map[string]any
		if attrs != "{}" {
			if err := json.Unmarshal([]byte(attrs), &a); err != nil {
				return nil, fmt.Errorf("sqlite: chunk %s attributes: %w", id, err)
			}
		}
		if err := sv.Add(id, a, blob); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read chunks: %w", err)
	}
	return c.Put(storeID, ticket, 0, sv), nil
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
	stores := vectorscan.Dedupe(q.StoreIDs)
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
