package sqlite

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/server/store"
)

var _ store.LimiterSaver = (*DB)(nil)

// SaveBuckets implements store.LimiterSaver: one transaction replaces every
// saved bucket, so a crash leaves the previous save or this one whole.
func (db *DB) SaveBuckets(ctx context.Context, bs []store.SavedBucket) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: save limiter buckets: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM limiter_buckets`); err != nil {
		return fmt.Errorf("sqlite: save limiter buckets: %w", err)
	}
	if len(bs) > 0 {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO limiter_buckets (key, limit_n, window_ns, tokens, frac, last_ns) VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return fmt.Errorf("sqlite: save limiter buckets: %w", err)
		}
		defer ins.Close()
		for _, b := range bs {
			if _, err := ins.ExecContext(ctx, b.Key, b.Limit, b.Window, b.Tokens, int64(b.Frac), b.Last); err != nil {
				return fmt.Errorf("sqlite: save limiter bucket %q: %w", b.Key, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: save limiter buckets: %w", err)
	}
	return nil
}

// LoadBuckets implements store.LimiterSaver.
func (db *DB) LoadBuckets(ctx context.Context) ([]store.SavedBucket, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT key, limit_n, window_ns, tokens, frac, last_ns FROM limiter_buckets`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: load limiter buckets: %w", err)
	}
	defer rows.Close()
	var bs []store.SavedBucket
	for rows.Next() {
		var b store.SavedBucket
		var frac int64
		if err := rows.Scan(&b.Key, &b.Limit, &b.Window, &b.Tokens, &frac, &b.Last); err != nil {
			return nil, fmt.Errorf("sqlite: load limiter buckets: %w", err)
		}
		b.Frac = uint64(frac)
		bs = append(bs, b)
	}
	return bs, rows.Err()
}
