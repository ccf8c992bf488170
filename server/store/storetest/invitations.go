package storetest

import (
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestInvitations is the conformance suite for store.Invitations: issue,
// list, revoke, and the take of a use in the transaction that creates the
// user (all or nothing, never past MaxUses, even when sign-ups race).
func TestInvitations(t *testing.T, newStore NewStore) {
	s, ctx := newStore(t), t.Context()
	inv := func(code string, maxUses int64, created time.Time) store.Invitation {
		h := sha256.Sum256([]byte(code))
		return store.Invitation{
			ID: newID(), CodeHash: h[:], Prefix: code[:4], Note: "for " + code, CreatedBy: "cli",
			CreatedAt: created, ExpiresAt: created.Add(24 * time.Hour), MaxUses: maxUses,
		}
	}
	hash := func(code string) []byte { h := sha256.Sum256([]byte(code)); return h[:] }
	user := func(email string) store.User {
		return store.User{ID: newID(), Email: email, PasswordHash: "$argon2id$x", Tier: store.TierFree, CreatedAt: t0}
	}
	noUser := func(email string) {
		t.Helper()
		if _, err := s.Accounts.GetUserByEmail(ctx, email); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("user %s exists after a refused sign-up (err %v)", email, err)
		}
	}

	// Creation: refused shapes, then three codes.
	bad := inv("code-bad", 1, t0)
	bad.MaxUses = 0
	wantErr(t, s.Accounts.CreateInvitation(ctx, bad), store.ErrInvalidArgument, "MaxUses 0")
	bad = inv("code-bad", 1, t0)
	bad.CodeHash = nil
	wantErr(t, s.Accounts.CreateInvitation(ctx, bad), store.ErrInvalidArgument, "empty code hash")
	one, two, old := inv("code-one", 1, t0), inv("code-two", 2, t0.Add(time.Second)), inv("code-old", 1, t0.Add(-48*time.Hour))
	for _, i := range []store.Invitation{one, two, old} {
		noErr(t, s.Accounts.CreateInvitation(ctx, i), "CreateInvitation "+i.Note)
	}
	dup := inv("code-one", 1, t0)
	wantErr(t, s.Accounts.CreateInvitation(ctx, dup), store.ErrConflict, "same code hash")
	dup = inv("code-new", 1, t0)
	dup.ID = one.ID
	wantErr(t, s.Accounts.CreateInvitation(ctx, dup), store.ErrConflict, "same ID")

	// Listing: newest first, paged, as stored.
	list := collect(t, 2, func(p store.PageRequest) ([]store.Invitation, string, error) {
		return s.Accounts.ListInvitations(ctx, p)
	})
	if len(list) != 3 || list[0].ID != two.ID || list[1].ID != one.ID || list[2].ID != old.ID {
		t.Fatalf("ListInvitations order: %+v", list)
	}
	got := list[1]
	if got.Prefix != "code" || got.Note != "for code-one" || got.CreatedBy != "cli" || got.MaxUses != 1 || got.Uses != 0 ||
		!got.LastUsedAt.IsZero() || !got.RevokedAt.IsZero() || string(got.CodeHash) != string(one.CodeHash) {
		t.Fatalf("listed invitation %+v", got)
	}
	sameTime(t, got.CreatedAt, one.CreatedAt, "CreatedAt")
	sameTime(t, got.ExpiresAt, one.ExpiresAt, "ExpiresAt")
	checkBadCursors(t, func(p store.PageRequest) ([]store.Invitation, string, error) {
		return s.Accounts.ListInvitations(ctx, p)
	})

	// Looked up by code.
	byCode, err := s.Accounts.GetInvitationByCode(ctx, hash("code-two"))
	noErr(t, err, "GetInvitationByCode")
	if byCode.ID != two.ID || byCode.MaxUses != 2 || byCode.Note != "for code-two" {
		t.Fatalf("GetInvitationByCode = %+v", byCode)
	}
	_, err = s.Accounts.GetInvitationByCode(ctx, hash("code-none"))
	wantErr(t, err, store.ErrNotFound, "GetInvitationByCode of an unknown code")

	// Unknown, expired: refused, nothing written.
	now := t0.Add(time.Minute)
	_, err = s.Accounts.CreateUserWithInvitation(ctx, user("nobody@example.com"), hash("code-none"), now)
	wantErr(t, err, store.ErrNotFound, "unknown code")
	noUser("nobody@example.com")
	_, err = s.Accounts.CreateUserWithInvitation(ctx, user("late@example.com"), hash("code-old"), now)
	var ue *store.InvitationUnusableError
	if !errors.As(err, &ue) || ue.Reason != store.InvitationExpired || !errors.Is(err, store.ErrInvitationUnusable) {
		t.Fatalf("expired code: %v", err)
	}
	noUser("late@example.com")

	// A use: the user exists, the invitation counts it.
	first := user("first@example.com")
	used, err := s.Accounts.CreateUserWithInvitation(ctx, first, hash("code-one"), now)
	noErr(t, err, "CreateUserWithInvitation")
	if used.ID != one.ID || used.Uses != 1 {
		t.Fatalf("used invitation %+v", used)
	}
	sameTime(t, used.LastUsedAt, now, "LastUsedAt")
	if back, err := s.Accounts.GetUser(ctx, first.ID); err != nil || back.Email != first.Email || back.Tier != store.TierFree {
		t.Fatalf("GetUser after invited sign-up: %+v %v", back, err)
	}
	_, err = s.Accounts.CreateUserWithInvitation(ctx, user("second@example.com"), hash("code-one"), now)
	if !errors.As(err, &ue) || ue.Reason != store.InvitationUsedUp {
		t.Fatalf("used code: %v", err)
	}
	noUser("second@example.com")

	// A taken email gives the use back (the transaction is undone).
	taken := user("FIRST@example.com")
	_, err = s.Accounts.CreateUserWithInvitation(ctx, taken, hash("code-two"), now)
	wantErr(t, err, store.ErrConflict, "email taken")
	list, _, err = s.Accounts.ListInvitations(ctx, store.PageRequest{Size: 10})
	noErr(t, err, "ListInvitations")
	if list[0].ID != two.ID || list[0].Uses != 0 || !list[0].LastUsedAt.IsZero() {
		t.Fatalf("a failed sign-up took a use: %+v", list[0])
	}

	// Revocation: idempotent, keeps the first time, refuses later uses.
	r, err := s.Accounts.RevokeInvitation(ctx, "", two.ID, now)
	noErr(t, err, "RevokeInvitation")
	sameTime(t, r.RevokedAt, now, "RevokedAt")
	r, err = s.Accounts.RevokeInvitation(ctx, "", two.ID, now.Add(time.Hour))
	noErr(t, err, "RevokeInvitation again")
	sameTime(t, r.RevokedAt, now, "RevokedAt after a second revoke")
	_, err = s.Accounts.RevokeInvitation(ctx, "", newID(), now)
	wantErr(t, err, store.ErrNotFound, "revoke unknown")
	_, err = s.Accounts.CreateUserWithInvitation(ctx, user("revoked@example.com"), hash("code-two"), now)
	if !errors.As(err, &ue) || ue.Reason != store.InvitationRevoked {
		t.Fatalf("revoked code: %v", err)
	}
	noUser("revoked@example.com")

	// Racing sign-ups with one code of 3 uses: exactly 3 accounts.
	race := inv("code-race", 3, t0.Add(2*time.Second))
	noErr(t, s.Accounts.CreateInvitation(ctx, race), "CreateInvitation race")
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Accounts.CreateUserWithInvitation(ctx, user(newID()+"@race.example.com"), hash("code-race"), now)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.As(err, &ue) && ue.Reason == store.InvitationUsedUp:
		default:
			t.Fatalf("racing sign-up: %v", err)
		}
	}
	list, _, err = s.Accounts.ListInvitations(ctx, store.PageRequest{Size: 10})
	noErr(t, err, "ListInvitations")
	if ok != 3 || list[0].ID != race.ID || list[0].Uses != 3 {
		t.Fatalf("racing sign-ups: %d succeeded, invitation %+v", ok, list[0])
	}
	users, _, err := s.Accounts.SearchUsers(ctx, "", store.PageRequest{Size: 100})
	noErr(t, err, "SearchUsers")
	if len(users) != 1+3 {
		t.Fatalf("%d users after the race, want 4", len(users))
	}
}
