package clickhouse_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/internal/testlock"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/clickhouse"
	"github.com/parleyhq/parley/server/store/storetest"
)

// EnvClusterURL names the nodes of the test cluster (two shards of two
// replicas: scripts/services.sh with PARLEY_SERVICES_CH_CLUSTER=1), in the
// order node 1 (shard 1), node 2 (shard 1), node 3, node 4; EnvCluster its
// name. The cluster tests skip when they are unset.
const (
	EnvClusterURL = "PARLEY_TEST_CLICKHOUSE_CLUSTER_URL"
	EnvCluster    = "PARLEY_TEST_CLICKHOUSE_CLUSTER"
)

// holdsCluster names the tests that hold the cluster exclusively (written
// before the parallel tests run).
var holdsCluster = map[string]bool{}

// clusterDB makes an empty database on every node of the cluster, dropped
// with t, and returns the store URL naming it and the cluster's name.
func clusterDB(t testing.TB) (url, cluster string) {
	t.Helper()
	url, cluster = os.Getenv(EnvClusterURL), os.Getenv(EnvCluster)
	if url == "" || cluster == "" {
		t.Skipf("%s or %s not set (PARLEY_SERVICES_CH_CLUSTER=1 scripts/services.sh up; eval \"$(scripts/services.sh env)\")", EnvClusterURL, EnvCluster)
	}
	if !holdsCluster[t.Name()] {
		lockCluster(t, false)
	}
	opts, err := ch.ParseDSN(url)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	name := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if err := admin.Exec(t.Context(), "CREATE DATABASE "+name+" ON CLUSTER "+cluster); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		_ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" ON CLUSTER "+cluster)
		admin.Close()
	})
	i := strings.LastIndex(url, "/")
	return url[:i+1] + name, cluster
}

// lockCluster holds the cluster for the rest of t, across the test processes
// of other packages: exclusively for a test that stops its nodes, shared for
// the others (distributed DDL waits for every node).
func lockCluster(t testing.TB, exclusive bool) {
	testlock.Hold(t, "clickhouse-cluster", exclusive)
}

