package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/parleyhq/parley/server/store"
)

// NewVectorIndex returns a fresh, empty vector index for one test.
type NewVectorIndex func(t *testing.T) store.VectorIndex

// randomVectors returns n reproducible random vectors of dims dimensions.
func randomVectors(seed uint64, n, dims int) [][]float32 {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out
}

func chunkOf(storeID, fileID string, ordinal int, v []float32, attrs map[string]any) store.Chunk {
	return store.Chunk{ID: fmt.Sprintf("%s/%s/%04d", storeID, fileID, ordinal), StoreID: storeID, FileID: fileID, Ordinal: ordinal,
		Text: fmt.Sprintf("passage %d of %s", ordinal, fileID), Vector: v, Attributes: attrs}
}

func search(t *testing.T, ix store.VectorIndex, q store.VectorQuery) []store.ChunkMatch {
	t.Helper()
	ms, err := ix.SearchChunks(t.Context(), q)
	noErr(t, err, "SearchChunks")
	for i := 1; i < len(ms); i++ {
		if ms[i].Score > ms[i-1].Score || ms[i].Score == ms[i-1].Score && ms[i].ID < ms[i-1].ID {
			t.Fatalf("matches out of order at %d: %v then %v", i, ms[i-1].Score, ms[i].Score)
		}
	}
	return ms
}

func matchIDs(ms []store.ChunkMatch) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// exactTop is the brute-force answer the index must give.
func exactTop(chunks []store.Chunk, q []float32, k int, keep func(store.Chunk) bool) []string {
	type scored struct {
		id    string
		score float64
	}
	var all []scored
	for _, c := range chunks {
		if keep == nil || keep(c) {
			all = append(all, scored{c.ID, store.Cosine(c.Vector, q)})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].score > all[j].score || all[i].score == all[j].score && all[i].id < all[j].id
	})
	var out []string
	for i := 0; i < k && i < len(all); i++ {
		out = append(out, all[i].id)
	}
	return out
}

// TestVectorIndex is the conformance suite for store.VectorIndex, for an
// index whose searches are exact.
func TestVectorIndex(t *testing.T, newIndex NewVectorIndex) { TestVectorIndexRecall(t, newIndex, 1) }

// sameTop checks an unfiltered search's matches against the exact answer:
// equal when minRecall is 1, else sharing at least minRecall of it.
func sameTop(t *testing.T, what string, got []store.ChunkMatch, want []string, minRecall float64) {
	t.Helper()
	ids := matchIDs(got)
	if minRecall >= 1 {
		if !slices.Equal(ids, want) {
			t.Fatalf("%s: got %v, want %v", what, ids, want)
		}
		return
	}
	hit := 0
	for _, id := range ids {
		if slices.Contains(want, id) {
			hit++
		}
	}
	if r := float64(hit) / float64(len(want)); r < minRecall {
		t.Fatalf("%s: recall %.2f below %.2f: got %v, want %v", what, r, minRecall, ids, want)
	}
}

