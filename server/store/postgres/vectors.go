package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/vectorscan"
)

// Vectors returns the vector index kept in db, for a deployment without
// Cassandra (migration 0018):
//
//   - The chunks live in vector_chunks, their vectors scaled to unit length.
//     Searches are exact, in the gateway (server/store/vectorscan, as
//     SQLite's): each searched store's vectors and attributes are read once
//     into memory (at most vectorscan.DefaultMaxFloats over all stores) and
//     scanned over all cores, the filter applied to every chunk before the
//     top k. PostgreSQL here has no vector extension to lean on.
//   - Gateways share the database, so a write by another gateway must
//     reach this one's cache: every write to a store's chunks sets the
//     store's generation (vector_index_stores.gen) to a fresh value of a
//     sequence, in the write's transaction; a store's vectors are read
//     with the generation in one snapshot and cached under it, and a search
//     first reads the generations of its stores (one indexed query) and
//     uses a cached copy only at the current one.
//   - The lexical search is BM25 over an inverted index kept here,
//     vector_chunk_terms (a posting per store, term and chunk, with the
//     term's count and the chunk's length), and each store's chunk count and
//     total length in vector_index_stores, all maintained in the write's
//     transaction; the scores are computed in one query, per store as the
//     CQL index does.
func (db *DB) Vectors() store.VectorIndex { return vectors{db} }

type vectors struct{ db *DB }

// errUnchanged rolls back a write that found nothing to change, so that it
// leaves the store's generation (and every gateway's cache) as it was.
var errUnchanged = errors.New("unchanged")

// pgText is s as a PostgreSQL text value holds it: no NUL bytes, valid
// UTF-8.
func pgText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// mapVectorErr is mapErr, with a JSON string PostgreSQL's jsonb refuses
// (one holding \u0000) an invalid argument.
func mapVectorErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "22P05" { // untranslatable_character
		return fmt.Errorf("%w: attributes: %v", store.ErrInvalidArgument, err)
	}
	return mapErr(err)
}

func attrsJSON(attrs map[string]any) (string, error) {
	if len(attrs) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(attrs)
	return string(b), err
}

func (v vectors) PutChunks(ctx context.Context, chunks []store.Chunk) error {
	if len(chunks) == 0 {
		return nil
	}
	dims := map[string]int{}
	byStore := map[string][]store.Chunk{}
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
		byStore[c.StoreID] = append(byStore[c.StoreID], c)
	}
	// The stores' rows are locked in one order, so two puts to the same
	// stores cannot deadlock.
	stores := make([]string, 0, len(byStore))
	for id := range byStore {
		stores = append(stores, id)
	}
	slices.Sort(stores)
	err := pgx.BeginFunc(ctx, v.db.pool, func(tx pgx.Tx) error {
		for _, id := range stores {
			if err := putStoreChunks(ctx, tx, id, dims[id], byStore[id]); err != nil {
				return err
			}
		}
		return nil
	})
	// Invalidated whether or not the write committed: the generation
	// check would catch it, but this frees the memory now.
	v.db.vec.Invalidate(stores...)
	if err != nil {
		return fmt.Errorf("postgres: put chunks: %w", mapVectorErr(err))
	}
	return nil
}

