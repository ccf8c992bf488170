package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// In cluster mode (OpenCluster) usage records are spread over the shards of
// a ClickHouse cluster by user and kept on every replica of their shard:
//
//   - usage_records_local, on every node: the records of that node's shard,
//     a ReplicatedReplacingMergeTree (same sorting key as the single
//     server's table, so a record shipped twice folds the same way);
//   - usage_records, on every node: a Distributed table over them, rows
//     placed by cityHash64(user_id), so all of a user's records live on one
//     shard and a user's reads touch one shard; inserts through it are
//     synchronous (insert_distributed_sync), so Record returns only once
//     each shard's replica holds its rows;
//   - usage_quarters_local: the pre-aggregation the usage pages read, one
//     row per user, quarter of an hour, model and key with the sums, filled
//     by the materialized view usage_quarters_mv on each insert into
//     usage_records_local, a ReplicatedSummingMergeTree; usage_quarters is
//     the Distributed table over it. Quarters of an hour, not days, because
//     a day is the reader's: every time zone's offset is a multiple of 15
//     minutes, so every reader's day is a whole number of quarters.
//
// A pre-aggregated sum cannot fold a record shipped twice the way FINAL does.
// It stays exact because a retried batch is the same block: the outbox hands
// a failed batch out again whole and in the same order (store.UsageOutbox),
// Record keeps that order, the Distributed table splits it into the same
// block per shard, and a Replicated table drops an insert of a block it
// already holds (the last 100 blocks, replicated_deduplication_window); the
// view's block, computed from the same rows, is the same block for its
// Replicated target and is dropped there too.
//
// The tables are made with ON CLUSTER (the cluster needs distributed DDL,
// on by default) when the node the store connects to lacks any of them; a
// gateway starting while they all exist makes no DDL, so it starts while a
// replica is down. A replica whose disk was lost is rebuilt from the other
// replica of its shard (docs/backup.md).

// quarterNanos is usage_quarters' bucket: 15 minutes.
const quarterNanos = int64(15 * time.Minute)

// clusterTables are the objects cluster mode makes, in order, as DDL with
// %[1]s the database and %[2]s the cluster.
var clusterTables = []struct{ name, ddl string }{
	{"usage_records_local", `CREATE TABLE IF NOT EXISTS %[1]s.usage_records_local ON CLUSTER %[2]s (` + recordColumns + `)
		ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/%[1]s/usage_records', '{replica}')
		PARTITION BY toYYYYMM(toDateTime(intDiv(created_at, 1000000000)))
		ORDER BY (user_id, created_at, request_id)`},
	{"usage_records", `CREATE TABLE IF NOT EXISTS %[1]s.usage_records ON CLUSTER %[2]s AS %[1]s.usage_records_local
		ENGINE = Distributed(%[2]s, %[1]s, usage_records_local, cityHash64(user_id))`},
	{"usage_quarters_local", `CREATE TABLE IF NOT EXISTS %[1]s.usage_quarters_local ON CLUSTER %[2]s (
			user_id String, quarter Int64, model String, api_key_id String,
			requests UInt64, prompt_tokens Int64, completion_tokens Int64, cached_tokens Int64, cost_nanos Int64)
		ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/%[1]s/usage_quarters', '{replica}')
		PARTITION BY toYYYYMM(toDateTime(quarter * 900))
		ORDER BY (user_id, quarter, model, api_key_id)`},
	{"usage_quarters_mv", `CREATE MATERIALIZED VIEW IF NOT EXISTS %[1]s.usage_quarters_mv ON CLUSTER %[2]s
		TO %[1]s.usage_quarters_local AS
		SELECT user_id, intDiv(created_at, 900000000000) AS quarter, model, api_key_id, count() AS requests,
			sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
			sum(cached_tokens) AS cached_tokens, sum(cost_nanos) AS cost_nanos
		FROM %[1]s.usage_records_local GROUP BY user_id, quarter, model, api_key_id`},
	{"usage_quarters", `CREATE TABLE IF NOT EXISTS %[1]s.usage_quarters ON CLUSTER %[2]s AS %[1]s.usage_quarters_local
		ENGINE = Distributed(%[2]s, %[1]s, usage_quarters_local, cityHash64(user_id))`},
}

// migrateCluster makes the cluster's tables unless this node has them all.
func (db *DB) migrateCluster(ctx context.Context) error {
	var n uint64
	names := make([]string, len(clusterTables))
	for i, t := range clusterTables {
		names[i] = t.name
	}
	if err := db.conn.QueryRow(ctx, `SELECT count() FROM system.tables WHERE database = ? AND has(?, name)`,
		db.database, names).Scan(&n); err != nil {
		return fmt.Errorf("clickhouse: cluster tables: %w", err)
	}
	if int(n) == len(clusterTables) {
		return nil
	}
	if err := db.conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE IF NOT EXISTS %s ON CLUSTER %s`, db.database, db.cluster)); err != nil {
		return fmt.Errorf("clickhouse: create database on cluster %s: %w", db.cluster, err)
	}
	for _, t := range clusterTables {
		if err := db.conn.Exec(ctx, fmt.Sprintf(t.ddl, db.database, db.cluster)); err != nil {
			return fmt.Errorf("clickhouse: create %s on cluster %s: %w", t.name, db.cluster, err)
		}
	}
	return nil
}

// summarizeQuarters is summarize from the pre-aggregated quarters, for a
// range of whole quarters and an offset of whole quarters (every quarter
// then lies in one day of the reader's).
func (db *DB) summarizeQuarters(ctx context.Context, userID string, from, to, offset int64, key string) ([]store.UsageDay, error) {
	rows, err := db.conn.Query(ctx, `SELECT intDiv(quarter * ? + ?, ?) AS day, model, `+key+` AS key, sum(requests),
			sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(cost_nanos)
		FROM usage_quarters
		WHERE user_id = ? AND quarter >= ? AND quarter < ?
		GROUP BY day, model, key ORDER BY day, model, key`,
		quarterNanos, offset, store.NanosPerDay, userID, from/quarterNanos, to/quarterNanos)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: summarize usage: %w", err)
	}
	return scanDays(rows)
}

// checkLoadBalancing refuses a connection whose profile does not set
// load_balancing to in_order. Reads and inserts through the Distributed
// tables must go to the same replica of each shard (the first in
// remote_servers' order that answers), so that Record's check and the usage
// pages see a record the moment it was written rather than when the other
// replica has fetched it. 18.16's native protocol carries only numeric
// settings from this driver, so the profile sets it, not the store.
func (db *DB) checkLoadBalancing(ctx context.Context) error {
	var v string
	if err := db.conn.QueryRow(ctx, `SELECT value FROM system.settings WHERE name = 'load_balancing'`).Scan(&v); err != nil {
		return fmt.Errorf("clickhouse: read load_balancing: %w", err)
	}
	if v != "in_order" {
		return fmt.Errorf("clickhouse: cluster mode needs load_balancing = in_order in the profile of the user it connects as (it is %q): "+
			"reads must go to the replica that took the write (docs/operations.md, ClickHouse as a cluster)", v)
	}
	return nil
}

// validName reports whether s can be written into DDL as a cluster
// or database name.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 && !(s[0] >= '0' && s[0] <= '9')
}
