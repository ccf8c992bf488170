package knowledge

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// Limits of a store's settings, as OpenAI's Vector Stores API has them.
const (
	MaxFilesPerBatch  = 500
	MaxMetadataPairs  = 16
	MaxMetadataKey    = 64
	MaxMetadataValue  = 512
	MaxExpiryDays     = 365
	maxBatchFilesScan = 10_000
)

// CheckMetadata checks a store's metadata: at most 16 pairs, keys of 64
// bytes and values of 512.
func CheckMetadata(m map[string]string) error {
	if len(m) > MaxMetadataPairs {
		return apierr.InvalidArgument("metadata", fmt.Sprintf("%d pairs; at most %d", len(m), MaxMetadataPairs))
	}
	for k, v := range m {
		if len(k) > MaxMetadataKey || len(v) > MaxMetadataValue {
			return apierr.InvalidArgument("metadata", fmt.Sprintf("key %q: keys are at most %d bytes and values %d", k, MaxMetadataKey, MaxMetadataValue))
		}
	}
	return nil
}

// ExpiryDays is an expiry of days after a store's last activity (1 to 365).
func ExpiryDays(field string, days int64) (time.Duration, error) {
	if days < 1 || days > MaxExpiryDays {
		return 0, apierr.InvalidArgument(field, fmt.Sprintf("must be 1 to %d", MaxExpiryDays))
	}
	return time.Duration(days) * 24 * time.Hour, nil
}

// Batch statuses: in progress while any file is, cancelled when any was,
// else completed.
const (
	BatchInProgress = "in_progress"
	BatchCompleted  = "completed"
	BatchCancelled  = "cancelled"
)

// StoreStatus is a store's state: expired once its expiry passed, in
// progress while a file is, else completed.
func StoreStatus(v store.VectorStore, now time.Time) string {
	switch {
	case v.ExpiresAfter > 0 && !now.Before(v.ExpiresAt()):
		return "expired"
	case v.Counts.InProgress > 0:
		return BatchInProgress
	}
	return BatchCompleted
}

// FileBatch is a set of files added to a store together.
type FileBatch struct {
	ID, StoreID string
	CreatedAt   time.Time
	Counts      store.VectorStoreFileCounts
	Status      string
}

// AddBatch adds 1 to MaxFilesPerBatch files to the caller's store as one
// batch; they then wait for ingestion.
func (s *Service) AddBatch(ctx context.Context, userID, storeID string, files []NewFile) (FileBatch, []store.VectorStoreFile, error) {
	switch {
	case len(files) == 0:
		return FileBatch{}, nil, apierr.InvalidArgument("file_ids", "must name at least one file")
	case len(files) > MaxFilesPerBatch:
		return FileBatch{}, nil, apierr.InvalidArgument("file_ids", fmt.Sprintf("%d files; at most %d per batch", len(files), MaxFilesPerBatch))
	}
	id := uuid.Must(uuid.NewV7()).String()
	for i := range files {
		files[i].BatchID = id
	}
	rows, err := s.AddFiles(ctx, userID, storeID, files)
	if err != nil {
		return FileBatch{}, nil, err
	}
	b, err := s.Batch(ctx, userID, storeID, id)
	return b, rows, err
}

// Batch reads a batch of the caller's store: its files' counts and status;
// its creation time is its UUIDv7's.
func (s *Service) Batch(ctx context.Context, userID, storeID, batchID string) (FileBatch, error) {
	id, err := uuid.Parse(batchID)
	if err != nil || id.Version() != 7 {
		return FileBatch{}, apierr.NotFound("file batch")
	}
	b := FileBatch{ID: batchID, StoreID: storeID, Status: BatchCompleted}
	sec, nsec := id.Time().UnixTime()
	b.CreatedAt = time.Unix(sec, nsec)
	cursor, seen := "", 0
	for {
		items, next, err := s.Stores.ListVectorStoreFiles(ctx, userID, storeID, store.VectorStoreFilter{BatchID: batchID}, store.PageRequest{Size: 100, Cursor: cursor})
		if err != nil {
			return FileBatch{}, storeErr(err, "vector_store_id")
		}
		for _, f := range items {
			switch f.Status {
			case store.FileInProgress:
				b.Counts.InProgress++
			case store.FileCompleted:
				b.Counts.Completed++
			case store.FileFailed:
				b.Counts.Failed++
			case store.FileCancelled:
				b.Counts.Cancelled++
			}
		}
		seen += len(items)
		if next == "" || seen >= maxBatchFilesScan {
			break
		}
		cursor = next
	}
	switch {
	case b.Counts.Total() == 0:
		return FileBatch{}, apierr.NotFound("file batch")
	case b.Counts.InProgress > 0:
		b.Status = BatchInProgress
	case b.Counts.Cancelled > 0:
		b.Status = BatchCancelled
	}
	return b, nil
}

// CancelBatch cancels the batch's files not yet ingested.
func (s *Service) CancelBatch(ctx context.Context, userID, storeID, batchID string) (FileBatch, error) {
	if _, err := s.Stores.CancelVectorStoreFiles(ctx, userID, storeID, batchID); err != nil {
		return FileBatch{}, storeErr(err, "batch_id")
	}
	return s.Batch(ctx, userID, storeID, batchID)
}
