package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type vectorStores struct{ db *DB }

// storeColumns reads a store with its file counts and usage, computed from
// its file rows.
const storeColumns = `v.id, v.user_id, v.name, v.metadata, v.embedding_model, v.expires_after, v.created_at, v.last_active_at, v.web,
	(SELECT count(*) FILTER (WHERE f.status = 'in_progress') FROM vector_store_files f WHERE f.store_id = v.id),
	(SELECT count(*) FILTER (WHERE f.status = 'completed') FROM vector_store_files f WHERE f.store_id = v.id),
	(SELECT count(*) FILTER (WHERE f.status = 'failed') FROM vector_store_files f WHERE f.store_id = v.id),
	(SELECT count(*) FILTER (WHERE f.status = 'cancelled') FROM vector_store_files f WHERE f.store_id = v.id),
	(SELECT coalesce(sum(f.usage_bytes) FILTER (WHERE f.status = 'completed'), 0)::bigint FROM vector_store_files f WHERE f.store_id = v.id)`

func scanStore(row pgx.Row) (store.VectorStore, error) {
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
func expiresAt(after time.Duration, t time.Time) *int64 {
	if after <= 0 {
		return nil
	}
	n := ts(t.Add(after))
	return &n
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
	return mapErr(pgx.BeginFunc(ctx, s.db.conn(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO vector_stores (id, user_id, name, metadata, embedding_model, expires_after, created_at, last_active_at, expires_at, web)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			v.ID, v.UserID, v.Name, meta, v.EmbeddingModel, int64(v.ExpiresAfter), ts(v.CreatedAt), ts(v.LastActiveAt), expiresAt(v.ExpiresAfter, v.LastActiveAt), v.Web); err != nil {
			return err
		}
		for _, f := range files {
			f.StoreID, f.UserID = v.ID, v.UserID
			if err := insertStoreFile(ctx, tx, f); err != nil {
				return err
			}
		}
		return nil
	}))
}

func insertStoreFile(ctx context.Context, tx pgx.Tx, f store.VectorStoreFile) error {
	attrs, err := jsonText(f.Attributes, len(f.Attributes) == 0)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO vector_store_files (store_id, file_id, user_id, status, last_error, attributes,
		chunk_tokens, overlap_tokens, usage_bytes, chunks, created_at, batch_id, claim_token, claim_until)
		VALUES ($1, $2, $3, 'in_progress', '', $4, $5, $6, 0, 0, $7, $8, '', 0)`,
		f.StoreID, f.FileID, f.UserID, attrs, f.ChunkTokens, f.OverlapTokens, ts(f.CreatedAt), f.BatchID)
	return err
}

func (s vectorStores) GetVectorStore(ctx context.Context, userID, id string) (store.VectorStore, error) {
	v, err := scanStore(s.db.conn().QueryRow(ctx, `SELECT `+storeColumns+` FROM vector_stores v WHERE v.id = $1 AND v.user_id = $2`, id, userID))
	if err != nil {
		return store.VectorStore{}, notFound(err, "vector store")
	}
	return v, nil
}

func (s vectorStores) ListVectorStores(ctx context.Context, userID string, p store.PageRequest) ([]store.VectorStore, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+storeColumns+` FROM vector_stores v WHERE v.user_id = $1`, []any{userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (v.created_at, v.id) < ($2, $3)`, append(args, at, id)
	}
	rows, err := s.db.conn().Query(ctx, q+fmt.Sprintf(` ORDER BY v.created_at DESC, v.id DESC LIMIT %d`, limit+1), args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, err := collectRows(rows, func(r pgx.Rows) (store.VectorStore, error) { return scanStore(r) })
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(v store.VectorStore) (int64, string) { return ts(v.CreatedAt), v.ID })
	return out, next, nil
}

func (s vectorStores) UpdateVectorStore(ctx context.Context, userID, id string, name *string, metadata map[string]string, expiresAfter *time.Duration, now time.Time) (store.VectorStore, error) {
	var meta *string
	if metadata != nil {
		m, err := jsonText(metadata, len(metadata) == 0)
		if err != nil {
			return store.VectorStore{}, err
		}
		meta = &m
	}
	var exp *int64
	if expiresAfter != nil {
		n := int64(*expiresAfter)
		exp = &n
	}
	tag, err := s.db.exec(ctx, `UPDATE vector_stores SET name = coalesce($3, name), metadata = coalesce($4, metadata),
		expires_after = coalesce($5, expires_after), last_active_at = $6,
		expires_at = CASE WHEN coalesce($5, expires_after) > 0 THEN $6 + coalesce($5, expires_after) END
		WHERE id = $1 AND user_id = $2`, id, userID, name, meta, exp, ts(now))
	if err != nil {
		return store.VectorStore{}, err
	}
	if err := affectedOne(tag, "vector store"); err != nil {
		return store.VectorStore{}, err
	}
	return s.GetVectorStore(ctx, userID, id)
}

