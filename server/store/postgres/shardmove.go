package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ShardMove reports a MoveLedgerShard or a MoveDataShard.
type ShardMove struct {
	Shard, From, To int
	// Users is how many users' rows moved, Rows how many rows in all.
	Users, Rows int
	// Paused is how long the shard took no writes: from its fence on the
	// old cluster to the map naming the new one (gateways then retry).
	Paused time.Duration
}

// movedTable is a table a shard move copies: where picks the shard's rows
// ($1: the users, or with byOrg the organisations whose billing accounts
// they are), and skip names the column the copy leaves for the new
// database to number (generated columns are always left).
type movedTable struct {
	name, where, skip string
	byOrg             bool
}

// ledgerTables are the ledger's tables, in an order that keeps their keys
// (an account before its holds). usage_outbox stays: the relay ships it
// from where it is.
var ledgerTables = []movedTable{
	{"billing_accounts", "user_id = ANY($1)", "", false},
	{"reservations", "user_id = ANY($1)", "", false},
	{"reservation_budgets", "reservation_id IN (SELECT id FROM reservations WHERE user_id = ANY($1))", "", false},
	{"ledger_adjustments", "user_id = ANY($1)", "seq", false},
	{"budgets", "org_id = ANY($1)", "", true},
	{"usage_records", "user_id = ANY($1)", "", false},
}

// dataTables are the users' data's tables (dataSet), a conversation before
// its messages, share and ratings.
var dataTables = []movedTable{
	{name: "projects", where: "user_id = ANY($1)"},
	{name: "conversations", where: "user_id = ANY($1)"},
	{name: "messages", where: "conversation_id IN (SELECT id FROM conversations WHERE user_id = ANY($1))"},
	{name: "shares", where: "user_id = ANY($1)"},
	{name: "message_feedback", where: "user_id = ANY($1)"},
	{name: "chat_settings", where: "user_id = ANY($1)"},
	{name: "attachments", where: "user_id = ANY($1)"},
	{name: "vector_stores", where: "user_id = ANY($1)"},
	{name: "vector_store_files", where: "user_id = ANY($1)"},
	{name: "memories", where: "user_id = ANY($1)"},
	{name: "saved_prompts", where: "user_id = ANY($1)"},
	{name: "audit_log", where: "user_id = ANY($1)"},
}

// MoveLedgerShard moves logical ledger shard shard to billing cluster to
// (an index into --billing-postgres-url) while gateways run, losing and
// doubling no write (moveShard says how). db is the users' database, with
// the billing clusters (WithBillingShards).
func (db *DB) MoveLedgerShard(ctx context.Context, shard, to int) (ShardMove, error) {
	set := db.billing
	if set == nil || len(set.dbs) < 2 {
		return ShardMove{}, fmt.Errorf("postgres: a ledger shard moves between billing clusters; there is one")
	}
	return moveShard(ctx, set, shard, to, ledgerTables, func(src *DB) ([]string, []string, error) {
		return ledgerMembers(ctx, db, src, shard)
	})
}

// MoveDataShard moves logical data shard shard (DataShard) to data cluster
// to (an index into --postgres-url) while gateways run, losing and
// doubling no write (moveShard says how). db is the accounts database,
// with the data clusters (WithDataShards).
func (db *DB) MoveDataShard(ctx context.Context, shard, to int) (ShardMove, error) {
	if db.data == nil || len(db.data.dbs) < 2 {
		return ShardMove{}, fmt.Errorf("postgres: a data shard moves between data clusters; there is one")
	}
	return moveShard(ctx, db.data.set, shard, to, dataTables, func(src *DB) ([]string, []string, error) {
		users, err := dataMembers(ctx, src, shard)
		return users, nil, err
	})
}

