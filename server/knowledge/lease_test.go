package knowledge

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
	"github.com/parleyhq/parley/server/tokenize"
)

// slowEmbedder stands in for the embedding model: it takes a while per
// batch and counts the inputs it embedded.
type slowEmbedder struct {
	delay  time.Duration
	inputs atomic.Int64
}

func (e *slowEmbedder) Embed(ctx context.Context, req chat.EmbedRequest) (*chat.EmbedOutcome, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(e.delay):
	}
	e.inputs.Add(int64(len(req.Inputs)))
	out := &chat.EmbedOutcome{}
	for range req.Inputs {
		out.Vectors = append(out.Vectors, []float32{1, 0, 0})
	}
	return out, nil
}

type textFiles struct{ text string }

func (f textFiles) Get(context.Context, string, string) (store.Attachment, error) {
	return store.Attachment{}, nil
}

func (f textFiles) Part(context.Context, string, string) (llm.Part, error) {
	return llm.Part{Document: &llm.Document{Filename: "long.txt", MimeType: "text/plain", Text: f.text}}, nil
}

// leaseSetup is a SQLite store with one user and a store of one file that
// takes about 12 batches of 25 ms to ingest: ten times a 30 ms lease.
func leaseSetup(t *testing.T) (store.Store, *Service, *slowEmbedder, store.VectorStoreFile) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := db.Store()
	now := time.Now()
	u := store.User{ID: uuid.NewString(), Email: "lease@example.com", PasswordHash: "$argon2id$x", Tier: store.TierFree, CreatedAt: now}
	if err := s.Accounts.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	v := store.VectorStore{ID: uuid.NewString(), UserID: u.ID, Name: "long", EmbeddingModel: "sim-embed", CreatedAt: now, LastActiveAt: now}
	f := store.VectorStoreFile{StoreID: v.ID, FileID: uuid.NewString(), UserID: u.ID, Status: store.FileInProgress,
		ChunkTokens: 100, OverlapTokens: 0, CreatedAt: now}
	if err := s.VectorStores.CreateVectorStore(t.Context(), v, []store.VectorStoreFile{f}); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i := range 240 {
		text.WriteString("Sentence number " + strings.Repeat("x", i%7+1) + " of a long file about the harbour. ")
	}
	emb := &slowEmbedder{delay: 25 * time.Millisecond}
	svc := &Service{Stores: s.VectorStores, Index: db.Vectors(), Files: textFiles{text.String()}, Embed: emb,
		Tokens: tokenize.Default(), Now: time.Now, Config: Config{Lease: 30 * time.Millisecond, BatchInputs: 1}}
	return s, svc, emb, f
}

// A file whose ingestion outlasts the lease many times over is renewed:
// another gateway polling for work never gets it, every chunk is embedded
// (and so charged) once, and the file completes.
func TestIngestionRenewsItsClaim(t *testing.T) {
	s, svc, emb, f := leaseSetup(t)
	claims, err := s.VectorStores.ClaimIngestion(t.Context(), time.Now(), svc.Config.Lease, 1)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %v %v", claims, err)
	}
	stop := make(chan struct{})
	var stolen atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { // the other gateway
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			got, err := s.VectorStores.ClaimIngestion(context.Background(), time.Now(), svc.Config.Lease, 1)
			if err == nil && len(got) > 0 {
				stolen.Add(1)
			}
		}
	})
	start := time.Now()
	svc.Ingest(t.Context(), claims[0])
	took := time.Since(start)
	close(stop)
	wg.Wait()
	got, err := s.VectorStores.GetVectorStoreFile(t.Context(), f.UserID, f.StoreID, f.FileID)
	if err != nil {
		t.Fatal(err)
	}
	if took < 5*svc.Config.Lease {
		t.Fatalf("the ingestion took %v, not the several leases the test needs", took)
	}
	if stolen.Load() != 0 || got.Status != store.FileCompleted || int64(got.Chunks) != emb.inputs.Load() {
		t.Fatalf("after %v: claimed by the other gateway %d times; file %s with %d chunks; %d inputs embedded",
			took, stolen.Load(), got.Status, got.Chunks, emb.inputs.Load())
	}
}

// A file removed while it is ingested loses the claim at the next renewal:
// the ingestion stops early and leaves no chunk behind.
func TestIngestionStopsWhenItsClaimIsLost(t *testing.T) {
	s, svc, emb, f := leaseSetup(t)
	claims, err := s.VectorStores.ClaimIngestion(t.Context(), time.Now(), svc.Config.Lease, 1)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %v %v", claims, err)
	}
	time.AfterFunc(60*time.Millisecond, func() {
		if err := s.VectorStores.RemoveVectorStoreFile(context.Background(), f.UserID, f.StoreID, f.FileID); err != nil {
			t.Error(err)
		}
	})
	svc.Ingest(t.Context(), claims[0])
	n, err := svc.Index.CountChunks(t.Context(), f.StoreID, f.FileID)
	if err != nil {
		t.Fatal(err)
	}
	total := len(svc.Tokens.Split(func() string { p, _ := svc.Files.Part(t.Context(), "", ""); return p.Document.Text }(), 100, 0))
	if n != 0 || emb.inputs.Load() >= int64(total) {
		t.Fatalf("after the removal: %d chunks left, %d of %d inputs embedded", n, emb.inputs.Load(), total)
	}
}