func (s vectorStores) TouchVectorStore(ctx context.Context, userID, id string, now time.Time) error {
	tag, err := s.db.exec(ctx, `UPDATE vector_stores SET last_active_at = greatest(last_active_at, $3),
		expires_at = CASE WHEN expires_after > 0 THEN greatest(last_active_at, $3) + expires_after END
		WHERE id = $1 AND user_id = $2`, id, userID, ts(now))
	if err != nil {
		return err
	}
	return affectedOne(tag, "vector store")
}

func (s vectorStores) DeleteVectorStore(ctx context.Context, userID, id string) error {
	// The file rows go by the foreign key's cascade.
	tag, err := s.db.exec(ctx, `DELETE FROM vector_stores WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "vector store")
}

func (s vectorStores) ExpiredVectorStores(ctx context.Context, now time.Time, limit int) ([]store.VectorStore, error) {
	rows, err := s.db.conn().Query(ctx, `SELECT `+storeColumns+` FROM vector_stores v WHERE v.expires_at IS NOT NULL AND v.expires_at < $1`+s.db.owned("v.user_id", false)+`
		ORDER BY v.expires_at LIMIT $2`, ts(now), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectRows(rows, func(r pgx.Rows) (store.VectorStore, error) { return scanStore(r) })
}

func (s vectorStores) AddVectorStoreFile(ctx context.Context, f store.VectorStoreFile) error {
	return mapErr(pgx.BeginFunc(ctx, s.db.conn(), func(tx pgx.Tx) error {
		// The store's row is locked, so a delete racing the add either
		// comes first (not found) or waits and takes the file with it.
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM vector_stores WHERE id = $1 AND user_id = $2 FOR SHARE`, f.StoreID, f.UserID).Scan(&one); err != nil {
			return notFound(err, "vector store")
		}
		return insertStoreFile(ctx, tx, f)
	}))
}

const fileColumns = `store_id, file_id, user_id, status, last_error, attributes, chunk_tokens, overlap_tokens, usage_bytes, chunks, created_at, batch_id`