// moveShard moves logical shard shard of set to cluster to while gateways
// run, losing and doubling no write:
//
//  1. the old cluster gives the shard up (its <kind>_shards row deleted):
//     the delete waits for the statements in flight, and from then on
//     every statement of the shard there fails (<kind>_fence), and the
//     gateways retry;
//  2. the shard's rows (tables, of the users members finds on the old
//     cluster) are read from the old cluster in one snapshot and written
//     to the new one, which takes the shard, in one transaction;
//  3. the shard map names the new cluster: the retrying statements go
//     there;
//  4. the rows left on the old cluster are deleted.
//
// The write pause of the shard's users is steps 1–3. A crash between 1 and
// 3 leaves the shard refusing writes: run the move again (the copy replaces
// what an earlier attempt left on the new cluster).
func moveShard(ctx context.Context, set *shardSet, shard, to int, tables []movedTable, members func(src *DB) (users, orgs []string, err error)) (ShardMove, error) {
	if shard < 0 || shard >= set.shards || to < 0 || to >= len(set.dbs) {
		return ShardMove{}, fmt.Errorf("postgres: %s shard %d to cluster %d: shards are 0–%d, clusters 0–%d", set.kind, shard, to, set.shards-1, len(set.dbs)-1)
	}
	var m ShardMove
	// One move of a shard at a time: a transaction-scoped advisory lock on
	// the accounts database, held while the shard moves (safe through
	// PgBouncer in transaction mode).
	err := pgx.BeginFunc(ctx, set.accounts.pool, func(lock pgx.Tx) error {
		if _, err := lock.Exec(ctx, `SELECT pg_advisory_xact_lock(1972, hashtext($1))`, fmt.Sprintf("%s/%d", set.kind, shard)); err != nil {
			return fmt.Errorf("postgres: lock %s shard %d: %w", set.kind, shard, err)
		}
		var err error
		m, err = moveLocked(ctx, set, shard, to, tables, members)
		return err
	})
	return m, err
}

// moveLocked is moveShard under its lock.
func moveLocked(ctx context.Context, set *shardSet, shard, to int, tables []movedTable, members func(src *DB) (users, orgs []string, err error)) (ShardMove, error) {
	if err := set.reload(ctx); err != nil {
		return ShardMove{}, err
	}
	m := ShardMove{Shard: shard, From: set.cluster(shard), To: to}
	if m.From == to {
		// There already; an earlier move may have stopped before deleting
		// the old rows: delete them wherever the shard is not held.
		return m, deleteLeftovers(ctx, set, shard, tables, members)
	}
	src, dst := set.dbs[m.From], set.dbs[to]
	start := time.Now()
	if _, err := src.pool.Exec(ctx, `DELETE FROM `+set.kind+`_shards WHERE shard = $1`, shard); err != nil {
		return m, fmt.Errorf("postgres: fence %s shard %d on cluster %d: %w", set.kind, shard, m.From, err)
	}
	users, orgs, err := members(src)
	if err != nil {
		return m, err
	}
	m.Users = len(users)
	// What the new cluster holds of the shard (an earlier attempt's, or
	// rows left from when the shard last lived there) is replaced.
	staleUsers, staleOrgs, err := members(dst)
	if err != nil {
		return m, err
	}
	all := movedIDs(union(users, staleUsers), union(orgs, staleOrgs))
	err = pgx.BeginTxFunc(ctx, src.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(read pgx.Tx) error {
		return pgx.BeginFunc(ctx, dst.pool, func(write pgx.Tx) error {
			for _, t := range tables {
				n, err := copyRows(ctx, read, write, t, all(t))
				if err != nil {
					return fmt.Errorf("copy %s: %w", t.name, err)
				}
				m.Rows += n
			}
			_, err := write.Exec(ctx, `INSERT INTO `+set.kind+`_shards (shard) VALUES ($1) ON CONFLICT DO NOTHING`, shard)
			return err
		})
	})
	if err != nil {
		return m, fmt.Errorf("postgres: move %s shard %d: %w", set.kind, shard, err)
	}
	if _, err := set.accounts.pool.Exec(ctx, `INSERT INTO `+set.kind+`_shard_map (shard, cluster) VALUES ($1, $2)
		ON CONFLICT (shard) DO UPDATE SET cluster = excluded.cluster`, shard, to); err != nil {
		return m, fmt.Errorf("postgres: map %s shard %d: %w", set.kind, shard, err)
	}
	m.Paused = time.Since(start)
	_ = set.reload(ctx)
	if err := deleteRows(ctx, src, tables, movedIDs(users, orgs)); err != nil {
		return m, fmt.Errorf("postgres: %s shard %d moved; deleting its old rows on cluster %d (run the move again to finish): %w", set.kind, shard, m.From, err)
	}
	return m, nil
}

// movedIDs gives each table the IDs its condition takes: the users, or
// the organisations.
func movedIDs(users, orgs []string) func(movedTable) []string {
	return func(t movedTable) []string {
		if t.byOrg {
			return orgs
		}
		return users
	}
}

func union(a, b []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(slices.Concat(a, b))))
}

