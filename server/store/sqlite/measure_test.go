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
