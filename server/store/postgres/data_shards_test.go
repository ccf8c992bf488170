package postgres_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/postgres"
	"github.com/parleyhq/parley/server/store/storetest"
)

// openData returns a store whose users' data is spread over two schemas
// (logical data shards 0–31 in the accounts' schema, 32–63 in the other),
// as several URLs in --postgres-url spread it over clusters.
func openData(t *testing.T) (accounts, other *postgres.DB) {
	accounts, other = open(t), open(t)
	accounts.WithDataShards([]*postgres.DB{accounts, other})
	if err := accounts.LoadDataShards(t.Context()); err != nil {
		t.Fatal(err)
	}
	return accounts, other
}

func newDataStore(t *testing.T) store.Store { a, _ := openData(t); return a.Store() }

// Every store suite on the two data clusters.
func TestDataShardsStoreSuites(t *testing.T) {
	t.Parallel()
	for name, suite := range map[string]func(*testing.T, storetest.NewStore){
		"Accounts": storetest.TestAccounts, "Conversations": storetest.TestConversations, "Messages": storetest.TestMessages,
		"Ledger": storetest.TestLedger, "Usage": storetest.TestUsage, "Attachments": storetest.TestAttachments,
		"Audit": storetest.TestAudit, "Projects": storetest.TestProjects, "Memories": storetest.TestMemories,
		"Feedback": storetest.TestFeedback, "Prompts": storetest.TestPrompts, "Batches": storetest.TestBatches,
		"Webhooks": storetest.TestWebhooks, "Search": storetest.TestSearch, "SearchTitles": storetest.TestSearchTitles,
		"Shares": storetest.TestShares, "VectorStores": storetest.TestVectorStores, "UsageSummary": storetest.TestUsageSummary,
		"UserDirectory": storetest.TestUserDirectory, "Organizations": storetest.TestOrganizations,
		"Invitations": storetest.TestInvitations,
	} {
		t.Run(name, func(t *testing.T) { t.Parallel(); suite(t, newDataStore) })
	}
}