// putStoreChunks writes the chunks of one store in tx: it sets the store's
// generation first (taking its row's lock), checks the vectors' length
// against the store's, replaces the chunks under the same IDs and their
// postings, and updates the store's counts.
func putStoreChunks(ctx context.Context, tx pgx.Tx, storeID string, dims int, cs []store.Chunk) error {
	if _, err := tx.Exec(ctx, `INSERT INTO vector_index_stores (store_id, gen) VALUES ($1, nextval('vector_index_gen'))
		ON CONFLICT (store_id) DO UPDATE SET gen = excluded.gen`, storeID); err != nil {
		return err
	}
	var have int
	switch err := tx.QueryRow(ctx, `SELECT dims FROM vector_chunks WHERE store_id = $1 LIMIT 1`, storeID).Scan(&have); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return err
	case have != dims:
		return fmt.Errorf("%w: vector: %d dimensions, the store's chunks have %d", store.ErrInvalidArgument, dims, have)
	}
	// A chunk put twice in one batch: the last one wins.
	last := make(map[string]int, len(cs))
	for i, c := range cs {
		last[c.ID] = i
	}
	n := len(last)
	var (
		ids, files, texts, attrs []string
		ords, lens               []int32
		vecs                     [][]byte
		tTerms, tChunks          []string
		tTF, tLen                []int32
		addLen                   int64
	)
	ids, files, texts, attrs = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	ords, lens, vecs = make([]int32, 0, n), make([]int32, 0, n), make([][]byte, 0, n)
	for i, c := range cs {
		if last[c.ID] != i {
			continue
		}
		a, err := attrsJSON(c.Attributes)
		if err != nil {
			return err
		}
		text := pgText(c.Text)
		tf, total := store.TermCounts(text)
		ids, files, texts, attrs = append(ids, c.ID), append(files, c.FileID), append(texts, text), append(attrs, a)
		ords, lens, vecs = append(ords, int32(c.Ordinal)), append(lens, int32(total)), append(vecs, vectorscan.EncodeUnit(c.Vector))
		addLen += int64(total)
		for term, k := range tf {
			tTerms, tChunks, tTF, tLen = append(tTerms, term), append(tChunks, c.ID), append(tTF, int32(k)), append(tLen, int32(total))
		}
	}
	var oldN, oldLen int64
	if err := tx.QueryRow(ctx, `WITH d AS (DELETE FROM vector_chunks WHERE store_id = $1 AND id = ANY($2) RETURNING len)
		SELECT count(*), coalesce(sum(len), 0)::bigint FROM d`, storeID, ids).Scan(&oldN, &oldLen); err != nil {
		return err
	}
	if oldN > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM vector_chunk_terms WHERE store_id = $1 AND chunk_id = ANY($2)`, storeID, ids); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO vector_chunks (store_id, id, file_id, ordinal, text, attributes, dims, len, vector)
		SELECT $1, u.id, u.file_id, u.ordinal, u.text, u.attributes::jsonb, $2, u.len, u.vector
		FROM unnest($3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::int[], $9::bytea[]) AS u(id, file_id, ordinal, text, attributes, len, vector)`,
		storeID, dims, ids, files, ords, texts, attrs, lens, vecs); err != nil {
		return err
	}
	if len(tTerms) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO vector_chunk_terms (store_id, term, chunk_id, tf, len)
			SELECT $1, u.term, u.chunk_id, u.tf, u.len FROM unnest($2::text[], $3::text[], $4::int[], $5::int[]) AS u(term, chunk_id, tf, len)`,
			storeID, tTerms, tChunks, tTF, tLen); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `UPDATE vector_index_stores SET chunks = chunks + $2, total_len = total_len + $3 WHERE store_id = $1`,
		storeID, int64(n)-oldN, addLen-oldLen)
	return err
}

// change runs f in a transaction that first sets storeID's generation
// (taking its row's lock); f says how many chunks it changed. A store
// without chunks (no row) changes nothing, nor does a change of none: its
// transaction is rolled back, leaving the generation as it was.
func (v vectors) change(ctx context.Context, storeID string, f func(tx pgx.Tx) (int, error)) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, v.db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE vector_index_stores SET gen = nextval('vector_index_gen') WHERE store_id = $1`, storeID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errUnchanged
		}
		if n, err = f(tx); err != nil {
			return err
		}
		if n == 0 {
			return errUnchanged
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return 0, nil
	}
	v.db.vec.Invalidate(storeID)
	if err != nil {
		return 0, fmt.Errorf("postgres: change chunks: %w", mapVectorErr(err))
	}
	return n, nil
}

// deleteChunks removes the chunks of storeID that where (a condition on
// vector_chunks c, $1 the store) keeps, with their postings, and updates
// the store's counts; it says how many.
func deleteChunks(ctx context.Context, tx pgx.Tx, storeID, where string, args ...any) (int, error) {
	all := append([]any{storeID}, args...)
	if _, err := tx.Exec(ctx, `DELETE FROM vector_chunk_terms t USING vector_chunks c
		WHERE t.store_id = $1 AND c.store_id = $1 AND t.chunk_id = c.id AND `+where, all...); err != nil {
		return 0, err
	}
	var n, total int64
	if err := tx.QueryRow(ctx, `WITH d AS (DELETE FROM vector_chunks c WHERE c.store_id = $1 AND `+where+` RETURNING len)
		SELECT count(*), coalesce(sum(len), 0)::bigint FROM d`, all...).Scan(&n, &total); err != nil {
		return 0, err
	}
	_, err := tx.Exec(ctx, `UPDATE vector_index_stores SET chunks = chunks - $2, total_len = total_len - $3 WHERE store_id = $1`, storeID, n, total)
	return int(n), err
}

