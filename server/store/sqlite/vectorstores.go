package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
)

type vectorStores struct{ db *DB }

// storeColumns reads a store with its file counts and usage, computed from
// its file rows.
const storeColumns = `v.id, v.user_id, v.name, v.metadata, v.embedding_model, v.expires_after, v.created_at, v.last_active_at, v.web,
	(SELECT count(*) FROM vector_store_files f WHERE f.store_id = v.id AND f.status = 'in_progress'),
	(SELECT count(*) FROM vector_store_files f WHERE f.store_id = v.id AND f.status = 'completed'),
	(SELECT count(*) FROM vector_store_files f WHERE f.store_id = v.id AND f.status = 'failed'),
	(SELECT count(*) FROM vector_store_files f WHERE f.store_id = v.id AND f.status = 'cancelled'),
	(SELECT coalesce(sum(f.usage_bytes), 0) FROM vector_store_files f WHERE f.store_id = v.id AND f.status = 'completed')`

func scanStore(row interface{ Scan(...any) error }) (store.VectorStore, error) {
	var v store.VectorStore
	var meta string
	var exp, created, active int64
	c := &v.Counts
	if err := row.Scan(&v.ID, &v.UserID, &v.Name, &meta, &v.EmbeddingModel, &exp, &created, &active, &v.Web,
		&c.InProgress, &c.Completed, &c.Failed, &c.Cancelled, &v.UsageBytes); err != nil {
		return v, err
	}
	v.ExpiresAfter, v.CreatedAt, v.LastActiveAt = time.Duration(exp), fromTS(created), fromTS(active)
	if meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &v.Metadata); err != nil {
			return v, fmt.Errorf("vector store %s metadata: %w", v.ID, err)
		}
	}
	return v, nil
}

// expiresAt is the stored expiry of a store active at t.
func expiresAt(after time.Duration, t time.Time) any {
	if after <= 0 {
		return nil
	}
	return ts(t.Add(after))
}

func jsonText(v any, empty bool) (string, error) {
	if empty {
		return "{}", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func (s vectorStores) CreateVectorStore(ctx context.Context, v store.VectorStore, files []store.VectorStoreFile) error {
	meta, err := jsonText(v.Metadata, len(v.Metadata) == 0)
	if err != nil {
		return err
	}
	return s.db.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO vector_stores (id, user_id, name, metadata, embedding_model, expires_after, created_at, last_active_at, expires_at, web)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			v.ID, v.UserID, v.Name, meta, v.EmbeddingModel, int64(v.ExpiresAfter), ts(v.CreatedAt), ts(v.LastActiveAt), expiresAt(v.ExpiresAfter, v.LastActiveAt), v.Web); err != nil {
			return mapErr(err)
		}
		for _, f := range files {
			f.StoreID, f.UserID = v.ID, v.UserID
			if err := insertStoreFile(ctx, tx, f); err != nil {
				return err
			}
		}
		return nil
	})
}