// Each user's rows (a conversation and its messages, an attachment, a
// share, a project, a memory, a saved prompt, a rating, an audit event, a
// vector store and its file)
// land on the cluster of the user's logical shard and on no other; users,
// sessions and keys stay on the accounts cluster; and every lookup that
// comes without a user (session, key, email, share link) finds its row.
func TestDataShardsPlaceEachUserOnOne(t *testing.T) {
	t.Parallel()
	accounts, other := openData(t)
	dbs := []*postgres.DB{accounts, other}
	s, ctx := accounts.Store(), t.Context()
	now := time.Now().Truncate(time.Millisecond)
	hash := func(v string) []byte { h := sha256.Sum256([]byte(v)); return h[:] }
	perCluster := make([]int, 2)
	type placed struct {
		user           store.User
		cluster        int
		share, session string
	}
	var users []placed
	for i := range 24 {
		u := store.User{ID: uuid.Must(uuid.NewV7()).String(), Email: uuid.NewString() + "@example.com", PasswordHash: "x", Tier: store.TierFree, CreatedAt: now}
		if err := s.Accounts.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		p := placed{user: u, cluster: postgres.DataShard(u.ID) * 2 / postgres.DataShards, session: u.ID + "-session"}
		perCluster[p.cluster]++
		if err := s.Accounts.CreateSession(ctx, store.Session{TokenHash: hash(p.session), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Accounts.CreateAPIKey(ctx, store.APIKey{ID: uuid.NewString(), UserID: u.ID, Name: "k", Prefix: "pk_", SecretHash: hash(u.ID + "-key"),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		c := store.Conversation{ID: uuid.Must(uuid.NewV7()).String(), UserID: u.ID, Title: "placed", Model: "m", CreatedAt: now, UpdatedAt: now}
		if err := s.Conversations.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			m := store.Message{ID: uuid.Must(uuid.NewV7()).String(), ConversationID: c.ID, Role: "user", Parts: []store.Part{{Text: "hello placed world"}},
				CreatedAt: now.Add(time.Duration(j) * time.Second)}
			if err := s.Messages.Append(ctx, m); err != nil {
				t.Fatal(err)
			}
			if j == 2 {
				if err := s.Feedback.PutRating(ctx, store.Rating{UserID: u.ID, ConversationID: c.ID, MessageID: m.ID, Model: "m", Good: i%2 == 0, UpdatedAt: now}); err != nil {
					t.Fatal(err)
				}
			}
		}
		a := store.Attachment{ID: uuid.NewString(), UserID: u.ID, Filename: "a.txt", MimeType: "text/plain", SizeBytes: 10,
			Status: store.AttachmentUploading, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.Attachments.Create(ctx, a, 1<<20); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Attachments.SetStatus(ctx, a.ID, store.AttachmentResult{Status: store.AttachmentReady}); err != nil {
			t.Fatalf("SetStatus, which names no user: %v", err)
		}
		sh, err := s.Shares.Put(ctx, store.Share{ID: strings.ReplaceAll(uuid.NewString(), "-", "")[:22], UserID: u.ID, ConversationID: c.ID, Snapshot: []byte("{}"), CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		p.share = sh.ID
		if err := s.Projects.Create(ctx, store.Project{ID: uuid.NewString(), UserID: u.ID, Name: "p", CreatedAt: now, UpdatedAt: now}, 10); err != nil {
			t.Fatal(err)
		}
		if err := s.Memories.Create(ctx, store.Memory{ID: uuid.NewString(), UserID: u.ID, Text: "likes tea", CreatedAt: now, UpdatedAt: now}, 10); err != nil {
			t.Fatal(err)
		}
		if err := s.Prompts.CreatePrompt(ctx, store.SavedPrompt{ID: uuid.NewString(), UserID: u.ID, Name: "p", Text: "t", UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.Audit.Append(ctx, store.AuditEvent{ID: uuid.NewString(), UserID: u.ID, Kind: store.AuditTierChanged, At: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.VectorStores.CreateVectorStore(ctx, store.VectorStore{ID: uuid.NewString(), UserID: u.ID, Name: "docs", EmbeddingModel: "e", CreatedAt: now, LastActiveAt: now},
			[]store.VectorStoreFile{{FileID: a.ID, Status: store.FileInProgress, ChunkTokens: 800, OverlapTokens: 400, CreatedAt: now}}); err != nil {
			t.Fatal(err)
		}
		users = append(users, p)
	}
	if perCluster[0] == 0 || perCluster[1] == 0 {
		t.Fatalf("24 users hashed to one cluster only: %v", perCluster)
	}
	perUser := map[string]int64{"conversations": 1, "attachments": 1, "shares": 1, "projects": 1, "memories": 1,
		"saved_prompts": 1, "message_feedback": 1, "audit_log": 1, "vector_stores": 1, "vector_store_files": 1}
	for _, p := range users {
		for table, rows := range perUser {
			for i, db := range dbs {
				n, err := db.CountWhere(ctx, table, "user_id", p.user.ID)
				want := rows
				if i != p.cluster {
					want = 0
				}
				if err != nil || n != want {
					t.Errorf("user on cluster %d: cluster %d holds %d %s rows (%v), want %d", p.cluster, i, n, table, err, want)
				}
			}
		}
		// The messages sit with their conversation.
		list, _, err := s.Conversations.List(ctx, p.user.ID, store.ConversationFilter{}, store.PageRequest{})
		if err != nil || len(list) != 1 {
			t.Fatalf("List: %d, %v", len(list), err)
		}
		for i, db := range dbs {
			n, err := db.CountWhere(ctx, "messages", "conversation_id", list[0].ID)
			if want := map[bool]int64{true: 3, false: 0}[i == p.cluster]; err != nil || n != want {
				t.Errorf("cluster %d holds %d of the conversation's messages (%v), want %d", i, n, err, want)
			}
		}
		msgs, _, err := s.Messages.List(ctx, list[0].ID, store.PageRequest{})
		if err != nil || len(msgs) != 3 {
			t.Errorf("Messages.List on the conversation's cluster: %d, %v", len(msgs), err)
		}
		hits, _, err := s.Search.Search(ctx, p.user.ID, []string{"placed"}, store.PageRequest{})
		if err != nil || len(hits) != 1 {
			t.Errorf("Search: %d hits, %v", len(hits), err)
		}
		// Lookups that name no user.
		if _, u, err := s.Accounts.GetSession(ctx, hash(p.session)); err != nil || u.ID != p.user.ID {
			t.Errorf("GetSession: %v, %v", u.ID, err)
		}
		if _, u, err := s.Accounts.GetAPIKeyByHash(ctx, hash(p.user.ID+"-key")); err != nil || u.ID != p.user.ID {
			t.Errorf("GetAPIKeyByHash: %v, %v", u.ID, err)
		}
		if u, err := s.Accounts.GetUserByEmail(ctx, strings.ToUpper(p.user.Email)); err != nil || u.ID != p.user.ID {
			t.Errorf("GetUserByEmail: %v, %v", u.ID, err)
		}
		// A share's ID names its shard: the first character.
		if len(p.share) != 22 || p.share[0] != "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[postgres.DataShard(p.user.ID)] {
			t.Errorf("share ID %q does not name shard %d", p.share, postgres.DataShard(p.user.ID))
		}
		if sh, err := s.Shares.Get(ctx, p.share); err != nil || sh.UserID != p.user.ID {
			t.Errorf("Shares.Get: %+v, %v", sh, err)
		}
	}
	for _, table := range []string{"users", "sessions", "api_keys"} {
		if n, err := other.Count(ctx, table); err != nil || n != 0 {
			t.Errorf("the second cluster holds %d %s rows (%v)", n, table, err)
		}
		if n, err := accounts.Count(ctx, table); err != nil || n != 24 {
			t.Errorf("the accounts cluster holds %d %s rows (%v), want 24", n, table, err)
		}
	}
	// An admin's counts span the clusters.
	counts, err := s.Feedback.CountRatings(ctx, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil || len(counts) != 1 || counts[0].Good != 12 || counts[0].Bad != 12 {
		t.Errorf("CountRatings over both clusters: %+v, %v", counts, err)
	}
	// A share ID naming another shard, or none, is not found.
	if _, err := s.Shares.Get(ctx, "!"+users[0].share[1:]); err == nil {
		t.Error("a share ID with no shard was found")
	}
}

// A gateway given the data clusters in another order refuses to start
// rather than look for users' rows in the wrong place.
func TestDataShardsRefuseAReorderedList(t *testing.T) {
	t.Parallel()
	accounts, other := openData(t)
	other.WithDataShards([]*postgres.DB{other, accounts})
	if err := other.LoadDataShards(t.Context()); err == nil || !strings.Contains(err.Error(), "keep the list's order") {
		t.Fatalf("a reordered list: %v", err)
	}
}

// Gateways starting at once on fresh clusters all start: each records the
// clusters' places and the shard maps, whichever writes them first.
func TestShardedClustersStartTogether(t *testing.T) {
	if os.Getenv(EnvURL) == "" {
		t.Skipf("%s not set", EnvURL)
	}
	t.Parallel()
	for round := range 3 {
		names := make([]string, 3)
		for i := range names {
			names[i] = "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
			schemaDB(t, names[i], true)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		start := make(chan struct{}) // as gateways leave the migration lock together
		for range 8 {
			db, data, billing := schemaDB(t, names[0], false), schemaDB(t, names[1], false), schemaDB(t, names[2], false)
			wg.Go(func() {
				<-start
				db.WithDataShards([]*postgres.DB{db, data})
				db.WithBillingShards([]*postgres.DB{data, billing})
				if err := db.LoadDataShards(t.Context()); err != nil {
					errs <- fmt.Errorf("round %d: LoadDataShards: %w", round, err)
				}
				if err := db.LoadLedgerMap(t.Context()); err != nil {
					errs <- fmt.Errorf("round %d: LoadLedgerMap: %w", round, err)
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// data_shard in SQL (the sweeps' filter) places every ID where DataShard
// does: UUIDs, the empty ID, and IDs beyond ASCII.
func TestDataShardSQLMatchesGo(t *testing.T) {
	db := open(t)
	ids := []string{"", "a", "ü-user", "用户", strings.Repeat("x", 300)}
	for range 500 {
		ids = append(ids, uuid.NewString())
	}
	for _, id := range ids {
		got, err := db.DataShardSQL(t.Context(), id)
		if err != nil || got != postgres.DataShard(id) {
			t.Fatalf("data_shard(%q) = %d (%v), DataShard = %d", id, got, err, postgres.DataShard(id))
		}
	}
}