// TestVectorIndexRecall is the suite for an index whose unfiltered
// searches are approximate (an ANN index): they must find at least
// minRecall of the exact nearest; filtered searches must still be exact.
func TestVectorIndexRecall(t *testing.T, newIndex NewVectorIndex, minRecall float64) {
	t.Run("NearestAreExact", func(t *testing.T) {
		ix := newIndex(t)
		vs := randomVectors(1, 600, 32)
		var chunks []store.Chunk
		for i, v := range vs {
			chunks = append(chunks, chunkOf("vs_a", fmt.Sprintf("file_%d", i%7), i, v, nil))
		}
		noErr(t, ix.PutChunks(t.Context(), chunks), "PutChunks")
		for qi, q := range randomVectors(2, 10, 32) {
			ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: q, Limit: 10})
			sameTop(t, fmt.Sprint("query ", qi), ms, exactTop(chunks, q, 10, nil), minRecall)
			for _, m := range ms {
				c := chunks[m.Ordinal]
				if m.ID != c.ID || m.FileID != c.FileID || m.StoreID != "vs_a" || m.Text != c.Text {
					t.Fatalf("match %s carries %+v, want the chunk as put", m.ID, m.Chunk)
				}
				if d := m.Score - store.Cosine(c.Vector, q); d > 1e-5 || d < -1e-5 {
					t.Fatalf("match %s score %v, cosine %v", m.ID, m.Score, store.Cosine(c.Vector, q))
				}
			}
		}
	})

	t.Run("SetFileAttributes", func(t *testing.T) {
		ix := newIndex(t)
		vs := randomVectors(9, 6, 8)
		var chunks []store.Chunk
		for i, v := range vs {
			chunks = append(chunks, chunkOf("vs_a", fmt.Sprintf("f%d", i%2), i, v, map[string]any{"year": 2020.0}))
		}
		noErr(t, ix.PutChunks(t.Context(), chunks), "PutChunks")
		n, err := ix.SetFileAttributes(t.Context(), "vs_a", "f0", map[string]any{"year": 2024.0, "lang": "en"})
		noErr(t, err, "SetFileAttributes")
		if n != 3 {
			t.Fatalf("SetFileAttributes changed %d chunks, want 3", n)
		}
		ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: vs[0], Limit: 10,
			Filter: &store.AttributeFilter{Op: "gte", Key: "year", Value: 2024.0}})
		if len(ms) != 3 {
			t.Fatalf("%d chunks match the new attributes, want f0's 3", len(ms))
		}
		for _, m := range ms {
			if m.FileID != "f0" || m.Attributes["lang"] != "en" {
				t.Fatalf("match %+v", m.Chunk)
			}
		}
		if n, err := ix.SetFileAttributes(t.Context(), "vs_none", "f0", nil); err != nil || n != 0 {
			t.Fatalf("SetFileAttributes of a store with no chunks: %d, %v", n, err)
		}
	})

	t.Run("PutIsIdempotentAndReplaces", func(t *testing.T) {
		ix := newIndex(t)
		v := randomVectors(3, 2, 8)
		c := chunkOf("vs_a", "f", 0, v[0], map[string]any{"lang": "en"})
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{c}), "PutChunks")
		c.Text, c.Vector = "replaced", v[1]
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{c}), "PutChunks again")
		n, err := ix.CountChunks(t.Context(), "vs_a", "")
		noErr(t, err, "CountChunks")
		if n != 1 {
			t.Fatalf("a chunk put twice is stored %d times", n)
		}
		ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: v[1], Limit: 5})
		if len(ms) != 1 || ms[0].Text != "replaced" || ms[0].Score < 0.9999 || ms[0].Attributes["lang"] != "en" {
			t.Fatalf("after the replace the search found %+v", ms)
		}
	})

	t.Run("DimensionsAreOnePerStore", func(t *testing.T) {
		ix := newIndex(t)
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{chunkOf("vs_a", "f", 0, randomVectors(4, 1, 8)[0], nil)}), "PutChunks")
		bad := []store.Chunk{chunkOf("vs_a", "g", 0, randomVectors(5, 1, 8)[0], nil), chunkOf("vs_a", "g", 1, randomVectors(5, 1, 9)[0], nil)}
		wantErr(t, ix.PutChunks(t.Context(), bad), store.ErrInvalidArgument, "a batch of mixed dimensions")
		wantErr(t, ix.PutChunks(t.Context(), bad[1:]), store.ErrInvalidArgument, "a chunk of other dimensions than the store's")
		if n, _ := ix.CountChunks(t.Context(), "vs_a", "g"); n != 0 {
			t.Fatalf("a refused batch left %d chunks", n)
		}
		// Another store may have its own.
		other := chunkOf("vs_b", "g", 0, randomVectors(5, 1, 9)[0], nil)
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{other}), "PutChunks of 9 dimensions to another store")
		if ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_b"}, Vector: other.Vector, Limit: 1}); len(ms) != 1 || ms[0].ID != other.ID {
			t.Fatalf("the 9-dimension store found %v", matchIDs(ms))
		}
	})

	t.Run("FilterIsAppliedBeforeTheTop", func(t *testing.T) {
		ix := newIndex(t)
		vs := randomVectors(6, 300, 16)
		q := vs[0]
		var chunks []store.Chunk
		for i, v := range vs {
			attrs := map[string]any{"year": float64(2000 + i%30), "lang": []string{"en", "de", "fr"}[i%3], "draft": i%2 == 0}
			if i%100 == 99 {
				attrs["rare"] = "yes" // 3 chunks, none near q
			}
			chunks = append(chunks, chunkOf("vs_a", fmt.Sprintf("file_%d", i%5), i, v, attrs))
		}
		noErr(t, ix.PutChunks(t.Context(), chunks), "PutChunks")
		for _, tc := range []struct {
			name   string
			filter store.AttributeFilter
			keep   func(a map[string]any) bool
		}{
			{"rare", store.AttributeFilter{Op: "eq", Key: "rare", Value: "yes"}, func(a map[string]any) bool { return a["rare"] == "yes" }},
			{"ne", store.AttributeFilter{Op: "ne", Key: "lang", Value: "en"}, func(a map[string]any) bool { return a["lang"] != "en" }},
			{"range", store.AttributeFilter{Op: "and", Filters: []store.AttributeFilter{
				{Op: "gte", Key: "year", Value: float64(2010)}, {Op: "lt", Key: "year", Value: float64(2012)}}},
				func(a map[string]any) bool { y := a["year"].(float64); return y >= 2010 && y < 2012 }},
			{"or", store.AttributeFilter{Op: "or", Filters: []store.AttributeFilter{
				{Op: "eq", Key: "draft", Value: true}, {Op: "eq", Key: "lang", Value: "fr"}}},
				func(a map[string]any) bool { return a["draft"] == true || a["lang"] == "fr" }},
			{"missing key", store.AttributeFilter{Op: "ne", Key: "absent", Value: "x"}, func(map[string]any) bool { return false }},
			{"type mismatch", store.AttributeFilter{Op: "eq", Key: "year", Value: "2001"}, func(map[string]any) bool { return false }},
		} {
			f := tc.filter
			ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: q, Limit: 5, Filter: &f})
			want := exactTop(chunks, q, 5, func(c store.Chunk) bool { return tc.keep(c.Attributes) })
			if !slices.Equal(matchIDs(ms), want) {
				t.Fatalf("%s: got %v, want %v", tc.name, matchIDs(ms), want)
			}
		}
	})

	t.Run("MinScoreAndLimit", func(t *testing.T) {
		ix := newIndex(t)
		x, y, xy := []float32{1, 0}, []float32{0, 1}, []float32{1, 1}
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{chunkOf("vs_a", "f", 0, x, nil), chunkOf("vs_a", "f", 1, y, nil),
			chunkOf("vs_a", "f", 2, xy, nil), chunkOf("vs_a", "f", 3, []float32{-1, 0}, nil)}), "PutChunks")
		ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: x, Limit: 10, MinScore: 0.5})
		if got := matchIDs(ms); !slices.Equal(got, []string{"vs_a/f/0000", "vs_a/f/0002"}) {
			t.Fatalf("score ≥ 0.5: got %v", got)
		}
		if ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: x, Limit: 1}); len(ms) != 1 || ms[0].Score < 0.9999 {
			t.Fatalf("limit 1: got %+v", ms)
		}
		// Ties (x·y = 0 = x·(0,-1)) go by chunk ID.
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{chunkOf("vs_a", "e", 9, []float32{0, -1}, nil)}), "PutChunks")
		ms = search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: x, Limit: 4})
		if got := matchIDs(ms)[2:]; !slices.Equal(got, []string{"vs_a/e/0009", "vs_a/f/0001"}) {
			t.Fatalf("ties: got %v, want by ID", got)
		}
	})

	t.Run("StoresAreApart", func(t *testing.T) {
		ix := newIndex(t)
		vs := randomVectors(7, 40, 8)
		var a, b []store.Chunk
		for i, v := range vs {
			if i%2 == 0 {
				a = append(a, chunkOf("vs_a", "f", i, v, nil))
			} else {
				b = append(b, chunkOf("vs_b", "f", i, v, nil))
			}
		}
		noErr(t, ix.PutChunks(t.Context(), append(slices.Clone(a), b...)), "PutChunks")
		ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: vs[1], Limit: 50})
		if len(ms) != len(a) {
			t.Fatalf("store a: %d matches, want %d", len(ms), len(a))
		}
		for _, m := range ms {
			if m.StoreID != "vs_a" {
				t.Fatalf("a search of vs_a found %s of %s", m.ID, m.StoreID)
			}
		}
		both := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_b", "vs_a", "vs_b"}, Vector: vs[1], Limit: 5})
		sameTop(t, "both stores", both, exactTop(append(slices.Clone(a), b...), vs[1], 5, nil), minRecall)
		if ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_none"}, Vector: vs[1], Limit: 5}); len(ms) != 0 {
			t.Fatalf("an empty store found %v", matchIDs(ms))
		}
	})

	t.Run("DeletesReachTheSearch", func(t *testing.T) {
		ix := newIndex(t)
		vs := randomVectors(8, 30, 8)
		var chunks []store.Chunk
		for i, v := range vs {
			chunks = append(chunks, chunkOf("vs_a", fmt.Sprintf("file_%d", i%3), i, v, nil))
		}
		noErr(t, ix.PutChunks(t.Context(), chunks), "PutChunks")
		search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: vs[0], Limit: 50}) // a search before, so a cache would hold them
		n, err := ix.DeleteFileChunks(t.Context(), "vs_a", "file_0")
		noErr(t, err, "DeleteFileChunks")
		if n != 10 {
			t.Fatalf("DeleteFileChunks removed %d, want 10", n)
		}
		for _, m := range search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: vs[0], Limit: 50}) {
			if m.FileID == "file_0" {
				t.Fatalf("a deleted file's chunk %s is still found", m.ID)
			}
		}
		if n, _ := ix.CountChunks(t.Context(), "vs_a", "file_0"); n != 0 {
			t.Fatalf("CountChunks of a deleted file: %d", n)
		}
		// A chunk put after a search is found by the next one.
		extra := chunkOf("vs_a", "file_9", 99, vs[0], nil)
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{extra}), "PutChunks")
		if ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: vs[0], Limit: 1}); len(ms) != 1 || ms[0].ID != extra.ID {
			t.Fatalf("a chunk put after a search: got %v", matchIDs(ms))
		}
		n, err = ix.DeleteStoreChunks(t.Context(), "vs_a")
		noErr(t, err, "DeleteStoreChunks")
		if n != 21 {
			t.Fatalf("DeleteStoreChunks removed %d, want 21", n)
		}
		if ms := search(t, ix, store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: vs[0], Limit: 50}); len(ms) != 0 {
			t.Fatalf("a deleted store still finds %v", matchIDs(ms))
		}
	})

	t.Run("TextSearch", func(t *testing.T) {
		ix := newIndex(t)
		texts := []struct {
			store, file, text, team string
		}{
			{"vs_a", "f0", "The KX-4410 router resets itself when a firmware update fails halfway.", "net"},
			{"vs_a", "f1", "Battery care for the KX-4410: charge it fully before the first use.", "hw"},
			{"vs_a", "f1", "Lodging is reimbursed up to 180 euros per night in every city.", "hr"},
			{"vs_a", "f2", "The canteen serves lentil soup on Mondays and Thursdays.", "hr"},
			{"vs_a", "f2", "Firmware notes: firmware 3.2 fixes the firmware updater.", "net"},
			{"vs_b", "f9", "The KX-4410 also appears in another store.", "net"},
		}
		vs := randomVectors(11, len(texts), 8)
		var chunks []store.Chunk
		for i, x := range texts {
			c := chunkOf(x.store, x.file, i, vs[i], map[string]any{"team": x.team})
			c.Text = x.text
			chunks = append(chunks, c)
		}
		noErr(t, ix.PutChunks(t.Context(), chunks), "PutChunks")
		text := func(q store.TextQuery) []string {
			t.Helper()
			ms, err := ix.SearchChunksText(t.Context(), q)
			noErr(t, err, "SearchChunksText")
			for i, m := range ms {
				if i > 0 && (m.Score > ms[i-1].Score || m.Score == ms[i-1].Score && m.ID < ms[i-1].ID) {
					t.Fatalf("text matches out of order at %d: %v then %v", i, ms[i-1].Score, m.Score)
				}
				c := chunks[m.Ordinal]
				if m.ID != c.ID || m.Text != c.Text || m.FileID != c.FileID || m.StoreID != c.StoreID || m.Attributes["team"] != c.Attributes["team"] {
					t.Fatalf("text match %s carries %+v, want the chunk as put", m.ID, m.Chunk)
				}
			}
			return matchIDs(ms)
		}
		a := []string{"vs_a"}
		// A rare term outranks a common one said three times.
		if got := text(store.TextQuery{StoreIDs: a, Text: "router firmware", Limit: 10}); !slices.Equal(got, []string{chunks[0].ID, chunks[4].ID}) {
			t.Fatalf("router firmware: got %v, want %s then %s", got, chunks[0].ID, chunks[4].ID)
		}
		got := text(store.TextQuery{StoreIDs: a, Text: "kx 4410 firmware", Limit: 10})
		if want := []string{chunks[0].ID, chunks[1].ID, chunks[4].ID}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			t.Fatalf("kx 4410 firmware: got %v, want the chunks holding any of the terms, %v", got, want)
		}
		if again := text(store.TextQuery{StoreIDs: a, Text: "  Firmware, KX-4410!? ", Limit: 10}); !slices.Equal(again, got) {
			t.Fatalf("the same terms in another case and punctuation: got %v, want %v", again, got)
		}
		if got := text(store.TextQuery{StoreIDs: a, Text: "router firmware", Limit: 1}); !slices.Equal(got, []string{chunks[0].ID}) {
			t.Fatalf("limit 1: got %v", got)
		}
		hw := &store.AttributeFilter{Op: "eq", Key: "team", Value: "hw"}
		if got := text(store.TextQuery{StoreIDs: a, Text: "kx 4410 firmware", Limit: 1, Filter: hw}); !slices.Equal(got, []string{chunks[1].ID}) {
			t.Fatalf("filtered before the limit: got %v, want %s", got, chunks[1].ID)
		}
		if got := text(store.TextQuery{StoreIDs: []string{"vs_a", "vs_b"}, Text: "4410", Limit: 10}); len(got) != 3 {
			t.Fatalf("two stores: got %v, want the 3 chunks naming 4410", got)
		}
		if got := text(store.TextQuery{StoreIDs: []string{"vs_b"}, Text: "lentil", Limit: 10}); len(got) != 0 {
			t.Fatalf("another store's words: got %v", got)
		}
		for _, q := range []string{"zeppelin", "?!", ""} {
			if got := text(store.TextQuery{StoreIDs: a, Text: q, Limit: 10}); len(got) != 0 {
				t.Fatalf("%q: got %v, want nothing", q, got)
			}
		}
		// Changes reach the text index: attributes, a replaced chunk, deletes.
		_, err := ix.SetFileAttributes(t.Context(), "vs_a", "f0", map[string]any{"team": "hw"})
		noErr(t, err, "SetFileAttributes")
		chunks[0].Attributes = map[string]any{"team": "hw"}
		if got := text(store.TextQuery{StoreIDs: a, Text: "router", Limit: 10, Filter: hw}); !slices.Equal(got, []string{chunks[0].ID}) {
			t.Fatalf("after SetFileAttributes: got %v", got)
		}
		chunks[3].Text = "The canteen now serves barley stew."
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{chunks[3]}), "PutChunks")
		if got := text(store.TextQuery{StoreIDs: a, Text: "lentil", Limit: 10}); len(got) != 0 {
			t.Fatalf("a replaced chunk's old words: got %v", got)
		}
		if got := text(store.TextQuery{StoreIDs: a, Text: "barley", Limit: 10}); !slices.Equal(got, []string{chunks[3].ID}) {
			t.Fatalf("a replaced chunk's new words: got %v", got)
		}
		_, err = ix.DeleteFileChunks(t.Context(), "vs_a", "f1")
		noErr(t, err, "DeleteFileChunks")
		if got := text(store.TextQuery{StoreIDs: a, Text: "battery lodging", Limit: 10}); len(got) != 0 {
			t.Fatalf("a deleted file's words: got %v", got)
		}
		_, err = ix.DeleteStoreChunks(t.Context(), "vs_a")
		noErr(t, err, "DeleteStoreChunks")
		if got := text(store.TextQuery{StoreIDs: a, Text: "kx 4410 firmware barley", Limit: 10}); len(got) != 0 {
			t.Fatalf("a deleted store's words: got %v", got)
		}
		if got := text(store.TextQuery{StoreIDs: []string{"vs_b"}, Text: "4410", Limit: 10}); len(got) != 1 {
			t.Fatalf("the other store after a delete: got %v", got)
		}
		for name, q := range map[string]store.TextQuery{
			"no store":   {Text: "x", Limit: 1},
			"limit 0":    {StoreIDs: a, Text: "x"},
			"limit 51":   {StoreIDs: a, Text: "x", Limit: store.MaxVectorResults + 1},
			"bad filter": {StoreIDs: a, Text: "x", Limit: 1, Filter: &store.AttributeFilter{Op: "like"}},
		} {
			_, err := ix.SearchChunksText(t.Context(), q)
			wantErr(t, err, store.ErrInvalidArgument, name)
		}
	})

	t.Run("BadQueriesAndChunks", func(t *testing.T) {
		ix := newIndex(t)
		noErr(t, ix.PutChunks(t.Context(), []store.Chunk{chunkOf("vs_a", "f", 0, []float32{1, 2, 3}, nil)}), "PutChunks")
		q := store.VectorQuery{StoreIDs: []string{"vs_a"}, Vector: []float32{1, 2, 3}, Limit: 1}
		for name, mod := range map[string]func(*store.VectorQuery){
			"no store":         func(q *store.VectorQuery) { q.StoreIDs = nil },
			"no vector":        func(q *store.VectorQuery) { q.Vector = nil },
			"limit 0":          func(q *store.VectorQuery) { q.Limit = 0 },
			"limit 51":         func(q *store.VectorQuery) { q.Limit = store.MaxVectorResults + 1 },
			"other dimensions": func(q *store.VectorQuery) { q.Vector = []float32{1, 2} },
			"unknown op":       func(q *store.VectorQuery) { q.Filter = &store.AttributeFilter{Op: "like", Key: "k", Value: "v"} },
			"gt on a string":   func(q *store.VectorQuery) { q.Filter = &store.AttributeFilter{Op: "gt", Key: "k", Value: "v"} },
			"empty compound":   func(q *store.VectorQuery) { q.Filter = &store.AttributeFilter{Op: "and"} },
			"no key":           func(q *store.VectorQuery) { q.Filter = &store.AttributeFilter{Op: "eq", Value: "v"} },
		} {
			bad := q
			mod(&bad)
			_, err := ix.SearchChunks(t.Context(), bad)
			wantErr(t, err, store.ErrInvalidArgument, name)
		}
		deep := store.AttributeFilter{Op: "eq", Key: "k", Value: "v"}
		for range 9 {
			deep = store.AttributeFilter{Op: "and", Filters: []store.AttributeFilter{deep}}
		}
		bad := q
		bad.Filter = &deep
		_, err := ix.SearchChunks(t.Context(), bad)
		wantErr(t, err, store.ErrInvalidArgument, "filters 10 deep")

		tooMany := map[string]any{}
		for i := range store.MaxAttributes + 1 {
			tooMany[fmt.Sprintf("k%d", i)] = "v"
		}
		for name, c := range map[string]store.Chunk{
			"no id":         {StoreID: "vs_a", FileID: "f", Vector: []float32{1, 2, 3}},
			"no vector":     chunkOf("vs_a", "f", 1, nil, nil),
			"17 attributes": chunkOf("vs_a", "f", 1, []float32{1, 2, 3}, tooMany),
			"a list value":  chunkOf("vs_a", "f", 1, []float32{1, 2, 3}, map[string]any{"k": []string{"a"}}),
			"a long string": chunkOf("vs_a", "f", 1, []float32{1, 2, 3}, map[string]any{"k": string(make([]byte, store.MaxAttributeString+1))}),
		} {
			wantErr(t, ix.PutChunks(t.Context(), []store.Chunk{c}), store.ErrInvalidArgument, name)
		}
		if n, _ := ix.CountChunks(t.Context(), "vs_a", ""); n != 1 {
			t.Fatalf("refused chunks left %d chunks, want the 1 put", n)
		}
	})
}
