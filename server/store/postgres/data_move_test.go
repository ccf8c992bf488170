package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/internal/wait"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/postgres"
)

// A logical data shard moved between data clusters while two gateways
// write its users' messages and others': no message is lost or doubled
// (each conversation holds exactly the messages the writers were told
// were stored), what the shard's users had before (a memory, a share, an
// attachment, an audit event, a vector store) is read through both
// gateways after, the
// shard's rows end on the new cluster only, and only the shard's users
// wait (the pause is measured; the others' slowest write is reported
// beside it).
func TestMoveDataShardUnderLoad(t *testing.T) {
	if os.Getenv(EnvURL) == "" {
		t.Skipf("%s not set", EnvURL)
	}
	t.Parallel()
	names := make([]string, 2)
	for i := range names {
		names[i] = "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		schemaDB(t, names[i], true)
	}
	// A gateway: the two data schemas (the first the accounts one), its own
	// handles, shard map and owners cache.
	gateway := func() (*postgres.DB, store.Store) {
		db := schemaDB(t, names[0], false)
		db.WithDataShards([]*postgres.DB{db, schemaDB(t, names[1], false)})
		if err := db.LoadDataShards(t.Context()); err != nil {
			t.Fatal(err)
		}
		return db, db.Store()
	}
	_, g1 := gateway()
	_, g2 := gateway()
	admin, _ := gateway()
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)

	// 6 users in one shard of cluster 0, 6 elsewhere, each with a
	// conversation; the shard's users also with a memory, a share, an
	// attachment and an audit event.
	var moving, others []string
	shard := -1
	for len(moving) < 6 || len(others) < 6 {
		id := uuid.Must(uuid.NewV7()).String()
		s := postgres.DataShard(id)
		if shard < 0 && s < postgres.DataShards/2 {
			shard = s
		}
		if s == shard && len(moving) < 6 {
			moving = append(moving, id)
		} else if s != shard && len(others) < 6 {
			others = append(others, id)
		}
	}
	conv := map[string]string{}
	shares, files, stores := map[string]string{}, map[string]string{}, map[string]string{}
	for _, u := range append(slices.Clone(moving), others...) {
		if err := g1.Accounts.CreateUser(ctx, store.User{ID: u, Email: u + "@example.com", PasswordHash: "x", Tier: store.TierFree, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		c := store.Conversation{ID: uuid.Must(uuid.NewV7()).String(), UserID: u, Title: "moving", Model: "m", CreatedAt: now, UpdatedAt: now}
		if err := g1.Conversations.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		conv[u] = c.ID
		if !slices.Contains(moving, u) {
			continue
		}
		if err := g1.Memories.Create(ctx, store.Memory{ID: uuid.NewString(), UserID: u, Text: "likes tea", CreatedAt: now, UpdatedAt: now}, 100); err != nil {
			t.Fatal(err)
		}
		sh, err := g1.Shares.Put(ctx, store.Share{ID: strings.ReplaceAll(uuid.NewString(), "-", "")[:22], UserID: u, ConversationID: c.ID, Snapshot: []byte(`{}`), CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		shares[u] = sh.ID
		a := store.Attachment{ID: uuid.NewString(), UserID: u, Filename: "cat.png", MimeType: "image/png", SizeBytes: 10,
			SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Status: store.AttachmentUploading,
			CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
		if err := g1.Attachments.Create(ctx, a, 1<<20); err != nil {
			t.Fatal(err)
		}
		files[u] = a.ID
		if err := g1.Audit.Append(ctx, store.AuditEvent{ID: uuid.NewString(), UserID: u, Kind: store.AuditLoginSuccess, At: now}); err != nil {
			t.Fatal(err)
		}
		vs := store.VectorStore{ID: uuid.NewString(), UserID: u, Name: "docs", EmbeddingModel: "embed-1", CreatedAt: now, LastActiveAt: now}
		if err := g1.VectorStores.CreateVectorStore(ctx, vs, []store.VectorStoreFile{{FileID: "f1", Status: store.FileInProgress, ChunkTokens: 800, OverlapTokens: 400, CreatedAt: now}}); err != nil {
			t.Fatal(err)
		}
		stores[u] = vs.ID
	}

	var (
		mu     sync.Mutex
		stored = map[string][]string{} // user → message IDs the writers were told were stored
	)
	m, slowMoving, slowRest := moveUnderLoad(t, []store.Store{g1, g2}, moving, others, func(g store.Store, u string, w, i int) error {
		t0 := time.Now()
		msg := store.Message{ID: uuid.Must(uuid.NewV7()).String(), ConversationID: conv[u], Role: "user",
			Parts: []store.Part{{Text: fmt.Sprintf("message %d of writer %d", i, w)}}, CreatedAt: t0}
		if err := g.Messages.Append(ctx, msg); err != nil {
			return fmt.Errorf("Append: %w", err)
		}
		if err := g.Conversations.Touch(ctx, u, conv[u], t0, ""); err != nil {
			return fmt.Errorf("Touch: %w", err)
		}
		mu.Lock()
		stored[u] = append(stored[u], msg.ID)
		mu.Unlock()
		return nil
	}, func() (postgres.ShardMove, error) { return admin.MoveDataShard(ctx, shard, 1) })
	total := 0
	for _, ids := range stored {
		total += len(ids)
	}
	t.Logf("data shard %d moved from cluster %d to %d: %d users, %d rows; writes paused %v; slowest write of its users %v, of the others %v; %d messages in all",
		m.Shard, m.From, m.To, m.Users, m.Rows, m.Paused.Round(time.Millisecond), slowMoving.Round(time.Millisecond), slowRest.Round(time.Millisecond), total)
	if m.Users != len(moving) || m.From != 0 || m.To != 1 {
		t.Fatalf("moved %d users from cluster %d to %d; want %d from 0 to 1", m.Users, m.From, m.To, len(moving))
	}
	for gi, g := range []store.Store{g1, g2} {
		for _, u := range append(slices.Clone(moving), others...) {
			var got []string
			for cursor := ""; ; {
				page, next, err := g.Messages.List(ctx, conv[u], store.PageRequest{Size: store.MaxPageSize, Cursor: cursor})
				if err != nil {
					t.Fatalf("gateway %d: List: %v", gi+1, err)
				}
				for _, msg := range page {
					got = append(got, msg.ID)
				}
				if cursor = next; cursor == "" {
					break
				}
			}
			want := slices.Clone(stored[u])
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("gateway %d, user %s: %d messages stored, %d told stored (lost or doubled)", gi+1, u, len(got), len(want))
			}
			if _, err := g.Conversations.Get(ctx, u, conv[u]); err != nil {
				t.Fatalf("gateway %d, user %s: the conversation: %v", gi+1, u, err)
			}
			if !slices.Contains(moving, u) {
				continue
			}
			if mems, _, err := g.Memories.List(ctx, u, store.PageRequest{}); err != nil || len(mems) != 1 {
				t.Fatalf("gateway %d, user %s: memories %v (%v)", gi+1, u, mems, err)
			}
			if sh, err := g.Shares.Get(ctx, shares[u]); err != nil || sh.UserID != u {
				t.Fatalf("gateway %d, user %s: share %+v (%v)", gi+1, u, sh, err)
			}
			if a, err := g.Attachments.Get(ctx, u, files[u]); err != nil || a.SizeBytes != 10 {
				t.Fatalf("gateway %d, user %s: attachment %+v (%v)", gi+1, u, a, err)
			}
			if evs, _, err := g.Audit.List(ctx, u, store.PageRequest{}); err != nil || len(evs) != 1 {
				t.Fatalf("gateway %d, user %s: audit events %v (%v)", gi+1, u, evs, err)
			}
			if fs, _, err := g.VectorStores.ListVectorStoreFiles(ctx, u, stores[u], store.VectorStoreFilter{}, store.PageRequest{}); err != nil || len(fs) != 1 {
				t.Fatalf("gateway %d, user %s: the vector store's files %v (%v)", gi+1, u, fs, err)
			}
		}
	}
	// The old cluster holds nothing of the shard's users any more; the new
	// one holds their conversations.
	old, moved := schemaDB(t, names[0], false), schemaDB(t, names[1], false)
	for _, u := range moving {
		for _, table := range []string{"conversations", "memories", "shares", "attachments", "audit_log", "vector_stores", "vector_store_files"} {
			if n, err := old.CountWhere(ctx, table, "user_id", u); err != nil || n != 0 {
				t.Fatalf("the old cluster's %s still holds %d rows of moved user %s (%v)", table, n, u, err)
			}
		}
		if n, err := old.CountWhere(ctx, "messages", "conversation_id", conv[u]); err != nil || n != 0 {
			t.Fatalf("the old cluster still holds %d messages of moved user %s (%v)", n, u, err)
		}
		if n, err := moved.CountWhere(ctx, "messages", "conversation_id", conv[u]); err != nil || n != int64(len(stored[u])) {
			t.Fatalf("the new cluster holds %d messages of moved user %s, want %d (%v)", n, u, len(stored[u]), err)
		}
	}

	// What a move that stopped after its map change leaves on the old
	// cluster (here: a moved user's upload, put back and made to look
	// expired) is not swept there, and the move run again deletes it.
	u := moving[0]
	if err := old.ExecRaw(ctx, fmt.Sprintf(`INSERT INTO %s.attachments SELECT * FROM %s.attachments WHERE user_id = $1`, names[0], names[1]), u); err != nil {
		t.Fatal(err)
	}
	if err := old.ExecRaw(ctx, `UPDATE attachments SET expires_at = 1 WHERE user_id = $1`, u); err != nil {
		t.Fatal(err)
	}
	if expired, err := g1.Attachments.ExpireUploads(ctx, time.Now()); err != nil || len(expired) != 0 {
		t.Fatalf("swept %v (%v) of a shard the cluster gave up", expired, err)
	}
	again, err := admin.MoveDataShard(ctx, shard, 1)
	if err != nil || again.From != 1 || again.To != 1 {
		t.Fatalf("the move again: %+v, %v", again, err)
	}
	if n, err := old.CountWhere(ctx, "attachments", "user_id", u); err != nil || n != 0 {
		t.Fatalf("the move again left %d of the moved user's uploads on the old cluster (%v)", n, err)
	}
	if a, err := g2.Attachments.Get(ctx, u, files[u]); err != nil || a.Status != store.AttachmentUploading {
		t.Fatalf("the moved upload after the move again: %+v (%v)", a, err)
	}
}

// A data cluster's read replica serves its users' listings that tolerate
// lag, fenced there too: when the user's shard moves to another cluster, a
// gateway whose map still names the old one never reads the old replica's
// emptied copy. Its replica either still has the rows (it has not replayed
// the move's fence, which comes before the rows' deletion) or refuses the
// shard, and the gateway reads the map again. Cluster 0 is a schema of the
// test PostgreSQL, cluster 1 one of the HA primary with its streaming
// replica (PARLEY_SERVICES_PGHA=1).
func TestDataShardReplicaFollowsAMove(t *testing.T) {
	env := needEnv(t, EnvURL, EnvHAPrimaryURL, EnvReplicaURL)
	ctx := t.Context()
	names := []string{"t_" + strings.ReplaceAll(uuid.NewString(), "-", ""), "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")}
	schemaDB(t, names[0], true)
	open := func(replicas bool) *postgres.DB {
		opts := postgres.Options{Schema: names[1], MaxConns: 4}
		if replicas {
			opts.ReadURLs, opts.MaxReplicaLag, opts.ReplicaCheckEvery = []string{env[2]}, 3*time.Second, 50*time.Millisecond
		}
		db, err := postgres.Open(ctx, env[1], opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	ha := open(false)
	t.Cleanup(func() { _ = ha.DropSchema(context.Background(), names[1]) })
	if err := ha.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	gateway := func(replicas bool) *postgres.DB {
		db := schemaDB(t, names[0], false)
		db.WithDataShards([]*postgres.DB{db, open(replicas)})
		if err := db.LoadDataShards(ctx); err != nil {
			t.Fatal(err)
		}
		return db
	}
	g, admin := gateway(true), gateway(false)
	reg := prometheus.NewRegistry()
	replica := g.DataCluster(1)
	reg.MustRegister(replica.Collectors()...)
	ru, err := url.Parse(env[2])
	if err != nil {
		t.Fatal(err)
	}
	replicaName := ru.Host
	reads := func() float64 {
		return metric(t, reg, "parley_postgres_stale_reads_total", map[string]string{"server": replicaName})
	}

	user := ""
	for user == "" || postgres.DataShard(user) < postgres.DataShards/2 {
		user = uuid.Must(uuid.NewV7()).String()
	}
	now := time.Now().UTC()
	s := g.Store()
	c := store.Conversation{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Title: "on a replica", Model: "m", CreatedAt: now, UpdatedAt: now}
	if err := s.Conversations.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	stale := store.AllowStale(ctx)
	list := func(ctx context.Context) ([]store.Conversation, error) {
		cs, _, err := s.Conversations.List(ctx, user, store.ConversationFilter{}, store.PageRequest{})
		return cs, err
	}
	wait.For(t, 10*time.Second, "the data cluster's replica to serve the listing", func() bool {
		before := reads()
		cs, err := list(stale)
		return err == nil && len(cs) == 1 && reads() == before+1
	})

	m, err := admin.MoveDataShard(ctx, postgres.DataShard(user), 0)
	if err != nil || m.From != 1 || m.Users != 1 {
		t.Fatalf("MoveDataShard: %+v, %v", m, err)
	}
	// The gateway's map names cluster 1 for up to 5 s more: every stale
	// listing in that time still finds the conversation.
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		cs, err := list(stale)
		if err != nil || len(cs) != 1 || cs[0].ID != c.ID {
			t.Fatalf("a stale listing after the move: %v (%v), want the conversation", cs, err)
		}
	}
	if n, err := ha.CountWhere(ctx, "conversations", "user_id", user); err != nil || n != 0 {
		t.Fatalf("the old cluster holds %d of the moved user's conversations (%v)", n, err)
	}
}
