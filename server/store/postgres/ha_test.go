package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/server/internal/wait"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/postgres"
	"github.com/parleyhq/parley/server/store/storetest"
)

// The PostgreSQL HA set of scripts/services.sh (PARLEY_SERVICES_PGHA=1): a
// primary, a streaming replica of it, and PgBouncer in transaction mode in
// front of the primary.
const (
	EnvHAPrimaryURL = "PARLEY_TEST_PGHA_PRIMARY_URL"
	EnvReplicaURL   = "PARLEY_TEST_POSTGRES_REPLICA_URL"
	EnvPgBouncerURL = "PARLEY_TEST_PGBOUNCER_URL"
)

func needEnv(t testing.TB, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		v := os.Getenv(n)
		if v == "" {
			t.Skipf("%s not set (PARLEY_SERVICES_PGHA=1 scripts/services.sh up; eval \"$(scripts/services.sh env)\")", n)
		}
		out = append(out, v)
	}
	return out
}

// withDatabase returns the URL u naming database name instead.
func withDatabase(t testing.TB, u, name string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Path = "/" + name
	return p.String()
}

// adminExec runs one statement on the HA primary directly, in database
// (empty: the URL's).
func adminExec(t testing.TB, ctx context.Context, database, sql string) {
	t.Helper()
	admin := needEnv(t, EnvHAPrimaryURL)[0]
	if database != "" {
		admin = withDatabase(t, admin, database)
	}
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// bouncerDBs are the databases openPgBouncer made in this process: each
// test takes a free one (emptied) or makes another, and gives it back when
// it ends; TestMain drops them all. (A CREATE DATABASE and its migration
// cost about a second; emptying one costs a few milliseconds.)
var bouncerDBs struct {
	sync.Mutex
	free, all []string
}

// openPgBouncer returns a migrated, empty store reached through PgBouncer
// in transaction mode, in a database of its own while the test runs
// (PgBouncer passes no search_path, so a database isolates a test where a
// schema does direct).
func openPgBouncer(t testing.TB) *postgres.DB {
	t.Helper()
	bouncer := needEnv(t, EnvPgBouncerURL, EnvHAPrimaryURL)[0]
	bouncerDBs.Lock()
	name := ""
	if n := len(bouncerDBs.free); n > 0 {
		name, bouncerDBs.free = bouncerDBs.free[n-1], bouncerDBs.free[:n-1]
	}
	bouncerDBs.Unlock()
	if name == "" {
		name = "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		adminExec(t, t.Context(), "", `CREATE DATABASE `+name)
		bouncerDBs.Lock()
		bouncerDBs.all = append(bouncerDBs.all, name)
		bouncerDBs.Unlock()
	} else {
		adminExec(t, t.Context(), name, `DO $$ DECLARE ts text; BEGIN
			SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') INTO ts
			FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations';
			IF ts IS NOT NULL THEN EXECUTE 'TRUNCATE ' || ts || ' RESTART IDENTITY CASCADE'; END IF;
		END $$`)
	}
	db, err := postgres.Open(t.Context(), withDatabase(t, bouncer, name), postgres.Options{PgBouncer: true, MaxConns: 8})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		db.Close()
		bouncerDBs.Lock()
		bouncerDBs.free = append(bouncerDBs.free, name)
		bouncerDBs.Unlock()
	})
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

func TestMain(m *testing.M) {
	code := m.Run()
	if admin := os.Getenv(EnvHAPrimaryURL); admin != "" && len(bouncerDBs.all) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if c, err := pgx.Connect(ctx, admin); err == nil {
			for _, name := range bouncerDBs.all {
				_, _ = c.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			}
			c.Close(ctx)
		}
		cancel()
	}
	os.Exit(code)
}

