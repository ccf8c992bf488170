package storetest

import (
	"slices"
	"testing"

	"github.com/parleyhq/parley/server/store"
)

// TestUserDirectory is the conformance suite for the operator's methods of
// store.Accounts: SearchUsers and SetUserAdmin.
func TestUserDirectory(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	for _, e := range []string{"Ann@Example.com", "anna@example.com", "annabel@example.org", "bob@example.com", "an_x@example.com", "an%y@example.com"} {
		mustUser(t, s, e)
	}
	emails := func(prefix string, size int) []string {
		var out []string
		for _, u := range collect(t, size, func(p store.PageRequest) ([]store.User, string, error) {
			return s.Accounts.SearchUsers(ctx, prefix, p)
		}) {
			out = append(out, u.Email)
		}
		return out
	}
	if got, want := emails("ANN", 2), []string{"Ann@Example.com", "anna@example.com", "annabel@example.org"}; !slices.Equal(got, want) {
		t.Fatalf("prefix ANN: got %v, want %v", got, want)
	}
	if got := emails("", 4); len(got) != 6 {
		t.Fatalf("no prefix: got %v", got)
	}
	// LIKE's wildcards are plain characters.
	if got, want := emails("an_", 10), []string{"an_x@example.com"}; !slices.Equal(got, want) {
		t.Fatalf("prefix an_: got %v, want %v", got, want)
	}
	if got, want := emails("an%", 10), []string{"an%y@example.com"}; !slices.Equal(got, want) {
		t.Fatalf("prefix an%%: got %v, want %v", got, want)
	}
	if got := emails("zed", 10); len(got) != 0 {
		t.Fatalf("prefix zed: %v", got)
	}
	checkBadCursors(t, func(p store.PageRequest) ([]store.User, string, error) { return s.Accounts.SearchUsers(ctx, "a", p) })

	u := mustUser(t, s, "admin-to-be@example.com")
	got, err := s.Accounts.SetUserAdmin(ctx, u.ID, true)
	noErr(t, err, "SetUserAdmin")
	if !got.Admin || got.Email != u.Email || got.Tier != u.Tier {
		t.Fatalf("SetUserAdmin = %+v", got)
	}
	back, err := s.Accounts.GetUser(ctx, u.ID)
	noErr(t, err, "GetUser")
	if !back.Admin {
		t.Fatal("admin flag not stored")
	}
	got, err = s.Accounts.SetUserAdmin(ctx, u.ID, false)
	noErr(t, err, "SetUserAdmin false")
	if got.Admin {
		t.Fatal("admin flag not cleared")
	}
	_, err = s.Accounts.SetUserAdmin(ctx, newID(), true)
	wantErr(t, err, store.ErrNotFound, "SetUserAdmin of nobody")
}