func insertStoreFile(ctx context.Context, tx *txn, f store.VectorStoreFile) error {
	attrs, err := jsonText(f.Attributes, len(f.Attributes) == 0)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO vector_store_files (store_id, file_id, user_id, status, last_error, attributes,
		chunk_tokens, overlap_tokens, usage_bytes, chunks, created_at, batch_id, claim_token, claim_until)
		VALUES (?, ?, ?, 'in_progress', '', ?, ?, ?, 0, 0, ?, ?, '', 0)`,
		f.StoreID, f.FileID, f.UserID, attrs, f.ChunkTokens, f.OverlapTokens, ts(f.CreatedAt), f.BatchID)
	return mapErr(err)
}

func (s vectorStores) GetVectorStore(ctx context.Context, userID, id string) (store.VectorStore, error) {
	v, err := scanStore(s.db.r.QueryRowContext(ctx, `SELECT `+storeColumns+` FROM vector_stores v WHERE v.id = ? AND v.user_id = ?`, id, userID))
	if err != nil {
		return store.VectorStore{}, notFound(err, "vector store")
	}
	return v, nil
}

func (s vectorStores) ListVectorStores(ctx context.Context, userID string, p store.PageRequest) ([]store.VectorStore, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+storeColumns+` FROM vector_stores v WHERE v.user_id = ?`, []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (v.created_at, v.id) < (?, ?)`, append(args, at, id)
	}
	rows, err := s.db.r.QueryContext(ctx, q+` ORDER BY v.created_at DESC, v.id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.VectorStore
	for rows.Next() {
		v, err := scanStore(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.VectorStore) (int64, string) { return ts(v.CreatedAt), v.ID })
	return out, next, nil
}

func (s vectorStores) UpdateVectorStore(ctx context.Context, userID, id string, name *string, metadata map[string]string, expiresAfter *time.Duration, now time.Time) (store.VectorStore, error) {
	err := s.db.write(ctx, func(tx *txn) error {
		var exp int64
		if err := tx.QueryRowContext(ctx, `SELECT expires_after FROM vector_stores WHERE id = ? AND user_id = ?`, id, userID).Scan(&exp); err != nil {
			return notFound(err, "vector store")
		}
		if expiresAfter != nil {
			exp = int64(*expiresAfter)
		}
		set, args := `last_active_at = ?, expires_after = ?, expires_at = ?`, []any{ts(now), exp, expiresAt(time.Duration(exp), now)}
		if name != nil {
			set, args = set+`, name = ?`, append(args, *name)
		}
		if metadata != nil {
			meta, err := jsonText(metadata, len(metadata) == 0)
			if err != nil {
				return err
			}
			set, args = set+`, metadata = ?`, append(args, meta)
		}
		_, err := tx.ExecContext(ctx, `UPDATE vector_stores SET `+set+` WHERE id = ?`, append(args, id)...)
		return err
	})
	if err != nil {
		return store.VectorStore{}, err
	}
	return s.GetVectorStore(ctx, userID, id)
}

func (s vectorStores) TouchVectorStore(ctx context.Context, userID, id string, now time.Time) error {
	res, err := s.db.exec(ctx, `UPDATE vector_stores SET last_active_at = max(last_active_at, ?),
		expires_at = CASE WHEN expires_after > 0 THEN max(last_active_at, ?) + expires_after END
		WHERE id = ? AND user_id = ?`, ts(now), ts(now), id, userID)
	return affected(res, err, "vector store")
}

// affected is ErrNotFound (naming what) when a change touched no row.
func affected(res sql.Result, err error, what string) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", store.ErrNotFound, what)
	}
	return nil
}

func (s vectorStores) DeleteVectorStore(ctx context.Context, userID, id string) error {
	return s.db.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM vector_stores WHERE id = ? AND user_id = ?`, id, userID)
		if err := affected(res, err, "vector store"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM vector_store_files WHERE store_id = ?`, id)
		return err
	})
}

func (s vectorStores) ExpiredVectorStores(ctx context.Context, now time.Time, limit int) ([]store.VectorStore, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+storeColumns+` FROM vector_stores v WHERE v.expires_at IS NOT NULL AND v.expires_at < ?
		ORDER BY v.expires_at LIMIT ?`, ts(now), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.VectorStore
	for rows.Next() {
		v, err := scanStore(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func (s vectorStores) AddVectorStoreFile(ctx context.Context, f store.VectorStoreFile) error {
	return s.db.write(ctx, func(tx *txn) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM vector_stores WHERE id = ? AND user_id = ?`, f.StoreID, f.UserID).Scan(&one); err != nil {
			return notFound(err, "vector store")
		}
		return insertStoreFile(ctx, tx, f)
	})
}

const fileColumns = `store_id, file_id, user_id, status, last_error, attributes, chunk_tokens, overlap_tokens, usage_bytes, chunks, created_at, batch_id`

func scanFile(row interface{ Scan(...any) error }) (store.VectorStoreFile, error) {
	var f store.VectorStoreFile
	var attrs string
	var created int64
	if err := row.Scan(&f.StoreID, &f.FileID, &f.UserID, &f.Status, &f.LastError, &attrs, &f.ChunkTokens, &f.OverlapTokens,
		&f.UsageBytes, &f.Chunks, &created, &f.BatchID); err != nil {
		return f, err
	}
	f.CreatedAt = fromTS(created)
	if attrs != "{}" {
		if err := json.Unmarshal([]byte(attrs), &f.Attributes); err != nil {
			return f, fmt.Errorf("vector store file %s attributes: %w", f.FileID, err)
		}
	}
	return f, nil
}

func (s vectorStores) GetVectorStoreFile(ctx context.Context, userID, storeID, fileID string) (store.VectorStoreFile, error) {
	return s.getFile(ctx, s.db.r, userID, storeID, fileID)
}

