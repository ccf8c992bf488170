// Package storetest holds the conformance suites every backend of the store
// interfaces must pass, one function per interface, in the style of
// Temporal's persistence tests. A backend's test calls each with a factory
// that returns a fresh, empty store:
//
//	func TestAccounts(t *testing.T) { storetest.TestAccounts(t, newStore) }
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
)

// NewStore returns a fresh, empty store for one test, cleaned up with t.
type NewStore func(t *testing.T) store.Store

// NewLimiter returns a fresh, empty limiter for one test.
type NewLimiter func(t *testing.T) store.Limiter

// t0 is the suites' fixed "now"; tests move a fake clock from it.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// RunAll runs every store suite as a subtest.
func RunAll(t *testing.T, newStore NewStore) {
	t.Run("Accounts", func(t *testing.T) { TestAccounts(t, newStore) })
	t.Run("Conversations", func(t *testing.T) { TestConversations(t, newStore) })
	t.Run("Messages", func(t *testing.T) { TestMessages(t, newStore) })
	t.Run("Ledger", func(t *testing.T) { TestLedger(t, newStore) })
	t.Run("Usage", func(t *testing.T) { TestUsage(t, newStore) })
	t.Run("Attachments", func(t *testing.T) { TestAttachments(t, newStore) })
	t.Run("Audit", func(t *testing.T) { TestAudit(t, newStore) })
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func mustUser(t *testing.T, s store.Store, email string) store.User {
	t.Helper()
	u := store.User{ID: newID(), Email: email, DisplayName: "User " + email, PasswordHash: "$argon2id$x", Tier: store.TierFree, CreatedAt: t0}
	if err := s.Accounts.CreateUser(t.Context(), u); err != nil {
		t.Fatalf("CreateUser(%s): %v", email, err)
	}
	return u
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// unknownUser checks a write for a user no store holds: a store that
// keeps the users with their rows refuses it as not found; one whose rows
// live apart from the users (PostgreSQL's data clusters, several URLs in
// --postgres-url) cannot tell, and callers resolve the user first.
func unknownUser(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		wantErr(t, err, store.ErrNotFound, what)
	}
}

func noErr(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func sameTime(t *testing.T, got, want time.Time, what string) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// collect walks every page of a list, checking the cursor protocol.
func collect[T any](t *testing.T, size int, list func(p store.PageRequest) ([]T, string, error)) []T {
	t.Helper()
	var all []T
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("pagination does not terminate")
		}
		items, next, err := list(store.PageRequest{Size: size, Cursor: cursor})
		noErr(t, err, "list page")
		if len(items) > size {
			t.Fatalf("page of %d items, asked for %d", len(items), size)
		}
		all = append(all, items...)
		if next == "" {
			return all
		}
		if len(items) == 0 {
			t.Fatal("empty page with a next cursor")
		}
		cursor = next
	}
}

// checkBadCursors asserts that malformed cursors are refused.
func checkBadCursors[T any](t *testing.T, list func(p store.PageRequest) ([]T, string, error)) {
	t.Helper()
	for _, c := range []string{"!!!", "not-a-cursor", "dGhpcyBpcyBub3QgYSBjdXJzb3I", "%%%%"} {
		_, _, err := list(store.PageRequest{Size: 10, Cursor: c})
		wantErr(t, err, store.ErrInvalidCursor, fmt.Sprintf("cursor %q", c))
	}
}

func ctxOf(t *testing.T) context.Context { return t.Context() }