// TestPgBouncer runs the conformance suites through PgBouncer 1.18 in
// transaction mode: every transaction may get another server connection, so
// nothing may rely on a session (named prepared statements, session locks).
func TestPgBouncer(t *testing.T) {
	t.Parallel()
	needEnv(t, EnvPgBouncerURL, EnvHAPrimaryURL)
	newStore := func(t *testing.T) store.Store { return openPgBouncer(t).Store() }
	newOutbox := func(t *testing.T) store.Store { return openPgBouncer(t).StoreWithOutbox() }
	for name, suite := range map[string]func(*testing.T){
		"Accounts":      func(t *testing.T) { storetest.TestAccounts(t, newStore) },
		"Conversations": func(t *testing.T) { storetest.TestConversations(t, newStore) },
		"Messages":      func(t *testing.T) { storetest.TestMessages(t, newStore) },
		"Ledger":        func(t *testing.T) { storetest.TestLedger(t, newStore) },
		"Usage":         func(t *testing.T) { storetest.TestUsage(t, newStore) },
		"LedgerOutbox":  func(t *testing.T) { storetest.TestLedger(t, newOutbox) },
		"UsageOutbox":   func(t *testing.T) { storetest.TestUsageOutbox(t, newOutbox) },
		"Attachments":   func(t *testing.T) { storetest.TestAttachments(t, newStore) },
		"Audit":         func(t *testing.T) { storetest.TestAudit(t, newStore) },
		"Invitations":   func(t *testing.T) { storetest.TestInvitations(t, newStore) },
		"VectorStores":  func(t *testing.T) { storetest.TestVectorStores(t, newStore) },
		"Projects":      func(t *testing.T) { storetest.TestProjects(t, newStore) },
	} {
		t.Run(name, func(t *testing.T) { t.Parallel(); suite(t) })
	}
}

// The control: pgx's default mode (named prepared statements, cached per
// connection) breaks through PgBouncer in transaction mode, as soon as
// concurrent callers share its server connections; Options.PgBouncer's does
// not.
func TestPgBouncerNeedsItsMode(t *testing.T) {
	t.Parallel()
	name := openPgBouncer(t).Database(t)
	bouncer := withDatabase(t, needEnv(t, EnvPgBouncerURL)[0], name)
	hammer := func(opts postgres.Options) (failures int, first error) {
		opts.MaxConns = 8
		db, err := postgres.Open(t.Context(), bouncer, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s := db.Store()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 16 {
			wg.Go(func() {
				for range 100 {
					if _, err := s.Accounts.GetUser(t.Context(), "nobody"); !errors.Is(err, store.ErrNotFound) {
						mu.Lock()
						if failures++; first == nil {
							first = err
						}
						mu.Unlock()
						return
					}
				}
			})
		}
		wg.Wait()
		return failures, first
	}
	if n, err := hammer(postgres.Options{}); n == 0 {
		// A control, not a guarantee: whether two statements of one
		// connection land on different server connections depends on the
		// timing, so a quiet run may not show the failure.
		t.Log("the default mode did not fail through PgBouncer this time")
	} else {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42P05" && pe.Code != "26000" {
			t.Errorf("default mode failed otherwise than on a prepared statement: %v", err)
		}
	}
	if n, err := hammer(postgres.Options{PgBouncer: true}); n != 0 {
		t.Errorf("PgBouncer mode: %d callers failed, first with %v", n, err)
	}
}