func (s vectorStores) getFile(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, userID, storeID, fileID string) (store.VectorStoreFile, error) {
	f, err := scanFile(q.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM vector_store_files WHERE store_id = ? AND file_id = ? AND user_id = ?`,
		storeID, fileID, userID))
	if err != nil {
		return store.VectorStoreFile{}, notFound(err, "vector store file")
	}
	return f, nil
}

func (s vectorStores) ListVectorStoreFiles(ctx context.Context, userID, storeID string, filter store.VectorStoreFilter, p store.PageRequest) ([]store.VectorStoreFile, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+fileColumns+` FROM vector_store_files WHERE store_id = ? AND user_id = ?`, []any{storeID, userID}
	if filter.Status != "" {
		q, args = q+` AND status = ?`, append(args, filter.Status)
	}
	if filter.BatchID != "" {
		q, args = q+` AND batch_id = ?`, append(args, filter.BatchID)
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (created_at, file_id) < (?, ?)`, append(args, at, id)
	}
	rows, err := s.db.r.QueryContext(ctx, q+` ORDER BY created_at DESC, file_id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.VectorStoreFile
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(f store.VectorStoreFile) (int64, string) { return ts(f.CreatedAt), f.FileID })
	return out, next, nil
}

func (s vectorStores) SetVectorStoreFileAttributes(ctx context.Context, userID, storeID, fileID string, attrs map[string]any) (store.VectorStoreFile, error) {
	if err := store.ValidateAttributes(attrs); err != nil {
		return store.VectorStoreFile{}, err
	}
	data, err := jsonText(attrs, len(attrs) == 0)
	if err != nil {
		return store.VectorStoreFile{}, err
	}
	res, err := s.db.exec(ctx, `UPDATE vector_store_files SET attributes = ? WHERE store_id = ? AND file_id = ? AND user_id = ?`, data, storeID, fileID, userID)
	if err := affected(res, err, "vector store file"); err != nil {
		return store.VectorStoreFile{}, err
	}
	return s.GetVectorStoreFile(ctx, userID, storeID, fileID)
}

func (s vectorStores) RemoveVectorStoreFile(ctx context.Context, userID, storeID, fileID string) error {
	res, err := s.db.exec(ctx, `DELETE FROM vector_store_files WHERE store_id = ? AND file_id = ? AND user_id = ?`, storeID, fileID, userID)
	return affected(res, err, "vector store file")
}

func (s vectorStores) VectorStoresOfFile(ctx context.Context, userID, fileID string) ([]string, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT store_id FROM vector_store_files WHERE user_id = ? AND file_id = ? ORDER BY store_id`, userID, fileID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

func (s vectorStores) CancelVectorStoreFiles(ctx context.Context, userID, storeID, batchID string) (int, error) {
	var n int64
	err := s.db.write(ctx, func(tx *txn) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM vector_store_files WHERE store_id = ? AND user_id = ? AND batch_id = ? LIMIT 1`,
			storeID, userID, batchID).Scan(&one); err != nil {
			return notFound(err, "file batch")
		}
		res, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET status = 'cancelled', claim_token = '', claim_until = 0
			WHERE store_id = ? AND user_id = ? AND batch_id = ? AND status = 'in_progress'`, storeID, userID, batchID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

func (s vectorStores) ClaimIngestion(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.IngestionClaim, error) {
	var out []store.IngestionClaim
	err := s.db.write(ctx, func(tx *txn) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `SELECT `+fileColumns+` FROM vector_store_files
			WHERE status = 'in_progress' AND claim_until <= ? ORDER BY claim_until, created_at LIMIT ?`, ts(now), limit)
		if err != nil {
			return err
		}
		var files []store.VectorStoreFile
		for rows.Next() {
			f, err := scanFile(rows)
			if err != nil {
				rows.Close()
				return err
			}
			files = append(files, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		until := now.Add(lease)
		for _, f := range files {
			token := uuid.NewString()
			if _, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET claim_token = ?, claim_until = ? WHERE store_id = ? AND file_id = ?`,
				token, ts(until), f.StoreID, f.FileID); err != nil {
				return err
			}
			out = append(out, store.IngestionClaim{File: f, Token: token, Until: until})
		}
		return nil
	})
	return out, err
}

func (s vectorStores) RenewIngestion(ctx context.Context, c store.IngestionClaim, now time.Time, lease time.Duration) (store.IngestionClaim, error) {
	until := now.Add(lease)
	var got int64
	err := s.db.w.QueryRowContext(ctx, `UPDATE vector_store_files SET claim_until = max(claim_until, ?)
		WHERE store_id = ? AND file_id = ? AND claim_token = ? AND status = 'in_progress' RETURNING claim_until`,
		ts(until), c.File.StoreID, c.File.FileID, c.Token).Scan(&got)
	if err != nil {
		return c, notFound(err, "ingestion claim")
	}
	c.Until = fromTS(got)
	return c, nil
}

func (s vectorStores) FinishIngestion(ctx context.Context, c store.IngestionClaim, status, lastError string, chunks int, usageBytes int64) error {
	if status != store.FileCompleted && status != store.FileFailed {
		return fmt.Errorf("%w: status: %q is not completed or failed", store.ErrInvalidArgument, status)
	}
	res, err := s.db.exec(ctx, `UPDATE vector_store_files SET status = ?, last_error = ?, chunks = ?, usage_bytes = ?, claim_token = '', claim_until = 0
		WHERE store_id = ? AND file_id = ? AND claim_token = ? AND status = 'in_progress'`,
		status, strings.ToValidUTF8(lastError, "?"), chunks, usageBytes, c.File.StoreID, c.File.FileID, c.Token)
	return affected(res, err, "ingestion claim")
}