func (v vectors) DeleteFileChunks(ctx context.Context, storeID, fileID string) (int, error) {
	return v.change(ctx, storeID, func(tx pgx.Tx) (int, error) {
		return deleteChunks(ctx, tx, storeID, `c.file_id = $2`, fileID)
	})
}

func (v vectors) SetFileAttributes(ctx context.Context, storeID, fileID string, attrs map[string]any) (int, error) {
	if err := store.ValidateAttributes(attrs); err != nil {
		return 0, err
	}
	data, err := attrsJSON(attrs)
	if err != nil {
		return 0, err
	}
	return v.change(ctx, storeID, func(tx pgx.Tx) (int, error) {
		tag, err := tx.Exec(ctx, `UPDATE vector_chunks SET attributes = $3::jsonb WHERE store_id = $1 AND file_id = $2`, storeID, fileID, data)
		return int(tag.RowsAffected()), err
	})
}

func (v vectors) DeleteStoreChunks(ctx context.Context, storeID string) (int, error) {
	return v.change(ctx, storeID, func(tx pgx.Tx) (int, error) {
		if _, err := tx.Exec(ctx, `DELETE FROM vector_chunk_terms WHERE store_id = $1`, storeID); err != nil {
			return 0, err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM vector_chunks WHERE store_id = $1`, storeID)
		if err != nil {
			return 0, err
		}
		// The row goes too: a later put makes it again, with a generation
		// no cache has seen (the sequence never repeats one).
		if _, err := tx.Exec(ctx, `DELETE FROM vector_index_stores WHERE store_id = $1`, storeID); err != nil {
			return 0, err
		}
		return int(tag.RowsAffected()), nil
	})
}

func (v vectors) CountChunks(ctx context.Context, storeID, fileID string) (int, error) {
	q, args := `SELECT count(*) FROM vector_chunks WHERE store_id = $1`, []any{storeID}
	if fileID != "" {
		q, args = q+` AND file_id = $2`, append(args, fileID)
	}
	var n int
	if err := v.db.pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count chunks: %w", err)
	}
	return n, nil
}

// SearchChunks reads the generations of q's stores, then scans each
// store's vectors: the cached ones when they were read at the store's
// generation, else read (with the generation they are at) and cached.
func (v vectors) SearchChunks(ctx context.Context, q store.VectorQuery) ([]store.ChunkMatch, error) {
	if err := store.ValidateVectorQuery(q); err != nil {
		return nil, err
	}
	ids := vectorscan.Dedupe(q.StoreIDs)
	gens := make(map[string]uint64, len(ids))
	rows, err := v.db.pool.Query(ctx, `SELECT store_id, gen FROM vector_index_stores WHERE store_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: search: %w", err)
	}
	var id string
	var gen int64
	_, err = pgx.ForEachRow(rows, []any{&id, &gen}, func() error {
		gens[id] = uint64(gen)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: search: %w", err)
	}
	out, err := vectorscan.Search(ctx, q, func(ctx context.Context, storeID string) (*vectorscan.Set, error) {
		gen, ok := gens[storeID]
		if !ok {
			return nil, nil // no chunks
		}
		c := &v.db.vec
		if s := c.Get(storeID, gen); s != nil {
			return s, nil
		}
		ticket := c.Begin(storeID)
		s, at, err := v.read(ctx, storeID)
		if err != nil {
			return nil, err
		}
		if at == 0 {
			return nil, nil // deleted since the generations were read
		}
		return c.Put(storeID, ticket, at, s), nil
	})
	if err != nil {
		return nil, err
	}
	return out, v.fill(ctx, out)
}

// read reads storeID's vectors and the generation they are at (0 when the
// store has no chunks) in one snapshot.
func (v vectors) read(ctx context.Context, storeID string) (*vectorscan.Set, uint64, error) {
	s := &vectorscan.Set{}
	var gen int64
	err := pgx.BeginTxFunc(ctx, v.db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT gen FROM vector_index_stores WHERE store_id = $1`, storeID).Scan(&gen)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, attributes, vector FROM vector_chunks WHERE store_id = $1 ORDER BY id`, storeID)
		if err != nil {
			return err
		}
		var id string
		var attrs, blob []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &attrs, &blob}, func() error {
			var a map[string]any
			if string(attrs) != "{}" {
				if err := json.Unmarshal(attrs, &a); err != nil {
					return fmt.Errorf("chunk %s attributes: %w", id, err)
				}
			}
			return s.Add(id, a, blob)
		})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: read chunks: %w", err)
	}
	return s, uint64(gen), nil
}

