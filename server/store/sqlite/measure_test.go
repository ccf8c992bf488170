package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
)

// TestMeasureListLatency reports ListConversations and ListMessages latency
// for one user with 10,000 conversations and 100,000 messages (DESIGN's web
// history at a heavy user's scale). It is a measurement, not a check: run
// with PARLEY_MEASURE=1 go test -run MeasureList -v ./server/store/sqlite
func TestMeasureListLatency(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("set PARLEY_MEASURE=1 to measure")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := db.Store()
	user := "heavy"
	if err := s.Accounts.CreateUser(ctx, store.User{ID: user, Email: "heavy@example.com", Tier: store.TierPro, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	base := time.Now().Add(-24 * time.Hour)
	convs := make([]string, 10_000)
	for i := range convs {
		convs[i] = uuid.Must(uuid.NewV7()).String()
		at := base.Add(time.Duration(i) * time.Second)
		if err := s.Conversations.Create(ctx, store.Conversation{ID: convs[i], UserID: user, Title: fmt.Sprint("c", i), Model: "sim-small", CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
		for j := range 10 {
			if err := s.Messages.Append(ctx, store.Message{ID: uuid.Must(uuid.NewV7()).String(), ConversationID: convs[i], Role: "user",
				Parts: []store.Part{{Text: "a message of a few words, as people write them"}}, CreatedAt: at.Add(time.Duration(j) * time.Millisecond)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("seeded 10,000 conversations and 100,000 messages in %v", time.Since(start).Round(time.Millisecond))

	measure := func(name string, n int, f func(i int)) {
		d := make([]time.Duration, n)
		for i := range n {
			t0 := time.Now()
			f(i)
			d[i] = time.Since(t0)
		}
		slices.Sort(d)
		t.Logf("%-42s p50 %8v  p99 %8v", name, d[n/2].Round(time.Microsecond), d[n*99/100].Round(time.Microsecond))
	}
	measure("ListConversations first page (50)", 500, func(int) {
		if _, _, err := s.Conversations.List(ctx, user, store.ConversationFilter{}, store.PageRequest{Size: 50}); err != nil {
			t.Fatal(err)
		}
	})
	_, deep, _ := s.Conversations.List(ctx, user, store.ConversationFilter{}, store.PageRequest{Size: 5000})
	measure("ListConversations page after 5,000 (50)", 500, func(int) {
		if _, _, err := s.Conversations.List(ctx, user, store.ConversationFilter{}, store.PageRequest{Size: 50, Cursor: deep}); err != nil {
			t.Fatal(err)
		}
	})
	measure("ListMessages of a conversation (10)", 2000, func(i int) {
		if _, _, err := s.Messages.List(ctx, convs[i*7%len(convs)], store.PageRequest{Size: 50}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMeasureVectorSearch reports SearchChunks latency over one vector store
// of 10,000 and 100,000 chunks of 512 dimensions (the sim's embeddings), the
// first search (which reads the store's vectors) apart from the rest, with
// and without an attribute filter. A measurement, not a check: run with
// PARLEY_MEASURE=1 go test -run MeasureVector -v ./server/store/sqlite
func TestMeasureVectorSearch(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE") == "" {
		t.Skip("set PARLEY_MEASURE=1 to measure")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ix := db.Vectors()
	const dims = 512
	rng := uint64(1)
	next := func() float32 { // xorshift: reproducible and cheap
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return float32(int64(rng>>11)%2001-1000) / 1000
	}
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = next()
		}
		return v
	}
	have := 0
	for _, size := range []int{10_000, 100_000} {
		store_ := fmt.Sprint("vs_", size)
		start := time.Now()
		for have = 0; have < size; {
			batch := make([]store.Chunk, 0, 1000)
			for range 1000 {
				batch = append(batch, store.Chunk{ID: fmt.Sprintf("%s_%07d", store_, have), StoreID: store_, FileID: fmt.Sprint("file_", have/100),
					Ordinal: have % 100, Text: "a passage of a file", Vector: vec(), Attributes: map[string]any{"year": float64(2000 + have%25)}})
				have++
			}
			if err := ix.PutChunks(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%d chunks of %d dimensions put in %v", size, dims, time.Since(start).Round(time.Millisecond))
		q := store.VectorQuery{StoreIDs: []string{store_}, Limit: 10}
		t0 := time.Now()
		q.Vector = vec()
		if _, err := ix.SearchChunks(ctx, q); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d chunks: the first search (reads the vectors) %v", size, time.Since(t0).Round(time.Microsecond))
		for _, filtered := range []bool{false, true} {
			q.Filter = nil
			name := "no filter"
			if filtered {
				q.Filter = &store.AttributeFilter{Op: "gte", Key: "year", Value: float64(2020)}
				name = "year ≥ 2020 (1 in 5)"
			}
			d := make([]time.Duration, 50)
			for i := range d {
				q.Vector = vec()
				t0 := time.Now()
				if _, err := ix.SearchChunks(ctx, q); err != nil {
					t.Fatal(err)
				}
				d[i] = time.Since(t0)
			}
			slices.Sort(d)
			t.Logf("%d chunks, top 10, %-22s p50 %8v  p99 %8v (50 searches)", size, name, d[25].Round(time.Microsecond), d[49].Round(time.Microsecond))
		}
	}
}
