package store

import (
	"context"
	"time"
)

// The statuses of a batch, as OpenAI names them.
const (
	BatchValidating = "validating"
	BatchInProgress = "in_progress"
	BatchFinalizing = "finalizing"
	BatchCompleted  = "completed"
	BatchFailed     = "failed"
	BatchExpired    = "expired"
	BatchCancelling = "cancelling"
	BatchCancelled  = "cancelled"
)

// BatchEnded reports whether status is final.
func BatchEnded(status string) bool {
	switch status {
	case BatchCompleted, BatchFailed, BatchExpired, BatchCancelled:
		return true
	}
	return false
}

// Batch is a file of requests run on idle capacity (the Batch API).
type Batch struct {
	// ID is "batch_" and a UUIDv7's hex.
	ID, UserID string
	// APIKeyID is the key that created it (its lines' usage records name
	// it); empty on the session channel.
	APIKeyID         string
	Endpoint         string
	InputFileID      string
	CompletionWindow string
	Status           string
	OutputFileID     string
	ErrorFileID      string
	Metadata         map[string]string
	// Errors are why the input did not validate.
	Errors []BatchError
	// Total, Completed and Failed count the lines.
	Total, Completed, Failed int
	// CostNanos sums what the lines were charged.
	CostNanos                                         int64
	CreatedAt, ExpiresAt                              time.Time
	InProgressAt, FinalizingAt, CompletedAt, FailedAt time.Time
	ExpiredAt, CancellingAt, CancelledAt              time.Time
}

// BatchError is one reason an input file did not validate.
type BatchError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	Line    int    `json:"line,omitempty"`
}

// BatchLine is one request of a batch. Index is its 0-based line in the
// input file (empty lines skipped); Body is its request body, as given.
type BatchLine struct {
	BatchID  string
	Index    int
	CustomID string
	Body     string
	// Done is set once the line has its result: Result is its line of the
	// output file (Failed false) or of the error file (Failed true).
	Done   bool
	Failed bool
	Result string
}

// BatchClaim is a gateway's claim on running a batch: until Until no other
// claim is given, and only the holder's Token changes the batch's status.
type BatchClaim struct {
	BatchID string
	Token   string
	Until   time.Time
}

// BatchUpdate is a status change by a claim holder: Status, with the time
// it happened at (stamped on the status's own timestamp) and, when set,
// the output and error files and the validation errors.
type BatchUpdate struct {
	Status                    string
	At                        time.Time
	OutputFileID, ErrorFileID string
	Errors                    []BatchError
}

// Batches keeps batches and their lines. Reads and cancels by the owner
// are scoped to a user (another user's batch is ErrNotFound); the runner's
// methods work on any user's batch under a claim.
type Batches interface {
	// CreateBatch stores b (an ID taken is ErrConflict).
	CreateBatch(ctx context.Context, b Batch) error
	// GetBatch returns the owner's batch; userID "" reads any owner's.
	GetBatch(ctx context.Context, userID, id string) (Batch, error)
	// ListBatches lists the owner's batches, newest first.
	ListBatches(ctx context.Context, userID string, page PageRequest) ([]Batch, string, error)
	// ListOpenBatches returns up to limit batches of any owner that have
	// not ended, oldest first (the admin's view).
	ListOpenBatches(ctx context.Context, limit int) ([]Batch, error)
	// CancelBatch moves the owner's batch from validating or in progress
	// to cancelling at now and returns it; a batch already cancelling is
	// returned as it is; one ended is ErrConflict.
	CancelBatch(ctx context.Context, userID, id string, now time.Time) (Batch, error)

	// ClaimBatch claims the oldest batch of any owner that has work left
	// (not ended) and whose claim is free or lapsed, until now+lease; false
	// when there is none.
	ClaimBatch(ctx context.Context, now time.Time, lease time.Duration) (BatchClaim, bool, error)
	// RenewBatch extends a claim still held to now+lease; one no longer
	// held (lapsed and given again) is ErrNotFound.
	RenewBatch(ctx context.Context, c BatchClaim, now time.Time, lease time.Duration) (BatchClaim, error)
	// ReleaseBatch gives a claim up, so that any gateway may claim the
	// batch at once.
	ReleaseBatch(ctx context.Context, c BatchClaim) error
	// StartBatch moves a claimed batch from validating to in progress at
	// now with its lines, all not done, in one transaction.
	StartBatch(ctx context.Context, c BatchClaim, lines []BatchLine, now time.Time) error
	// UpdateBatch applies u to a claimed batch. A claim no longer held is
	// ErrNotFound, and nothing changes; so is any status but cancelled for
	// a batch its owner is cancelling (the cancel wins a race with the
	// batch's end).
	UpdateBatch(ctx context.Context, c BatchClaim, u BatchUpdate) error
	// PendingBatchLines returns up to limit lines not done with an index
	// above after, in order.
	PendingBatchLines(ctx context.Context, batchID string, after, limit int) ([]BatchLine, error)
	// FinishBatchLine stores a line's result once, counting it as
	// completed or failed and adding costNanos to the batch's cost, in one
	// transaction; it reports false (and changes nothing) when the line
	// was done already.
	FinishBatchLine(ctx context.Context, batchID string, index int, failed bool, result string, costNanos int64) (bool, error)
	// BatchLines returns up to limit lines with an index above after, in
	// order, with their results: what the output and error files are
	// written from.
	BatchLines(ctx context.Context, batchID string, after, limit int) ([]BatchLine, error)
}