func openCluster(t testing.TB, url, cluster string) *clickhouse.DB {
	t.Helper()
	db, err := clickhouse.OpenCluster(t.Context(), url, cluster)
	if err != nil {
		t.Fatalf("OpenCluster: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newClusterStore(t *testing.T) store.Store {
	url, cluster := clusterDB(t)
	return store.Store{Usage: openCluster(t, url, cluster)}
}

// The store suites on the cluster: the records through the Distributed
// table, the summaries from the pre-aggregated quarters (whole days, whole
// hour offsets) and from the records (a range off the quarters).
func TestClusterUsage(t *testing.T) { t.Parallel(); storetest.TestUsage(t, newClusterStore) }

func TestClusterUsageSummary(t *testing.T) {
	t.Parallel()
	storetest.TestUsageSummary(t, newClusterStore)
}

// node opens a plain connection to one node of the cluster (1 to 4, in
// EnvClusterURL's order) on the test's database.
func node(t testing.TB, url string, n int) ch.Conn {
	t.Helper()
	opts, err := ch.ParseDSN(url)
	if err != nil {
		t.Fatal(err)
	}
	opts.Addr = opts.Addr[n-1 : n]
	conn, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// onNode returns a node's own records (count, cost) and its quarters' sums
// (requests, cost), read from its local tables.
func onNode(t testing.TB, conn ch.Conn) (records uint64, cost int64, requests uint64, qcost int64) {
	t.Helper()
	if err := conn.QueryRow(t.Context(), `SELECT count(), sum(cost_nanos) FROM usage_records_local FINAL`).Scan(&records, &cost); err != nil {
		t.Fatalf("node records: %v", err)
	}
	if err := conn.QueryRow(t.Context(), `SELECT sum(requests), sum(cost_nanos) FROM usage_quarters_local`).Scan(&requests, &qcost); err != nil {
		t.Fatalf("node quarters: %v", err)
	}
	return
}

func usageBatch(n int, at time.Time, users []string) []store.UsageRecord {
	out := make([]store.UsageRecord, n)
	for i := range out {
		out[i] = store.UsageRecord{RequestID: uuid.NewString(), UserID: users[i%len(users)], Channel: store.ChannelAPI,
			Model: "m", PromptTokens: 10, CompletionTokens: int64(i), CostNanos: int64(1000 + i), FinishReason: "stop",
			CreatedAt: at.Add(time.Duration(i) * time.Second)}
	}
	return out
}

// sumCost is the cost of recs.
func sumCost(recs []store.UsageRecord) (n int64) {
	for _, r := range recs {
		n += r.CostNanos
	}
	return n
}

// summaryCost reads one user's day from the quarters (Summarize over whole
// days at UTC) and returns its requests and cost.
func summaryCost(t testing.TB, db *clickhouse.DB, user string, day time.Time) (requests, cost int64) {
	t.Helper()
	days, err := db.Summarize(t.Context(), user, day, day.Add(24*time.Hour), 0)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	for _, d := range days {
		requests, cost = requests+d.Requests, cost+d.CostNanos
	}
	return requests, cost
}

// A batch shipped again (the relay's retry after a lost acknowledgement,
// the same batch as store.UsageOutbox hands it out again) and records sent
// again inside another batch are counted once, in the records and in the
// pre-aggregated quarters the usage pages read.
func TestClusterRetriedBatchCountsOnce(t *testing.T) {
	t.Parallel()
	url, cluster := clusterDB(t)
	db := openCluster(t, url, cluster)
	day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	users := []string{uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()}
	batch := usageBatch(40, day.Add(time.Hour), users)
	for range 3 {
		if err := db.Record(t.Context(), batch); err != nil {
			t.Fatalf("Record: %v", err)
		}
	}
	more := usageBatch(8, day.Add(2*time.Hour), users)
	if err := db.Record(t.Context(), append(slices.Clone(batch[5:15]), more...)); err != nil {
		t.Fatalf("Record: %v", err)
	}
	all := append(slices.Clone(batch), more...)
	for _, u := range users {
		var want []store.UsageRecord
		for _, r := range all {
			if r.UserID == u {
				want = append(want, r)
			}
		}
		got, _, err := db.List(t.Context(), u, store.UsageFilter{}, store.PageRequest{Size: 1000})
		if err != nil || len(got) != len(want) {
			t.Fatalf("user %s: %d records listed, want %d (%v)", u, len(got), len(want), err)
		}
		if n, cost := summaryCost(t, db, u, day); n != int64(len(want)) || cost != sumCost(want) {
			t.Fatalf("user %s: the quarters say %d requests, %d nano-USD; want %d, %d", u, n, cost, len(want), sumCost(want))
		}
	}
}

// Summaries over ranges that do not start or end on a quarter of an hour,
// in time zones of whole hours, half and three quarters (the quarters serve
// the middle, the records the ends) and at an offset of 7 minutes (the
// records serve all), equal the records added up one by one.
func TestClusterSummaryRaggedRanges(t *testing.T) {
	t.Parallel()
	url, cluster := clusterDB(t)
	db := openCluster(t, url, cluster)
	user := uuid.NewString()
	day := time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)
	var recs []store.UsageRecord
	for i := range 300 { // every 9 min 37 s for two days, two models, three keys
		r := usageBatch(1, day.Add(time.Duration(i)*(9*time.Minute+37*time.Second)), []string{user})[0]
		r.Model, r.APIKeyID, r.PromptTokens, r.CostNanos = []string{"m1", "m2"}[i%2], fmt.Sprint("k", i%3), int64(i), int64(7*i+1)
		recs = append(recs, r)
	}
	if err := db.Record(t.Context(), recs); err != nil {
		t.Fatalf("Record: %v", err)
	}
	for _, c := range []struct{ from, to, offset time.Duration }{
		{7 * time.Minute, 47*time.Hour + 3*time.Minute, 0},
		{0, 48 * time.Hour, 5*time.Hour + 30*time.Minute},
		{13*time.Minute + time.Second, 30*time.Hour + 59*time.Second, 5*time.Hour + 45*time.Minute},
		{-time.Hour, 20 * time.Hour, -3*time.Hour - 30*time.Minute},
		{3 * time.Minute, 9 * time.Minute, time.Hour}, // inside one quarter
		{time.Hour, 40 * time.Hour, 7 * time.Minute},
	} {
		from, to := day.Add(c.from), day.Add(c.to)
		want := map[store.UsageDay]store.UsageDay{}
		for _, r := range recs {
			if r.CreatedAt.Before(from) || !r.CreatedAt.Before(to) {
				continue
			}
			k := store.UsageDay{Day: (r.CreatedAt.UnixNano() + int64(c.offset)) / store.NanosPerDay, Model: r.Model, APIKeyID: r.APIKeyID}
			w := want[k]
			w.Day, w.Model, w.APIKeyID = k.Day, k.Model, k.APIKeyID
			w.Requests++
			w.PromptTokens += r.PromptTokens
			w.CompletionTokens += r.CompletionTokens
			w.CostNanos += r.CostNanos
			want[k] = w
		}
		got, err := db.SummarizeKeys(t.Context(), user, from, to, c.offset)
		if err != nil {
			t.Fatalf("SummarizeKeys: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("%+v: %d rows, want %d", c, len(got), len(want))
		}
		for i, g := range got {
			if w := want[store.UsageDay{Day: g.Day, Model: g.Model, APIKeyID: g.APIKeyID}]; g != w {
				t.Fatalf("%+v: row %d = %+v, want %+v", c, i, g, w)
			}
			if i > 0 && (got[i-1].Day > g.Day || got[i-1].Day == g.Day && got[i-1].Model+"\x00"+got[i-1].APIKeyID >= g.Model+"\x00"+g.APIKeyID) {
				t.Fatalf("%+v: rows out of order at %d", c, i)
			}
		}
	}
}

// services runs scripts/services.sh with args (the cluster's nodes are its
// processes); not bound to t's context, so that cleanups can run it.
func services(t testing.TB, args ...string) {
	t.Helper()
	root, _ := filepath.Abs("../../..")
	out, err := exec.Command(filepath.Join(root, "scripts/services.sh"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("services.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// A replica lost with its disk and rebuilt loses no record: node 2 (shard 1's
// second replica) is stopped and its data deleted; records go on being
// written (to node 1 for shard 1); node 2 is rebuilt by the documented
// procedure (scripts/services.sh chc-restore: the tables' definitions from
// its sibling and the force_restore_data flag) and fetches the shard; then
// node 1 is stopped and every record, and every quarter's sum, is read from
// node 2 alone. Not parallel: it stops servers the other cluster tests use.
func TestClusterReplicaLostAndRestored(t *testing.T) {
	if os.Getenv(EnvClusterURL) == "" {
		t.Skipf("%s not set", EnvClusterURL)
	}
	lockCluster(t, true)
	holdsCluster[t.Name()] = true
	url, cluster := clusterDB(t)
	db := openCluster(t, url, cluster)
	t.Cleanup(func() { // whatever happens, both nodes run again
		services(t, "chc-start", "1")
		services(t, "chc-start", "2")
	})
	day := time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)
	users := make([]string, 16)
	for i := range users {
		users[i] = uuid.NewString()
	}
	var written []store.UsageRecord
	write := func(n int, at time.Time) {
		b := usageBatch(n, at, users)
		if err := db.Record(t.Context(), b); err != nil {
			t.Fatalf("Record: %v", err)
		}
		written = append(written, b...)
	}
	write(200, day.Add(time.Hour))
	n1, n2 := node(t, url, 1), node(t, url, 2)
	waitShard := func(what string, conn ch.Conn, want uint64) (uint64, int64) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			recs, cost, reqs, qcost := onNode(t, conn)
			if recs == want && reqs == want && cost == qcost {
				return recs, cost
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d records (%d nano-USD), quarters %d requests (%d nano-USD); want %d", what, recs, cost, reqs, qcost, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	shard1, _, _, _ := onNode(t, n1)
	if shard1 == 0 || shard1 == 200 {
		t.Fatalf("shard 1 holds %d of 200 records: rows are not spread by user", shard1)
	}
	waitShard("node 2 before the loss", n2, shard1)

	services(t, "chc-lose", "2")
	start := time.Now()
	write(100, day.Add(2*time.Hour))
	write(100, day.Add(3*time.Hour))
	t.Logf("200 records written in %v with node 2 lost", time.Since(start).Round(time.Millisecond))
	shard1, _, _, _ = onNode(t, n1)

	services(t, "chc-restore", "2")
	start = time.Now()
	n2 = node(t, url, 2)
	recs, cost := waitShard("node 2 rebuilt", n2, shard1)
	t.Logf("node 2 rebuilt with shard 1's %d records (%d nano-USD) %v after it started", recs, cost, time.Since(start).Round(time.Millisecond))

	services(t, "chc-stop", "1")
	var total int64
	for _, u := range users {
		var want []store.UsageRecord
		for _, r := range written {
			if r.UserID == u {
				want = append(want, r)
			}
		}
		got, _, err := db.List(t.Context(), u, store.UsageFilter{}, store.PageRequest{Size: 1000})
		if err != nil || len(got) != len(want) {
			t.Fatalf("node 1 down: user %s: %d records listed, want %d (%v)", u, len(got), len(want), err)
		}
		n, c := summaryCost(t, db, u, day)
		if n != int64(len(want)) || c != sumCost(want) {
			t.Fatalf("node 1 down: user %s: the quarters say %d requests, %d nano-USD; want %d, %d", u, n, c, len(want), sumCost(want))
		}
		total += c
	}
	if total != sumCost(written) {
		t.Fatalf("%d nano-USD read back, %d written", total, sumCost(written))
	}
	t.Logf("all %d records and their quarters read with node 1 down", len(written))
}

// A server whose profile balances reads at random is refused at start, with
// the setting named: a gateway would read its own writes only by luck.
func TestClusterNeedsInOrderReads(t *testing.T) {
	t.Parallel()
	url := os.Getenv(EnvURL) // the single server: the default profile's random
	if url == "" {
		t.Skipf("%s not set", EnvURL)
	}
	_, err := clickhouse.OpenCluster(t.Context(), url, "parley")
	if err == nil || !strings.Contains(err.Error(), "load_balancing = in_order") {
		t.Fatalf("OpenCluster on a server balancing at random: %v", err)
	}
	if _, err := clickhouse.OpenCluster(t.Context(), url, "parley; DROP"); err == nil || !strings.Contains(err.Error(), "cluster name") {
		t.Fatalf("OpenCluster with a bad name: %v", err)
	}
}

// What a retried batch rests on, past Record's check: the same rows sent
// again as the same block, straight to the Distributed table (as a retry
// whose first insert landed unacknowledged would), are dropped by the
// replicated tables, and the materialized view's sums do not count them
// twice, on the ClickHouse this runs on.
func TestClusterDropsARepeatedBlock(t *testing.T) {
	t.Parallel()
	url, cluster := clusterDB(t)
	db := openCluster(t, url, cluster)
	day := time.Date(2026, 11, 6, 0, 0, 0, 0, time.UTC)
	users := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	batch := usageBatch(30, day.Add(time.Hour), users)
	opts, err := ch.ParseDSN(url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := ch.Context(t.Context(), ch.WithSettings(ch.Settings{"insert_distributed_sync": 1}))
	for range 2 {
		b, err := conn.PrepareBatch(ctx, `INSERT INTO usage_records (user_id, created_at, request_id, api_key_id, channel, model,
			prompt_tokens, completion_tokens, cached_tokens, estimated, cost_nanos, finish_reason, end_user, cache_hit, requested_model)`)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range batch {
			if err := b.Append(r.UserID, r.CreatedAt.UnixNano(), r.RequestID, r.APIKeyID, r.Channel, r.Model, r.PromptTokens,
				r.CompletionTokens, r.CachedTokens, uint8(0), r.CostNanos, r.FinishReason, r.EndUser, uint8(0), r.RequestedModel); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Send(); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range users {
		var want []store.UsageRecord
		for _, r := range batch {
			if r.UserID == u {
				want = append(want, r)
			}
		}
		if n, cost := summaryCost(t, db, u, day); n != int64(len(want)) || cost != sumCost(want) {
			t.Fatalf("user %s: the quarters say %d requests, %d nano-USD after the block twice; want %d, %d", u, n, cost, len(want), sumCost(want))
		}
	}
}
