package store

import (
	"context"
	"time"
)

// VectorStore is a user's collection of files made searchable: the files'
// text cut into chunks, embedded and kept in a VectorIndex under the
// store's ID. Its files' ingestion state lives in VectorStoreFile rows.
type VectorStore struct {
	// ID is the caller-made UUIDv7.
	ID     string
	UserID string
	// Name is the owner's label; may be empty.
	Name string
	// Metadata is up to 16 key-value pairs the owner keeps with it.
	Metadata map[string]string
	// EmbeddingModel is the catalog model its chunks were embedded with;
	// every chunk of one store has its vectors' length.
	EmbeddingModel string
	// ExpiresAfter, when positive, expires the store that long after it was
	// last active (OpenAI's expires_after with anchor last_active_at).
	ExpiresAfter time.Duration
	// CreatedAt and LastActiveAt (the last search or change).
	CreatedAt, LastActiveAt time.Time
	// UsageBytes is the bytes of text its completed files' chunks hold.
	UsageBytes int64
	// Counts are its files by status (filled by reads).
	Counts VectorStoreFileCounts
	// Web marks a web chat project's store: embedding its files counts
	// against the owner's tier limits instead of charging the balance.
	// Set at creation, never changed.
	Web bool
}

// ExpiresAt is when the store expires (zero when it does not).
func (v VectorStore) ExpiresAt() time.Time {
	if v.ExpiresAfter <= 0 {
		return time.Time{}
	}
	return v.LastActiveAt.Add(v.ExpiresAfter)
}

// VectorStoreFileCounts are a store's files by status.
type VectorStoreFileCounts struct {
	InProgress, Completed, Failed, Cancelled int64
}

// Total is the number of files.
func (c VectorStoreFileCounts) Total() int64 {
	return c.InProgress + c.Completed + c.Failed + c.Cancelled
}

// The statuses of a vector store file.
const (
	FileInProgress = "in_progress"
	FileCompleted  = "completed"
	FileFailed     = "failed"
	FileCancelled  = "cancelled"
)

// VectorStoreFile is one file (an attachment) in a vector store, and where
// its ingestion stands.
type VectorStoreFile struct {
	StoreID string
	// FileID is the attachment's ID.
	FileID string
	UserID string
	// Status is FileInProgress until ingestion ends, then FileCompleted,
	// FileFailed (LastError says why) or FileCancelled.
	Status    string
	LastError string
	// Attributes are the file's attributes (ValidateAttributes), copied
	// onto its chunks for filtered search.
	Attributes map[string]any
	// ChunkTokens and OverlapTokens are how the file is cut: chunks of at
	// most ChunkTokens tokens, each sharing OverlapTokens with the last.
	ChunkTokens, OverlapTokens int
	// UsageBytes is the bytes of text its chunks hold, once completed.
	UsageBytes int64
	// Chunks is how many chunks it was cut into, once completed.
	Chunks    int
	CreatedAt time.Time
	// BatchID is the file batch it was added in ("" for none).
	BatchID string
}

// IngestionClaim is a claim on a file's ingestion: until Until no other
// claim is given, and only the holder's Token finishes it. A claim that
// lapses (the gateway holding it died) is given again.
type IngestionClaim struct {
	File  VectorStoreFile
	Token string
	Until time.Time
}

// VectorStoreFilter narrows ListVectorStoreFiles.
type VectorStoreFilter struct {
	// Status keeps one status ("" for any).
	Status string
	// BatchID keeps one batch's files ("" for any).
	BatchID string
}

// VectorStores keeps vector stores and their files' ingestion state; the
// chunks themselves live in a VectorIndex. Every read and change is by
// owner: another user's store or file is ErrNotFound.
type VectorStores interface {
	// CreateVectorStore stores v with files, all FileInProgress, in one
	// transaction (an ID taken is ErrConflict).
	CreateVectorStore(ctx context.Context, v VectorStore, files []VectorStoreFile) error
	// GetVectorStore returns the owner's store, with its file counts.
	GetVectorStore(ctx context.Context, userID, id string) (VectorStore, error)
	// ListVectorStores lists the owner's stores, newest first.
	ListVectorStores(ctx context.Context, userID string, page PageRequest) ([]VectorStore, string, error)
	// UpdateVectorStore sets the name, metadata and expiry of the owner's
	// store (nil leaves a field as it is) and marks it active at now.
	UpdateVectorStore(ctx context.Context, userID, id string, name *string, metadata map[string]string, expiresAfter *time.Duration, now time.Time) (VectorStore, error)
	// TouchVectorStore marks the owner's store active at now (a search).
	TouchVectorStore(ctx context.Context, userID, id string, now time.Time) error
	// DeleteVectorStore deletes the owner's store and its file rows; the
	// caller then deletes its chunks from the index.
	DeleteVectorStore(ctx context.Context, userID, id string) error
	// ExpiredVectorStores lists up to limit stores of any owner that
	// expired before now, for the sweeper.
	ExpiredVectorStores(ctx context.Context, now time.Time, limit int) ([]VectorStore, error)

	// AddVectorStoreFile adds f (FileInProgress) to the owner's store; a
	// file already in it is ErrConflict.
	AddVectorStoreFile(ctx context.Context, f VectorStoreFile) error
	// GetVectorStoreFile returns one file of the owner's store.
	GetVectorStoreFile(ctx context.Context, userID, storeID, fileID string) (VectorStoreFile, error)
	// ListVectorStoreFiles lists the files of the owner's store, newest
	// first.
	ListVectorStoreFiles(ctx context.Context, userID, storeID string, filter VectorStoreFilter, page PageRequest) ([]VectorStoreFile, string, error)
	// SetVectorStoreFileAttributes replaces a file's attributes.
	SetVectorStoreFileAttributes(ctx context.Context, userID, storeID, fileID string, attrs map[string]any) (VectorStoreFile, error)
	// RemoveVectorStoreFile removes a file from the owner's store; the
	// caller then deletes its chunks from the index.
	RemoveVectorStoreFile(ctx context.Context, userID, storeID, fileID string) error
	// VectorStoresOfFile lists the IDs of the owner's stores that hold the
	// file, so that deleting the file can take it out of each.
	VectorStoresOfFile(ctx context.Context, userID, fileID string) ([]string, error)
	// CancelVectorStoreFiles marks the batch's files still in progress
	// FileCancelled and says how many.
	CancelVectorStoreFiles(ctx context.Context, userID, storeID, batchID string) (int, error)

	// ClaimIngestion claims up to limit files in progress of any owner
	// whose claim is free or lapsed, until now+lease, oldest first.
	ClaimIngestion(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]IngestionClaim, error)
	// RenewIngestion extends a claim still held to now+lease (never
	// shortening it) and returns it so; a claim no longer held (lapsed and
	// given again, or the file was removed, cancelled or finished) is
	// ErrNotFound. A long ingestion renews its claim so that no other
	// gateway embeds (and charges for) the same file meanwhile.
	RenewIngestion(ctx context.Context, claim IngestionClaim, now time.Time, lease time.Duration) (IngestionClaim, error)
	// FinishIngestion ends a claimed file's ingestion: status
	// FileCompleted (with its chunks and bytes, which join the store's
	// UsageBytes) or FileFailed (with lastError). A claim that is no longer
	// held (lapsed and given again, or the file was removed or cancelled)
	// is ErrNotFound, and nothing changes.
	FinishIngestion(ctx context.Context, claim IngestionClaim, status, lastError string, chunks int, usageBytes int64) error
}