// deleteRows deletes the rows of tables that ids picks on db, in one
// transaction, in the reverse order (keys last).
func deleteRows(ctx context.Context, db *DB, tables []movedTable, ids func(movedTable) []string) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		for _, t := range slices.Backward(tables) {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t.name+` WHERE `+t.where, ids(t)); err != nil {
				return fmt.Errorf("delete %s: %w", t.name, err)
			}
		}
		return nil
	})
}

// deleteLeftovers deletes the shard's rows on every cluster that does not
// hold the shard (its <kind>_shards row gone): what a move that stopped
// after its map change left behind.
func deleteLeftovers(ctx context.Context, set *shardSet, shard int, tables []movedTable, members func(src *DB) ([]string, []string, error)) error {
	for i, db := range set.dbs {
		var held bool
		if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+set.kind+`_shards WHERE shard = $1)`, shard).Scan(&held); err != nil {
			return fmt.Errorf("postgres: cluster %d: %w", i, err)
		}
		if held || i == set.cluster(shard) {
			continue
		}
		users, orgs, err := members(db)
		if err != nil {
			return err
		}
		if len(users)+len(orgs) == 0 {
			continue
		}
		if err := deleteRows(ctx, db, tables, movedIDs(users, orgs)); err != nil {
			return fmt.Errorf("postgres: %s shard %d's old rows on cluster %d: %w", set.kind, shard, i, err)
		}
	}
	return nil
}

// dataMembers returns the users with rows on src in data shard shard.
func dataMembers(ctx context.Context, src *DB, shard int) ([]string, error) {
	var union []string
	for _, t := range dataTables {
		if strings.HasPrefix(t.where, "user_id") {
			union = append(union, `SELECT user_id FROM `+t.name)
		}
	}
	rows, err := src.pool.Query(ctx, strings.Join(union, " UNION "))
	if err != nil {
		return nil, err
	}
	all, err := collectRows(rows, func(r pgx.Rows) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
	users := []string{}
	for _, id := range all {
		if DataShard(id) == shard {
			users = append(users, id)
		}
	}
	return users, err
}

// ledgerMembers returns the users whose ledger rows on src are in shard,
// and the organisations whose billing accounts they are.
func ledgerMembers(ctx context.Context, accounts, src *DB, shard int) (users, orgs []string, err error) {
	rows, err := src.pool.Query(ctx, `SELECT user_id FROM billing_accounts UNION SELECT user_id FROM reservations
		UNION SELECT user_id FROM ledger_adjustments UNION SELECT user_id FROM usage_records`)
	if err != nil {
		return nil, nil, err
	}
	all, err := collectRows(rows, func(r pgx.Rows) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
	if err != nil {
		return nil, nil, err
	}
	users = []string{}
	for _, id := range all {
		if LedgerShard(id) == shard {
			users = append(users, id)
		}
	}
	rows, err = accounts.pool.Query(ctx, `SELECT id FROM organizations WHERE billing_user_id = ANY($1)`, users)
	if err != nil {
		return nil, nil, err
	}
	orgs, err = collectRows(rows, func(r pgx.Rows) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
	if orgs == nil {
		orgs = []string{}
	}
	return users, orgs, err
}

// copyRows copies t's rows matching its condition (with ids) from read to
// write, replacing rows with the same key there (an earlier attempt's),
// row by row from one cursor into COPY, and returns how many.
func copyRows(ctx context.Context, read, write pgx.Tx, t movedTable, ids []string) (int, error) {
	if _, err := write.Exec(ctx, `DELETE FROM `+t.name+` WHERE `+t.where, ids); err != nil {
		return 0, err
	}
	rows, err := read.Query(ctx, `SELECT a.attname FROM pg_attribute a
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' AND a.attname <> $2
		ORDER BY a.attnum`, t.name, t.skip)
	if err != nil {
		return 0, err
	}
	cols, err := collectRows(rows, func(r pgx.Rows) (string, error) {
		var c string
		return c, r.Scan(&c)
	})
	if err != nil {
		return 0, err
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = pgx.Identifier{c}.Sanitize()
	}
	rows, err = read.Query(ctx, `SELECT `+strings.Join(quoted, ", ")+` FROM `+t.name+` WHERE `+t.where, ids)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n, err := write.CopyFrom(ctx, pgx.Identifier{t.name}, cols, pgx.CopyFromFunc(func() ([]any, error) {
		if !rows.Next() {
			return nil, rows.Err()
		}
		return rows.Values()
	}))
	if err != nil {
		return 0, fmt.Errorf("%s (%s): %w", t.name, strings.Join(cols, ", "), err)
	}
	return int(n), nil
}
