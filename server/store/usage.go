package store

import (
	"context"
	"time"
)

// Channel names where a request came from.
const (
	// ChannelAPI is the bearer-key API channel.
	ChannelAPI = "api"
	// ChannelWeb is the cookie-authenticated web channel.
	ChannelWeb = "web"
	// ChannelBatch is a Batch API line, run on idle capacity at the batch
	// price.
	ChannelBatch = "batch"
)

// UsageRecord is what one request consumed and cost.
type UsageRecord struct {
	// RequestID identifies the request; Record is idempotent on it.
	RequestID string
	// UserID is the account.
	UserID string
	// APIKeyID is the key used, empty on the web channel.
	APIKeyID string
	// Channel is ChannelAPI, ChannelWeb or ChannelBatch.
	Channel string
	// Model is the model used.
	Model string
	// PromptTokens is the input token count.
	PromptTokens int64
	// CompletionTokens is the output token count.
	CompletionTokens int64
	// CachedTokens is the part of PromptTokens served from a prefix cache.
	CachedTokens int64
	// Estimated is true when the counts were made by the gateway's tokenizer
	// rather than reported by the worker.
	Estimated bool
	// CostNanos is what the user was charged, in nano-USD.
	CostNanos int64
	// FinishReason is why generation ended.
	FinishReason string
	// CreatedAt is when the request finished.
	CreatedAt time.Time
	// EndUser is the caller's end user as the request named it (the OpenAI
	// `user` field); empty when none was named.
	EndUser string
	// CacheHit marks an answer served from the response cache (no GPU
	// work), charged at the model's cache-hit price.
	CacheHit bool
	// RequestedModel is the name the client asked for when it was an alias
	// of Model (the model that served and priced it); empty otherwise.
	RequestedModel string
}

// Usage stores usage records: in the ledger's database, written by
// Ledger.Settle, or in ClickHouse at scale, written in batches by the relay
// from the UsageOutbox.
type Usage interface {
	// Record stores a batch of records. Records whose RequestID is already
	// stored are skipped, so a batch can be retried whole.
	Record(ctx context.Context, records []UsageRecord) error
	// List returns a user's records that match filter, newest first; an
	// empty userID lists every user's (the admin's recent usage). A cursor
	// is only valid with the user and filter of the list that returned it.
	List(ctx context.Context, userID string, filter UsageFilter, page PageRequest) ([]UsageRecord, string, error)
	// Summarize adds up a user's records with from <= CreatedAt < to per
	// day and model, ordered by day and then model. A day is a calendar day
	// at offset from UTC (UsageDay.Day counts days from 1970-01-01 there).
	Summarize(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]UsageDay, error)
	// SummarizeKeys is Summarize per day, model and API key (UsageDay.
	// APIKeyID; empty for the web channel), ordered by day, model and key.
	SummarizeKeys(ctx context.Context, userID string, from, to time.Time, offset time.Duration) ([]UsageDay, error)
}

// UsageDay is the usage of one model on one day.
type UsageDay struct {
	// Day is the day's number: days since 1970-01-01 at the summary's
	// offset from UTC.
	Day int64
	// Model is the model used.
	Model string
	// APIKeyID is the key used (SummarizeKeys only).
	APIKeyID string
	// Requests is how many records were counted.
	Requests int64
	// PromptTokens, CompletionTokens and CachedTokens are the sums of the
	// records' counts.
	PromptTokens, CompletionTokens, CachedTokens int64
	// CostNanos is the sum of what was charged, in nano-USD.
	CostNanos int64
}

// NanosPerDay is the length of a summary's day in nanoseconds.
const NanosPerDay = int64(24 * time.Hour)

// UsageOutbox holds the usage records a Ledger committed with their charges
// when the Usage store is another system (ClickHouse): they wait in the
// ledger's own database, written in the settle's transaction, until a relay
// (server/usage) has copied them to the Usage store, and only then are
// deleted. Rows survive restarts and outages of the Usage store.
type UsageOutbox interface {
	// Ship hands up to max of the oldest waiting records to ship, oldest
	// first, and deletes them once ship returns nil; when ship fails they
	// stay for a later call and Ship returns its error. A batch once handed
	// out is handed out again whole, the same records in the same order,
	// until a ship of it succeeds, and before records not handed out yet
	// unless another caller is shipping it: it may be larger than a later
	// call's max. (A store that drops an insert identical to one it holds,
	// ClickHouse's replicated tables, then stores a retried batch once.)
	// Callers sharing the database (several gateways) are handed disjoint
	// batches while a ship is in progress. It returns how many records were
	// shipped.
	Ship(ctx context.Context, max int, ship func(context.Context, []UsageRecord) error) (int, error)
	// Backlog returns how many records wait, and the CreatedAt of the
	// oldest (zero when none wait).
	Backlog(ctx context.Context) (int64, time.Time, error)
}

// MaxEndUserLen is the most bytes an end-user id (UsageRecord.EndUser) may
// have.
const MaxEndUserLen = 256

// UsageFilter narrows Usage.List. The zero value lists every record.
type UsageFilter struct {
	// EndUser, when not empty, keeps only the records whose EndUser is
	// exactly this.
	EndUser string
}