// fill reads the file, ordinal and text of the matches.
func (v vectors) fill(ctx context.Context, ms []store.ChunkMatch) error {
	if len(ms) == 0 {
		return nil
	}
	at := make(map[[2]string]int, len(ms))
	stores, ids := make([]string, len(ms)), make([]string, len(ms))
	for i, m := range ms {
		at[[2]string{m.StoreID, m.ID}] = i
		stores[i], ids[i] = m.StoreID, m.ID
	}
	rows, err := v.db.pool.Query(ctx, `SELECT c.store_id, c.id, c.file_id, c.ordinal, c.text FROM vector_chunks c
		JOIN unnest($1::text[], $2::text[]) AS u(store_id, id) ON c.store_id = u.store_id AND c.id = u.id`, stores, ids)
	if err != nil {
		return fmt.Errorf("postgres: read chunks: %w", err)
	}
	found := 0
	var storeID, id, file, text string
	var ord int
	_, err = pgx.ForEachRow(rows, []any{&storeID, &id, &file, &ord, &text}, func() error {
		if i, ok := at[[2]string{storeID, id}]; ok {
			ms[i].FileID, ms[i].Ordinal, ms[i].Text = file, ord, text
			found++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: read chunks: %w", err)
	}
	if found != len(ms) {
		// A chunk deleted between the scan and this read.
		return fmt.Errorf("postgres: search: %w", errors.Join(store.ErrConflict, errors.New("chunks changed during the search; retry")))
	}
	return nil
}

// textSearch scores, in one statement, every chunk of the stores ($1)
// holding any of the terms ($2) by BM25: per store, N its chunk count, the
// average length its total over N, a term's document frequency its
// postings' count in the store.
const textSearch = `WITH p AS (
	SELECT t.store_id, t.chunk_id, t.tf, t.len, count(*) OVER (PARTITION BY t.store_id, t.term) AS df
	FROM vector_chunk_terms t WHERE t.store_id = ANY($1) AND t.term = ANY($2)
), s AS (
	SELECT p.store_id, p.chunk_id,
		sum(ln(1 + (st.chunks::float8 - p.df + 0.5) / (p.df + 0.5))
			* p.tf * ($3::float8 + 1) / (p.tf + $3::float8 * (1 - $4::float8 + $4::float8 * p.len / greatest(st.total_len::float8 / greatest(st.chunks, 1), 1)))) AS score
	FROM p JOIN vector_index_stores st ON st.store_id = p.store_id
	GROUP BY p.store_id, p.chunk_id
)
SELECT s.chunk_id, s.score, s.store_id, c.file_id, c.ordinal, c.text, c.attributes
FROM s JOIN vector_chunks c ON c.store_id = s.store_id AND c.id = s.chunk_id
ORDER BY s.score DESC, s.chunk_id, s.store_id`

// SearchChunksText ranks the chunks of q's stores holding any of its
// terms by BM25 (textSearch), the filter applied to each in rank order
// until q.Limit pass.
func (v vectors) SearchChunksText(ctx context.Context, q store.TextQuery) ([]store.ChunkMatch, error) {
	if err := store.ValidateTextQuery(q); err != nil {
		return nil, err
	}
	terms := store.QueryTerms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	query, args := textSearch, []any{vectorscan.Dedupe(q.StoreIDs), terms, store.BM25K1, store.BM25B}
	if q.Filter == nil {
		query += ` LIMIT $5`
		args = append(args, q.Limit)
	}
	rows, err := v.db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: text search: %w", err)
	}
	defer rows.Close()
	var out []store.ChunkMatch
	for rows.Next() && len(out) < q.Limit {
		var m store.ChunkMatch
		var attrs []byte
		if err := rows.Scan(&m.ID, &m.Score, &m.StoreID, &m.FileID, &m.Ordinal, &m.Text, &attrs); err != nil {
			return nil, fmt.Errorf("postgres: text search: %w", err)
		}
		if string(attrs) != "{}" {
			if err := json.Unmarshal(attrs, &m.Attributes); err != nil {
				return nil, fmt.Errorf("postgres: chunk %s attributes: %w", m.ID, err)
			}
		}
		if q.Filter != nil && !q.Filter.Match(m.Attributes) {
			continue
		}
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: text search: %w", err)
	}
	return out, nil
}