func scanFile(row pgx.Row, extra ...any) (store.VectorStoreFile, error) {
	var f store.VectorStoreFile
	var attrs string
	var created int64
	if err := row.Scan(append([]any{&f.StoreID, &f.FileID, &f.UserID, &f.Status, &f.LastError, &attrs, &f.ChunkTokens, &f.OverlapTokens,
		&f.UsageBytes, &f.Chunks, &created, &f.BatchID}, extra...)...); err != nil {
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
	f, err := scanFile(s.db.conn().QueryRow(ctx, `SELECT `+fileColumns+` FROM vector_store_files WHERE store_id = $1 AND file_id = $2 AND user_id = $3`,
		storeID, fileID, userID))
	if err != nil {
		return store.VectorStoreFile{}, notFound(err, "vector store file")
	}
	return f, nil
}

func (s vectorStores) ListVectorStoreFiles(ctx context.Context, userID, storeID string, filter store.VectorStoreFilter, p store.PageRequest) ([]store.VectorStoreFile, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+fileColumns+` FROM vector_store_files WHERE store_id = $1 AND user_id = $2`, []any{storeID, userID}
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if filter.Status != "" {
		q += ` AND status = ` + arg(filter.Status)
	}
	if filter.BatchID != "" {
		q += ` AND batch_id = ` + arg(filter.BatchID)
	}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (created_at, file_id) < (` + arg(at) + `, ` + arg(id) + `)`
	}
	rows, err := s.db.conn().Query(ctx, q+fmt.Sprintf(` ORDER BY created_at DESC, file_id DESC LIMIT %d`, limit+1), args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, err := collectRows(rows, func(r pgx.Rows) (store.VectorStoreFile, error) { return scanFile(r) })
	if err != nil {
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
	f, err := scanFile(s.db.conn().QueryRow(ctx, `UPDATE vector_store_files SET attributes = $4 WHERE store_id = $1 AND file_id = $2 AND user_id = $3
		RETURNING `+fileColumns, storeID, fileID, userID, data))
	if err != nil {
		return store.VectorStoreFile{}, notFound(err, "vector store file")
	}
	return f, nil
}

func (s vectorStores) RemoveVectorStoreFile(ctx context.Context, userID, storeID, fileID string) error {
	tag, err := s.db.exec(ctx, `DELETE FROM vector_store_files WHERE store_id = $1 AND file_id = $2 AND user_id = $3`, storeID, fileID, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "vector store file")
}

func (s vectorStores) VectorStoresOfFile(ctx context.Context, userID, fileID string) ([]string, error) {
	rows, err := s.db.conn().Query(ctx, `SELECT store_id FROM vector_store_files WHERE user_id = $1 AND file_id = $2 ORDER BY store_id`, userID, fileID)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectRows(rows, func(r pgx.Rows) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
}

func (s vectorStores) CancelVectorStoreFiles(ctx context.Context, userID, storeID, batchID string) (int, error) {
	// One statement: the batch's rows (any status) say whether it exists,
	// and those in progress are cancelled.
	var total, cancelled int
	err := s.db.conn().QueryRow(ctx, `WITH b AS (
			SELECT file_id, status FROM vector_store_files WHERE store_id = $1 AND user_id = $2 AND batch_id = $3
		), c AS (
			UPDATE vector_store_files f SET status = 'cancelled', claim_token = '', claim_until = 0
			FROM b WHERE f.store_id = $1 AND f.file_id = b.file_id AND b.status = 'in_progress' AND f.status = 'in_progress'
			RETURNING f.file_id
		)
		SELECT (SELECT count(*) FROM b), (SELECT count(*) FROM c)`, storeID, userID, batchID).Scan(&total, &cancelled)
	if err != nil {
		return 0, mapErr(err)
	}
	if total == 0 {
		return 0, fmt.Errorf("%w: file batch", store.ErrNotFound)
	}
	return cancelled, nil
}

func (s vectorStores) ClaimIngestion(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.IngestionClaim, error) {
	until := now.Add(lease)
	rows, err := s.db.conn().Query(ctx, `WITH c AS (
			SELECT store_id, file_id, claim_until AS old_until FROM vector_store_files
			WHERE status = 'in_progress' AND claim_until <= $1`+s.db.owned("user_id", true)+`
			ORDER BY claim_until, created_at LIMIT $2 FOR UPDATE SKIP LOCKED
		)
		UPDATE vector_store_files f SET claim_token = gen_random_uuid()::text, claim_until = $3
		FROM c WHERE f.store_id = c.store_id AND f.file_id = c.file_id
		RETURNING f.store_id, f.file_id, f.user_id, f.status, f.last_error, f.attributes, f.chunk_tokens, f.overlap_tokens,
			f.usage_bytes, f.chunks, f.created_at, f.batch_id, f.claim_token, c.old_until`, ts(now), limit, ts(until))
	if err != nil {
		return nil, mapErr(err)
	}
	type claimed struct {
		c   store.IngestionClaim
		old int64
	}
	got, err := collectRows(rows, func(r pgx.Rows) (claimed, error) {
		var c claimed
		f, err := scanFile(r, &c.c.Token, &c.old)
		c.c.File, c.c.Until = f, until
		return c, err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(got, func(a, b claimed) int {
		if a.old != b.old {
			return compare(a.old, b.old)
		}
		if !a.c.File.CreatedAt.Equal(b.c.File.CreatedAt) {
			return a.c.File.CreatedAt.Compare(b.c.File.CreatedAt)
		}
		return strings.Compare(a.c.File.StoreID+"/"+a.c.File.FileID, b.c.File.StoreID+"/"+b.c.File.FileID)
	})
	out := make([]store.IngestionClaim, len(got))
	for i, g := range got {
		out[i] = g.c
	}
	return out, nil
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s vectorStores) RenewIngestion(ctx context.Context, c store.IngestionClaim, now time.Time, lease time.Duration) (store.IngestionClaim, error) {
	var got int64
	err := s.db.conn().QueryRow(ctx, `UPDATE vector_store_files SET claim_until = greatest(claim_until, $4)
		WHERE store_id = $1 AND file_id = $2 AND claim_token = $3 AND status = 'in_progress' RETURNING claim_until`,
		c.File.StoreID, c.File.FileID, c.Token, ts(now.Add(lease))).Scan(&got)
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
	tag, err := s.db.exec(ctx, `UPDATE vector_store_files SET status = $4, last_error = $5, chunks = $6, usage_bytes = $7, claim_token = '', claim_until = 0
		WHERE store_id = $1 AND file_id = $2 AND claim_token = $3 AND status = 'in_progress'`,
		c.File.StoreID, c.File.FileID, c.Token, status, strings.ToValidUTF8(strings.ReplaceAll(lastError, "\x00", ""), "?"), chunks, usageBytes)
	if err != nil {
		return err
	}
	return affectedOne(tag, "ingestion claim")
}
