package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ShardMove reports a MoveLedgerShard.
type ShardMove struct {
	Shard, From, To int
	// Users is how many accounts moved, Rows how many rows in all.
	Users, Rows int
	// Paused is how long the shard took no writes: from its fence on the
	// old cluster to the map naming the new one (gateways then retry).
	Paused time.Duration
}

// movedTables are the ledger's tables a shard move copies, in an order
// that keeps their keys (an account before its holds), each with the
// condition that picks the shard's rows ($1: the users, or with byOrg the
// organisations whose billing accounts they are) and the column the copy
// leaves for the new database to number. usage_outbox stays: the relay ships it from
// where it is.
var movedTables = []struct {
	name, where, skip string
	byOrg             bool
}{
	{"billing_accounts", "user_id = ANY($1)", "", false},
	{"reservations", "user_id = ANY($1)", "", false},
	{"reservation_budgets", "reservation_id IN (SELECT id FROM reservations WHERE user_id = ANY($1))", "", false},
	{"ledger_adjustments", "user_id = ANY($1)", "seq", false},
	{"budgets", "org_id = ANY($1)", "", true},
	{"usage_records", "user_id = ANY($1)", "", false},
}

// MoveLedgerShard moves logical ledger shard shard to billing cluster to
// (an index into --billing-postgres-url) while gateways run, losing and
// doubling no write:
//
//  1. the old cluster gives the shard up (its ledger_shards row deleted):
//     the delete waits for the writes in flight, and from then on every
//     write of the shard there fails (ledger_fence), and the gateways retry;
//  2. the shard's rows are read from the old cluster in one snapshot and
//     written to the new one, which takes the shard, in one transaction;
//  3. ledger_shard_map names the new cluster: the retrying writes go there;
//  4. the rows left on the old cluster are deleted.
//
// The write pause of the shard's users is steps 1–3. A crash between 1 and
// 3 leaves the shard refusing writes: run the move again (the copy replaces
// what an earlier attempt left on the new cluster). db is the users'
// database, with the billing clusters (WithBillingShards).
func (db *DB) MoveLedgerShard(ctx context.Context, shard, to int) (ShardMove, error) {
	set := db.billing
	if set == nil || len(set.dbs) < 2 {
		return ShardMove{}, fmt.Errorf("postgres: a shard moves between billing clusters; there is one")
	}
	if shard < 0 || shard >= LedgerShards || to < 0 || to >= len(set.dbs) {
		return ShardMove{}, fmt.Errorf("postgres: shard %d to cluster %d: shards are 0–%d, clusters 0–%d", shard, to, LedgerShards-1, len(set.dbs)-1)
	}
	if err := set.reload(ctx); err != nil {
		return ShardMove{}, err
	}
	m := ShardMove{Shard: shard, From: set.cluster(shard), To: to}
	if m.From == to {
		return m, nil
	}
	src, dst := set.dbs[m.From], set.dbs[to]
	start := time.Now()
	if _, err := src.pool.Exec(ctx, `DELETE FROM ledger_shards WHERE shard = $1`, shard); err != nil {
		return m, fmt.Errorf("postgres: fence shard %d on cluster %d: %w", shard, m.From, err)
	}
	users, orgs, err := shardMembers(ctx, db, src, shard)
	if err != nil {
		return m, err
	}
	m.Users = len(users)
	err = pgx.BeginTxFunc(ctx, src.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(read pgx.Tx) error {
		return pgx.BeginFunc(ctx, dst.pool, func(write pgx.Tx) error {
			for _, t := range movedTables {
				ids := users
				if t.byOrg {
					ids = orgs
				}
				n, err := copyRows(ctx, read, write, t.name, t.where, t.skip, ids)
				if err != nil {
					return fmt.Errorf("copy %s: %w", t.name, err)
				}
				m.Rows += n
			}
			_, err := write.Exec(ctx, `INSERT INTO ledger_shards (shard) VALUES ($1) ON CONFLICT DO NOTHING`, shard)
			return err
		})
	})
	if err != nil {
		return m, fmt.Errorf("postgres: move shard %d: %w", shard, err)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO ledger_shard_map (shard, cluster) VALUES ($1, $2)
		ON CONFLICT (shard) DO UPDATE SET cluster = excluded.cluster`, shard, to); err != nil {
		return m, fmt.Errorf("postgres: map shard %d: %w", shard, err)
	}
	m.Paused = time.Since(start)
	_ = set.reload(ctx)
	// The old copy: deleted, accounts last (their holds go with them).
	err = pgx.BeginFunc(ctx, src.pool, func(tx pgx.Tx) error {
		for i := len(movedTables) - 1; i >= 0; i-- {
			t := movedTables[i]
			ids := users
			if t.byOrg {
				ids = orgs
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+t.name+` WHERE `+t.where, ids); err != nil {
				return fmt.Errorf("delete %s: %w", t.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("postgres: shard %d moved; deleting its old rows on cluster %d: %w", shard, m.From, err)
	}
	return m, nil
}

// shardMembers returns the users whose ledger rows on src are in shard,
// and the organisations whose billing accounts they are.
func shardMembers(ctx context.Context, accounts, src *DB, shard int) (users, orgs []string, err error) {
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

// copyRows copies table's rows matching where from read to write, replacing
// rows with the same key there (an earlier attempt's), and returns how many.
func copyRows(ctx context.Context, read, write pgx.Tx, table, where, skip string, ids []string) (int, error) {
	rows, err := read.Query(ctx, `SELECT * FROM `+table+` WHERE `+where, ids)
	if err != nil {
		return 0, err
	}
	var cols []string
	keep := []int{}
	for i, f := range rows.FieldDescriptions() {
		if f.Name != skip {
			cols, keep = append(cols, f.Name), append(keep, i)
		}
	}
	var data [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			rows.Close()
			return 0, err
		}
		row := make([]any, len(keep))
		for j, i := range keep {
			row[j] = v[i]
		}
		data = append(data, row)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if _, err := write.Exec(ctx, `DELETE FROM `+table+` WHERE `+where, ids); err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return 0, nil
	}
	n, err := write.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(data))
	if err != nil {
		return 0, fmt.Errorf("%s (%s): %w", table, strings.Join(cols, ", "), err)
	}
	return int(n), nil
}