// Several gateways migrating one database through PgBouncer at once: the
// transaction-scoped lock serialises them and leaves nothing held on a
// pooled server connection (a session lock would, and the next Migrate
// would wait on it forever).
func TestPgBouncerConcurrentMigrate(t *testing.T) {
	t.Parallel()
	db := openPgBouncer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- db.Migrate(ctx) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// tcpProxy forwards a loopback port to target until closed; closing it
// drops every connection, as a replica that dies does.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestReplicaRouting runs against the HA primary and its streaming replica
// (reached through a proxy the test can cut): a write reads back from the
// primary at once; a listing marked store.AllowStale is served by the
// replica (with replay paused, it does not see the write); a replica further
// behind than the bound is skipped; a dead replica is skipped and reads fall
// back to the primary.
func TestReplicaRouting(t *testing.T) {
	env := needEnv(t, EnvHAPrimaryURL, EnvReplicaURL)
	primaryURL, replicaURL := env[0], env[1]
	ctx := t.Context()
	rp, err := url.Parse(replicaURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newProxy(t, rp.Host)
	rp.Host = proxy.ln.Addr().String()

	replica, err := pgx.Connect(ctx, replicaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close(context.Background())
	resume := func() {
		if _, err := replica.Exec(context.Background(), `SELECT pg_wal_replay_resume()`); err != nil {
			t.Errorf("resume replay: %v", err)
		}
	}
	resume() // a crashed earlier run may have left it paused

	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	const maxLag = 3 * time.Second
	db, err := postgres.Open(ctx, primaryURL, postgres.Options{
		Schema: schema, MaxConns: 4, ReadURLs: []string{rp.String()},
		MaxReplicaLag: maxLag, ReplicaCheckEvery: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = db.DropSchema(context.Background(), schema)
		db.Close()
	})
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(db.Collectors()...)
	replicaName := rp.Host
	reads := func(server string) float64 {
		return metric(t, reg, "parley_postgres_stale_reads_total", map[string]string{"server": server})
	}
	skipped := func(reason string) float64 {
		return metric(t, reg, "parley_postgres_replica_skipped_total", map[string]string{"replica": replicaName, "reason": reason})
	}

	s := db.Store()
	stale := store.AllowStale(ctx)
	now := time.Now().UTC()
	user := store.User{ID: "u1", Email: "u1@example.com", PasswordHash: "x", Tier: "free", CreatedAt: now}
	if err := s.Accounts.CreateUser(ctx, user); err != nil {
		t.Fatal(err)
	}
	conv := func(id string) store.Conversation {
		return store.Conversation{ID: id, UserID: "u1", Title: id, CreatedAt: now, UpdatedAt: now}
	}
	list := func(ctx context.Context) []string {
		t.Helper()
		cs, _, err := s.Conversations.List(ctx, "u1", store.ConversationFilter{}, store.PageRequest{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		return ids
	}
	// waitFor polls cond for up to 10 s.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		wait.For(t, 10*time.Second, what, cond)
	}
	if err := s.Conversations.Create(ctx, conv("c1")); err != nil {
		t.Fatal(err)
	}
	// The replica replays c1 (and the schema) and serves the listing.
	waitFor("the replica to serve c1", func() bool {
		before := reads(replicaName)
		ids := list(stale)
		return reads(replicaName) == before+1 && len(ids) == 1
	})

	// Replay paused: a new write is read back from the primary at once (Get,
	// and a listing not marked stale), while the stale listing is the
	// replica's and does not have it yet.
	if _, err := replica.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	defer resume()
	paused := time.Now()
	if err := s.Conversations.Create(ctx, conv("c2")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conversations.Get(ctx, "u1", "c2"); err != nil {
		t.Fatalf("read after write: %v", err)
	}
	if ids := list(ctx); len(ids) != 2 {
		t.Fatalf("fresh listing %v, want c1 and c2", ids)
	}
	before := reads(replicaName)
	ids := list(stale)
	if d := time.Since(paused); d > maxLag/2 {
		t.Fatalf("the writes and reads took %v: too slow to tell the replica's answer from the lag bound's", d)
	}
	if len(ids) != 1 || reads(replicaName) != before+1 {
		t.Fatalf("stale listing %v (replica reads %v → %v): want the replica's [c1]", ids, before, reads(replicaName))
	}

	// Behind by more than the bound: skipped for lag, the primary answers.
	waitFor("the replica to be skipped for lag", func() bool {
		before := skipped("lag")
		return len(list(stale)) == 2 && skipped("lag") > before
	})

	// Replay resumed: the replica catches up and serves again.
	resume()
	waitFor("the replica to serve again", func() bool {
		before := reads(replicaName)
		ids := list(stale)
		return reads(replicaName) == before+1 && len(ids) == 2
	})

	// The replica dies: reads fall back to the primary, with no error.
	proxy.close()
	primaryBefore := reads("primary")
	for range 5 {
		if ids := list(stale); len(ids) != 2 {
			t.Fatalf("listing with the replica down: %v", ids)
		}
	}
	if got := reads("primary") - primaryBefore; got != 5 {
		t.Fatalf("primary served %v of 5 listings with the replica down", got)
	}
	waitFor("the replica to be marked down", func() bool {
		return metric(t, reg, "parley_postgres_replica_up", map[string]string{"replica": replicaName}) == 0
	})
	if skipped("down")+skipped("error") == 0 {
		t.Fatal("no skip counted for the dead replica")
	}
}

// metric reads the value of the counter or gauge name whose labels include
// want (0 when there is none yet).
func metric(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, p := range m.GetLabel() {
				got[p.GetName()] = p.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
