package storetest

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

func hash(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

// TestAccounts is the conformance suite for store.Accounts.
func TestAccounts(t *testing.T, newStore NewStore) {
	t.Run("UserRoundTrip", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := store.User{ID: newID(), Email: "ada@example.com", DisplayName: "Ada", PasswordHash: "$argon2id$v=19$h",
			Tier: store.TierPro, Admin: true, CreatedAt: t0.Add(123456789)}
		noErr(t, s.Accounts.CreateUser(ctx, u), "CreateUser")
		got, err := s.Accounts.GetUser(ctx, u.ID)
		noErr(t, err, "GetUser")
		sameTime(t, got.CreatedAt, u.CreatedAt, "CreatedAt")
		got.CreatedAt = u.CreatedAt
		if got != u {
			t.Fatalf("GetUser = %+v, want %+v", got, u)
		}
		got, err = s.Accounts.GetUserByEmail(ctx, "ADA@Example.COM")
		noErr(t, err, "GetUserByEmail, other case")
		if got.ID != u.ID || got.Email != u.Email {
			t.Fatalf("GetUserByEmail = %+v", got)
		}
		_, err = s.Accounts.GetUser(ctx, newID())
		wantErr(t, err, store.ErrNotFound, "GetUser unknown")
		_, err = s.Accounts.GetUserByEmail(ctx, "nobody@example.com")
		wantErr(t, err, store.ErrNotFound, "GetUserByEmail unknown")
	})

	t.Run("DuplicateEmail", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "grace@example.com")
		err := s.Accounts.CreateUser(ctx, store.User{ID: newID(), Email: "Grace@EXAMPLE.com", Tier: store.TierFree, CreatedAt: t0})
		wantErr(t, err, store.ErrConflict, "duplicate email in another case")
		err = s.Accounts.CreateUser(ctx, store.User{ID: u.ID, Email: "other@example.com", Tier: store.TierFree, CreatedAt: t0})
		wantErr(t, err, store.ErrConflict, "duplicate ID")
	})

	t.Run("SetUserTier", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "tier@example.com")
		got, err := s.Accounts.SetUserTier(ctx, u.ID, store.TierMax)
		noErr(t, err, "SetUserTier")
		if got.Tier != store.TierMax || got.ID != u.ID || got.Email != u.Email {
			t.Fatalf("SetUserTier returned %+v", got)
		}
		got, err = s.Accounts.GetUser(ctx, u.ID)
		noErr(t, err, "GetUser")
		if got.Tier != store.TierMax {
			t.Fatalf("tier after SetUserTier = %q", got.Tier)
		}
		_, err = s.Accounts.SetUserTier(ctx, newID(), store.TierPlus)
		wantErr(t, err, store.ErrNotFound, "SetUserTier unknown user")
	})

	t.Run("Sessions", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "sess@example.com")
		live := store.Session{TokenHash: hash("live"), UserID: u.ID, IP: "192.0.2.1", UserAgent: "test/1",
			CreatedAt: t0, ExpiresAt: t0.Add(30 * 24 * time.Hour)}
		old := store.Session{TokenHash: hash("old"), UserID: u.ID, IP: "192.0.2.2", UserAgent: "test/2",
			CreatedAt: t0.Add(-31 * 24 * time.Hour), ExpiresAt: t0.Add(-time.Hour)}
		noErr(t, s.Accounts.CreateSession(ctx, live), "CreateSession live")
		noErr(t, s.Accounts.CreateSession(ctx, old), "CreateSession old")
		wantErr(t, s.Accounts.CreateSession(ctx, live), store.ErrConflict, "CreateSession duplicate hash")
		wantErr(t, s.Accounts.CreateSession(ctx, store.Session{TokenHash: hash("x"), UserID: newID(), CreatedAt: t0, ExpiresAt: t0}),
			store.ErrNotFound, "CreateSession for unknown user")

		gs, gu, err := s.Accounts.GetSession(ctx, live.TokenHash)
		noErr(t, err, "GetSession")
		if !bytes.Equal(gs.TokenHash, live.TokenHash) || gs.UserID != u.ID || gs.IP != live.IP || gs.UserAgent != live.UserAgent {
			t.Fatalf("GetSession = %+v", gs)
		}
		sameTime(t, gs.ExpiresAt, live.ExpiresAt, "ExpiresAt")
		sameTime(t, gs.CreatedAt, live.CreatedAt, "CreatedAt")
		if gu.ID != u.ID || gu.Tier != u.Tier {
			t.Fatalf("GetSession user = %+v", gu)
		}
		if gs.Expired(t0) {
			t.Fatal("live session reported expired")
		}

		// Expired sessions are returned; the caller decides.
		gs, _, err = s.Accounts.GetSession(ctx, old.TokenHash)
		noErr(t, err, "GetSession expired")
		if !gs.Expired(t0) {
			t.Fatal("expired session not reported expired")
		}
		if !gs.Expired(old.ExpiresAt) {
			t.Fatal("a session is expired at exactly ExpiresAt")
		}

		n, err := s.Accounts.DeleteExpiredSessions(ctx, t0)
		noErr(t, err, "DeleteExpiredSessions")
		if n != 1 {
			t.Fatalf("DeleteExpiredSessions removed %d, want 1", n)
		}
		_, _, err = s.Accounts.GetSession(ctx, old.TokenHash)
		wantErr(t, err, store.ErrNotFound, "GetSession after sweep")

		noErr(t, s.Accounts.DeleteSession(ctx, live.TokenHash), "DeleteSession")
		_, _, err = s.Accounts.GetSession(ctx, live.TokenHash)
		wantErr(t, err, store.ErrNotFound, "GetSession after logout")
		noErr(t, s.Accounts.DeleteSession(ctx, live.TokenHash), "DeleteSession twice")
	})

	t.Run("APIKeys", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		a := mustUser(t, s, "a@example.com")
		b := mustUser(t, s, "b@example.com")
		k := store.APIKey{ID: newID(), UserID: a.ID, Name: "laptop", Prefix: "pk_abcd", SecretHash: hash("secret"),
			CreatedAt: t0, ExpiresAt: t0.Add(30 * 24 * time.Hour)}
		noErr(t, s.Accounts.CreateAPIKey(ctx, k), "CreateAPIKey")
		dup := k
		dup.ID = newID()
		wantErr(t, s.Accounts.CreateAPIKey(ctx, dup), store.ErrConflict, "CreateAPIKey duplicate secret")
		orphan := store.APIKey{ID: newID(), UserID: newID(), SecretHash: hash("orphan"), CreatedAt: t0, ExpiresAt: t0}
		wantErr(t, s.Accounts.CreateAPIKey(ctx, orphan), store.ErrNotFound, "CreateAPIKey for unknown user")

		gk, gu, err := s.Accounts.GetAPIKeyByHash(ctx, k.SecretHash)
		noErr(t, err, "GetAPIKeyByHash")
		if gk.ID != k.ID || gk.UserID != a.ID || gk.Name != k.Name || gk.Prefix != k.Prefix || gu.ID != a.ID {
			t.Fatalf("GetAPIKeyByHash = %+v, %+v", gk, gu)
		}
		if !gk.LastUsedAt.IsZero() || !gk.RevokedAt.IsZero() {
			t.Fatalf("new key has LastUsedAt %v RevokedAt %v", gk.LastUsedAt, gk.RevokedAt)
		}
		if !gk.Usable(t0) || gk.Usable(k.ExpiresAt) {
			t.Fatal("Usable wrong around ExpiresAt")
		}
		_, _, err = s.Accounts.GetAPIKeyByHash(ctx, hash("unknown"))
		wantErr(t, err, store.ErrNotFound, "GetAPIKeyByHash unknown")

		// Batched last use: newer wins, older and unknown ignored.
		noErr(t, s.Accounts.TouchAPIKeys(ctx, map[string]time.Time{k.ID: t0.Add(time.Minute), newID(): t0}), "TouchAPIKeys")
		noErr(t, s.Accounts.TouchAPIKeys(ctx, map[string]time.Time{k.ID: t0.Add(time.Second)}), "TouchAPIKeys older")
		gk, _, err = s.Accounts.GetAPIKeyByHash(ctx, k.SecretHash)
		noErr(t, err, "GetAPIKeyByHash after touch")
		sameTime(t, gk.LastUsedAt, t0.Add(time.Minute), "LastUsedAt")

		// User B can neither revoke nor list A's key.
		wantErr(t, s.Accounts.RevokeAPIKey(ctx, b.ID, k.ID, t0), store.ErrNotFound, "RevokeAPIKey by another user")
		bl, _, err := s.Accounts.ListAPIKeys(ctx, b.ID, store.PageRequest{})
		noErr(t, err, "ListAPIKeys B")
		if len(bl) != 0 {
			t.Fatalf("user B lists %d keys", len(bl))
		}
		_, _, err = s.Accounts.GetAPIKeyByHash(ctx, k.SecretHash)
		noErr(t, err, "key still works after B's attempt")

		revokedAt := t0.Add(time.Hour)
		noErr(t, s.Accounts.RevokeAPIKey(ctx, a.ID, k.ID, revokedAt), "RevokeAPIKey")
		noErr(t, s.Accounts.RevokeAPIKey(ctx, a.ID, k.ID, revokedAt.Add(time.Hour)), "RevokeAPIKey twice")
		wantErr(t, s.Accounts.RevokeAPIKey(ctx, a.ID, newID(), t0), store.ErrNotFound, "RevokeAPIKey unknown")
		_, _, err = s.Accounts.GetAPIKeyByHash(ctx, k.SecretHash)
		wantErr(t, err, store.ErrNotFound, "GetAPIKeyByHash revoked")
		al, _, err := s.Accounts.ListAPIKeys(ctx, a.ID, store.PageRequest{})
		noErr(t, err, "ListAPIKeys A")
		if len(al) != 1 || al[0].ID != k.ID {
			t.Fatalf("ListAPIKeys = %+v", al)
		}
		sameTime(t, al[0].RevokedAt, revokedAt, "RevokedAt keeps the first revocation")
		if al[0].Usable(t0) {
			t.Fatal("revoked key reported usable")
		}

		// An expired key is returned; the caller checks.
		exp := store.APIKey{ID: newID(), UserID: a.ID, Name: "old", Prefix: "pk_old", SecretHash: hash("expired"),
			CreatedAt: t0.Add(-48 * time.Hour), ExpiresAt: t0.Add(-time.Hour)}
		noErr(t, s.Accounts.CreateAPIKey(ctx, exp), "CreateAPIKey expired")
		gk, _, err = s.Accounts.GetAPIKeyByHash(ctx, exp.SecretHash)
		noErr(t, err, "GetAPIKeyByHash expired")
		if gk.Usable(t0) {
			t.Fatal("expired key reported usable")
		}
	})

	t.Run("APIKeyResponseCache", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "cache@example.com")
		modes := []store.ResponseCacheMode{store.ResponseCacheDefault, store.ResponseCacheOn, store.ResponseCacheOff}
		for i, m := range modes {
			k := store.APIKey{ID: newID(), UserID: u.ID, Name: "k", Prefix: "pk_", SecretHash: hash(newID()),
				CreatedAt: t0.Add(time.Duration(i) * time.Second), ExpiresAt: t0.Add(time.Hour), ResponseCache: m}
			noErr(t, s.Accounts.CreateAPIKey(ctx, k), "CreateAPIKey")
			gk, _, err := s.Accounts.GetAPIKeyByHash(ctx, k.SecretHash)
			noErr(t, err, "GetAPIKeyByHash")
			if gk.ResponseCache != m {
				t.Fatalf("GetAPIKeyByHash ResponseCache = %q, want %q", gk.ResponseCache, m)
			}
		}
		listed, _, err := s.Accounts.ListAPIKeys(ctx, u.ID, store.PageRequest{})
		noErr(t, err, "ListAPIKeys")
		if len(listed) != len(modes) {
			t.Fatalf("listed %d keys, want %d", len(listed), len(modes))
		}
		for i, k := range listed { // newest first
			if want := modes[len(modes)-1-i]; k.ResponseCache != want {
				t.Fatalf("ListAPIKeys[%d].ResponseCache = %q, want %q", i, k.ResponseCache, want)
			}
		}
		bad := store.APIKey{ID: newID(), UserID: u.ID, Name: "k", Prefix: "pk_", SecretHash: hash(newID()),
			CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), ResponseCache: "sometimes"}
		wantErr(t, s.Accounts.CreateAPIKey(ctx, bad), store.ErrInvalidArgument, "CreateAPIKey unknown response cache mode")
		_, _, err = s.Accounts.GetAPIKeyByHash(ctx, bad.SecretHash)
		wantErr(t, err, store.ErrNotFound, "the invalid key was not stored")
	})

	t.Run("APIKeyPagination", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		u := mustUser(t, s, "many@example.com")
		const n = 23
		for i := range n {
			// Pairs share a creation time to exercise the ID tie-break.
			k := store.APIKey{ID: newID(), UserID: u.ID, Name: "k", Prefix: "pk_", SecretHash: hash(newID()),
				CreatedAt: t0.Add(time.Duration(i/2) * time.Second), ExpiresAt: t0.Add(time.Hour)}
			noErr(t, s.Accounts.CreateAPIKey(ctx, k), "CreateAPIKey")
		}
		list := func(p store.PageRequest) ([]store.APIKey, string, error) { return s.Accounts.ListAPIKeys(ctx, u.ID, p) }
		all := collect(t, 4, list)
		if len(all) != n {
			t.Fatalf("listed %d keys, want %d", len(all), n)
		}
		seen := map[string]bool{}
		for i, k := range all {
			if seen[k.ID] {
				t.Fatalf("key %s listed twice", k.ID)
			}
			seen[k.ID] = true
			if i > 0 {
				p := all[i-1]
				if p.CreatedAt.Before(k.CreatedAt) || (p.CreatedAt.Equal(k.CreatedAt) && p.ID < k.ID) {
					t.Fatalf("keys %d and %d out of order", i-1, i)
				}
			}
		}
		checkBadCursors(t, list)
	})
}
