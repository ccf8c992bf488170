package postgres

import "context"

// AuditPartitionOf names the audit_log partition holding the event id (tests).
func (db *DB) AuditPartitionOf(ctx context.Context, id string) (string, error) {
	var name string
	err := db.pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM audit_log WHERE id = $1`, id).Scan(&name)
	return name, err
}

// Database names the database db is connected to (tests).
func (db *DB) Database(t interface{ Fatal(...any) }) string {
	var name string
	if err := db.pool.QueryRow(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

// ExecRaw runs a statement on the store's schema (tests).
func (db *DB) ExecRaw(ctx context.Context, q string, args ...any) error {
	_, err := db.pool.Exec(ctx, q, args...)
	return err
}

// Count returns the rows of a table of the store's schema (tests).
func (db *DB) Count(ctx context.Context, table string) (n int64, err error) {
	err = db.pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n)
	return n, err
}

// CountWhere returns the rows of a table whose column equals value (tests).
func (db *DB) CountWhere(ctx context.Context, table, column, value string) (n int64, err error) {
	err = db.pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE `+column+` = $1`, value).Scan(&n)
	return n, err
}

// DataCluster is the data cluster at place i (tests).
func (db *DB) DataCluster(i int) *DB { return db.data.dbs[i] }

// DataShardSQL is data_shard(id) as the database computes it (tests).
func (db *DB) DataShardSQL(ctx context.Context, id string) (n int, err error) {
	err = db.pool.QueryRow(ctx, `SELECT data_shard($1)`, id).Scan(&n)
	return n, err
}
