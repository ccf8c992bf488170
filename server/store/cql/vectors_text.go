package cql

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/parleyhq/parley/server/store"
)

// termsTable is the lexical index: a partition per (store, term), a row per
// chunk holding the term, with the term's count in it (tf) and the chunk's
// length in terms (len), all BM25 needs without reading the chunk.
const termsTable = `CREATE TABLE IF NOT EXISTS vector_terms (store_id text, term text, chunk_id text, tf int, len int,
	PRIMARY KEY ((store_id, term), chunk_id))`

// BM25's parameters, as Lucene and SQLite's FTS5 set them.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// maxPostings bounds the rows read for one term of a search: a term in more
// chunks than this is common enough that the first maxPostings (by chunk
// ID) stand for it.
const maxPostings = 10000

// countTTL is how long a store's chunk count (BM25's N) is reused.
const countTTL = 10 * time.Second

type chunkCount struct {
	n  int
	at time.Time
}

// putTerms writes the postings of chunks, first removing those of terms a
// replaced chunk no longer holds. It runs before the chunk rows are
// written, so a put that fails midway and is retried reads the same old
// text and leaves no stale posting.
func (v *vectors) putTerms(ctx context.Context, chunks []store.Chunk) error {
	byStore := map[string][]store.Chunk{}
	for _, c := range chunks {
		byStore[c.StoreID] = append(byStore[c.StoreID], c)
	}
	type write struct {
		del          bool
		store, term  string
		chunk        string
		tf, totalLen int
	}
	var writes []write
	for storeID, cs := range byStore {
		old := map[string]string{}
		ids := make([]string, len(cs))
		for i, c := range cs {
			ids[i] = c.ID
		}
		t := table(len(cs[0].Vector))
		for start := 0; start < len(ids); start += 100 {
			it := v.db.s.ContextQuery(ctx, `SELECT id, text FROM `+t+` WHERE store_id = ? AND id IN ?`, nil).Bind(storeID, ids[start:min(start+100, len(ids))]).Iter()
			var id, text string
			for it.Scan(&id, &text) {
				old[id] = text
			}
			if err := it.Close(); err != nil {
				return fmt.Errorf("cql: put chunks: read replaced texts: %w", err)
			}
		}
		for _, c := range cs {
			tf, n := store.TermCounts(c.Text)
			if prev, ok := old[c.ID]; ok {
				was, _ := store.TermCounts(prev)
				for term := range was {
					if _, still := tf[term]; !still {
						writes = append(writes, write{del: true, store: storeID, term: term, chunk: c.ID})
					}
				}
			}
			for term, k := range tf {
				writes = append(writes, write{store: storeID, term: term, chunk: c.ID, tf: k, totalLen: n})
			}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for start := 0; start < len(writes); start += 50 {
		part := writes[start:min(start+50, len(writes))]
		g.Go(func() error {
			b := v.db.s.NewBatch(gocql.UnloggedBatch).WithContext(gctx)
			for _, w := range part {
				if w.del {
					b.Query(`DELETE FROM vector_terms WHERE store_id = ? AND term = ? AND chunk_id = ?`, w.store, w.term, w.chunk)
				} else {
					b.Query(`INSERT INTO vector_terms (store_id, term, chunk_id, tf, len) VALUES (?, ?, ?, ?, ?)`, w.store, w.term, w.chunk, w.tf, w.totalLen)
				}
			}
			return v.db.s.ExecuteBatch(b)
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cql: put chunks: terms: %w", err)
	}
	v.forgetCount(byStoreKeys(byStore)...)
	return nil
}

func byStoreKeys(m map[string][]store.Chunk) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// dropTerms removes the postings of storeID's chunks (of fileID only, when
// set) and returns those chunks' IDs, for the caller to delete the rows
// after: a delete that fails midway leaves rows to find again, never a row
// the lexical index has lost.
func (v *vectors) dropTerms(ctx context.Context, storeID string, dims int, fileID string) ([]string, error) {
	q, args := `SELECT id, text FROM `+table(dims)+` WHERE store_id = ?`, []any{storeID}
	if fileID != "" {
		q, args = q+` AND file_id = ?`, append(args, fileID)
	}
	it := v.db.s.ContextQuery(ctx, q, nil).Bind(args...).PageSize(1000).Iter()
	var ids []string
	type posting struct{ term, chunk string }
	var dels []posting
	terms := map[string]bool{}
	var id, text string
	for it.Scan(&id, &text) {
		ids = append(ids, id)
		tf, _ := store.TermCounts(text)
		for term := range tf {
			if fileID == "" {
				terms[term] = true
			} else {
				dels = append(dels, posting{term, id})
			}
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	if fileID == "" {
		// The whole store: each of its terms' partitions at once.
		for term := range terms {
			g.Go(func() error {
				return v.db.s.ContextQuery(gctx, `DELETE FROM vector_terms WHERE store_id = ? AND term = ?`, nil).Bind(storeID, term).ExecRelease()
			})
		}
	} else {
		for start := 0; start < len(dels); start += 50 {
			part := dels[start:min(start+50, len(dels))]
			g.Go(func() error {
				b := v.db.s.NewBatch(gocql.UnloggedBatch).WithContext(gctx)
				for _, p := range part {
					b.Query(`DELETE FROM vector_terms WHERE store_id = ? AND term = ? AND chunk_id = ?`, storeID, p.term, p.chunk)
				}
				return v.db.s.ExecuteBatch(b)
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	v.forgetCount(storeID)
	return ids, nil
}

func (v *vectors) forgetCount(storeIDs ...string) {
	v.countMu.Lock()
	defer v.countMu.Unlock()
	for _, id := range storeIDs {
		delete(v.counts, id)
	}
}

// chunkTotal is storeID's chunk count, reused for countTTL.
func (v *vectors) chunkTotal(ctx context.Context, storeID string) (int, error) {
	v.countMu.Lock()
	c, ok := v.counts[storeID]
	v.countMu.Unlock()
	if ok && time.Since(c.at) < countTTL {
		return c.n, nil
	}
	n, err := v.CountChunks(ctx, storeID, "")
	if err != nil {
		return 0, err
	}
	v.countMu.Lock()
	if v.counts == nil {
		v.counts = map[string]chunkCount{}
	}
	v.counts[storeID] = chunkCount{n, time.Now()}
	v.countMu.Unlock()
	return n, nil
}

// SearchChunksText reads each query term's postings in each store, scores
// the chunks found by BM25 (N and the average length per store; a term's
// document frequency is its postings' count), then reads the best chunks'
// rows in rank order, applying the filter, until q.Limit pass.
func (v *vectors) SearchChunksText(ctx context.Context, q store.TextQuery) ([]store.ChunkMatch, error) {
	if err := store.ValidateTextQuery(q); err != nil {
		return nil, err
	}
	terms := store.QueryTerms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	type cand struct {
		store, id string
		score     float64
	}
	var cands []cand
	dimsOf := map[string]int{}
	seen := map[string]bool{}
	for _, storeID := range q.StoreIDs {
		if seen[storeID] {
			continue
		}
		seen[storeID] = true
		d, err := v.dims(ctx, storeID)
		if err != nil {
			return nil, err
		}
		if d == 0 {
			continue
		}
		if err := v.ensure(ctx, d); err != nil {
			return nil, err
		}
		dimsOf[storeID] = d
		n, err := v.chunkTotal(ctx, storeID)
		if err != nil {
			return nil, err
		}
		type posting struct {
			chunk   string
			tf, len int
		}
		lists := make([][]posting, len(terms))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for i, term := range terms {
			g.Go(func() error {
				it := v.db.s.ContextQuery(gctx, `SELECT chunk_id, tf, len FROM vector_terms WHERE store_id = ? AND term = ? LIMIT ?`, nil).
					Bind(storeID, term, maxPostings).PageSize(2000).Iter()
				var p posting
				for it.Scan(&p.chunk, &p.tf, &p.len) {
					lists[i] = append(lists[i], p)
				}
				return it.Close()
			})
		}
		if err := g.Wait(); err != nil {
			return nil, fmt.Errorf("cql: text search: %w", err)
		}
		lens := map[string]int{}
		for _, l := range lists {
			for _, p := range l {
				lens[p.chunk] = p.len
			}
		}
		if len(lens) == 0 {
			continue
		}
		var total float64
		for _, l := range lens {
			total += float64(l)
		}
		avg := total / float64(len(lens))
		n = max(n, len(lens))
		scores := map[string]float64{}
		for _, l := range lists {
			df := float64(len(l))
			idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
			for _, p := range l {
				tf := float64(p.tf)
				scores[p.chunk] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(p.len)/avg))
			}
		}
		for id, s := range scores {
			cands = append(cands, cand{storeID, id, s})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		return cands[i].score > cands[j].score || cands[i].score == cands[j].score && cands[i].id < cands[j].id
	})
	var out []store.ChunkMatch
	for start := 0; start < len(cands) && len(out) < q.Limit; start += 50 {
		part := cands[start:min(start+50, len(cands))]
		ids := map[string][]string{}
		for _, c := range part {
			ids[c.store] = append(ids[c.store], c.id)
		}
		rows := map[string]store.ChunkMatch{}
		for storeID, batch := range ids {
			it := v.db.s.ContextQuery(ctx, `SELECT id, file_id, ordinal, text, attributes FROM `+table(dimsOf[storeID])+` WHERE store_id = ? AND id IN ?`, nil).
				Bind(storeID, batch).Iter()
			var m store.ChunkMatch
			var attrs string
			for it.Scan(&m.ID, &m.FileID, &m.Ordinal, &m.Text, &attrs) {
				m.StoreID, m.Attributes = storeID, nil
				if attrs != "{}" {
					if err := json.Unmarshal([]byte(attrs), &m.Attributes); err != nil {
						_ = it.Close()
						return nil, fmt.Errorf("cql: chunk %s attributes: %w", m.ID, err)
					}
				}
				rows[storeID+"\x00"+m.ID] = m
			}
			if err := it.Close(); err != nil {
				return nil, fmt.Errorf("cql: text search: %w", err)
			}
		}
		for _, c := range part {
			m, ok := rows[c.store+"\x00"+c.id]
			if !ok || !q.Filter.Match(m.Attributes) {
				continue // deleted since its postings were read, or filtered out
			}
			m.Score = c.score
			out = append(out, m)
			if len(out) == q.Limit {
				break
			}
		}
	}
	return out, nil
}
