// Package store declares Parley's persistence layer: the domain types, the
// interfaces every backend implements, and the errors they report.
//
// The package holds no SQL and no driver types, so that callers depend only on
// behaviour and the embedded SQLite backend can be swapped for PostgreSQL,
// ScyllaDB, Redis or ClickHouse without touching them. Every operation that
// must be atomic (reserve from a balance, take from a limit, check a quota) is
// a single interface method: callers never read, modify and write back.
//
// Conventions shared by all interfaces:
//   - IDs are produced by callers (UUIDv7 strings), never by a store.
//   - Where a result depends on the current time, the caller passes it in, so
//     tests can inject a clock.
//   - Money is int64 nano-USD, never floating point.
//   - List methods take a PageRequest and return the items and an opaque cursor
//     for the next page ("" when there is none).
//   - Errors wrap the sentinel values below; test them with errors.Is.
package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotFound reports that the requested record does not exist or belongs to
// another user. The two cases are deliberately indistinguishable so that a
// caller cannot probe for other users' IDs.
var ErrNotFound = errors.New("store: not found")

// ErrConflict reports that a record with the same unique key (ID, email, token
// hash…) already exists, or that a state transition is not allowed from the
// record's current state.
var ErrConflict = errors.New("store: conflict")

// ErrInsufficientFunds reports that a balance does not cover the requested
// amount. The concrete error is an *InsufficientFundsError carrying the
// figures.
var ErrInsufficientFunds = errors.New("store: insufficient funds")

// ErrQuotaExceeded reports that storing a record would take a user past a
// storage quota.
var ErrQuotaExceeded = errors.New("store: quota exceeded")

// ErrInvalidCursor reports a page cursor that this store did not produce or
// cannot decode.
var ErrInvalidCursor = errors.New("store: invalid page cursor")

// ErrInvalidArgument reports an argument a store refuses before touching its
// data, such as a negative amount or a zero window.
var ErrInvalidArgument = errors.New("store: invalid argument")

// ErrUnavailable reports that the database holding the record did not
// answer (down, restarting, failing over): the call may succeed when
// retried a little later.
var ErrUnavailable = errors.New("store: unavailable")

// InsufficientFundsError is returned by Ledger methods that would take a
// balance below zero. It matches ErrInsufficientFunds with errors.Is, and
// carries the figures the API reports to the client.
type InsufficientFundsError struct {
	// AvailableNanos is the balance that was available, in nano-USD.
	AvailableNanos int64
	// RequiredNanos is the amount that was asked for, in nano-USD.
	RequiredNanos int64
}

// Error implements error.
func (e *InsufficientFundsError) Error() string {
	return fmt.Sprintf("store: insufficient funds: available %d nano-USD, required %d nano-USD",
		e.AvailableNanos, e.RequiredNanos)
}

// Is makes errors.Is(err, ErrInsufficientFunds) true.
func (e *InsufficientFundsError) Is(target error) bool { return target == ErrInsufficientFunds }

// DefaultPageSize is the page size used when a PageRequest leaves Size at zero
// or below.
const DefaultPageSize = 50

// MaxPageSize is the largest page a store returns; larger sizes are clamped.
// The API layer validates its own, smaller range before calling.
const MaxPageSize = 1000

// PageRequest asks for one page of a keyset-paginated list.
type PageRequest struct {
	// Size is the maximum number of items to return: DefaultPageSize when
	// zero or negative, clamped to MaxPageSize.
	Size int
	// Cursor is "" for the first page, otherwise the cursor returned with the
	// previous page. It is opaque: only the store that produced it can read it.
	Cursor string
}

// Limit returns the effective page size of p.
func (p PageRequest) Limit() int {
	switch {
	case p.Size <= 0:
		return DefaultPageSize
	case p.Size > MaxPageSize:
		return MaxPageSize
	default:
		return p.Size
	}
}

// Pinger is implemented by backends that can report whether they are
// reachable, for the gateway's /readyz endpoint.
type Pinger interface {
	// Ping returns nil when the backend answers.
	Ping(ctx context.Context) error
}

// Store bundles one implementation of every persistent interface. A backend
// such as store/sqlite fills all fields; in scale mode they may come from
// different backends.
type Store struct {
	// Accounts holds users, sessions and API keys.
	Accounts Accounts
	// Conversations holds conversation metadata.
	Conversations Conversations
	// Messages holds the messages of each conversation.
	Messages Messages
	// Ledger holds balances and reservations.
	Ledger Ledger
	// Usage holds per-request usage records.
	Usage Usage
	// Outbox holds the usage records the Ledger committed until a relay
	// copies them to Usage; nil when the Ledger writes them straight into
	// Usage (the same database).
	Outbox UsageOutbox
	// Attachments holds attachment metadata (the blobs live elsewhere).
	Attachments Attachments
	// Audit holds the security audit log.
	Audit Audit
	// Search finds conversations by the words of their titles and messages.
	Search ConversationSearch
	// Shares holds conversations' public share links.
	Shares Shares
	// VectorStores holds vector stores and their files' ingestion state;
	// nil where the backend keeps none.
	VectorStores VectorStores
	// Projects holds the web chat's projects; nil where the backend keeps
	// none.
	Projects Projects
	// Memories holds what web chat users asked to be remembered; nil where
	// the backend keeps none.
	Memories Memories
	// Batches holds the Batch API's batches and their lines; nil where the
	// backend keeps none.
	Batches Batches
	// Webhooks holds webhook endpoints and their deliveries; nil where the
	// backend keeps none.
	Webhooks Webhooks
	// Organizations holds organisations, their members, teams and budgets;
	// nil where the backend keeps none. It lives in the Ledger's database:
	// budgets are held in the same transaction as the balance.
	Organizations Organizations
	// Feedback holds people's ratings of answers; nil where the backend
	// keeps none. It lives with the conversations' metadata.
	Feedback Feedback
	// Prompts holds people's prompt libraries; nil where the backend keeps
	// none.
	Prompts Prompts
}
