package storetest

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestAudit is the conformance suite for store.Audit.
func TestAudit(t *testing.T, newStore NewStore) {
	t.Run("AppendList", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		a, b := newID(), newID()
		kinds := []string{store.AuditSignup, store.AuditLoginSuccess, store.AuditAPIKeyCreated, store.AuditLoginFailure, store.AuditLogout}
		var events []store.AuditEvent
		for i := range 25 {
			e := store.AuditEvent{ID: newID(), UserID: a, Kind: kinds[i%len(kinds)], IP: "198.51.100.7", UserAgent: "ua",
				Detail: `{"n":1}`, At: t0.Add(time.Duration(i/2) * time.Second)}
			noErr(t, s.Audit.Append(ctx, e), "Append")
			events = append(events, e)
		}
		noErr(t, s.Audit.Append(ctx, events[3]), "Append duplicate (no-op)")
		noErr(t, s.Audit.Append(ctx, store.AuditEvent{ID: newID(), UserID: b, Kind: store.AuditTierChanged, At: t0}), "Append b")
		noErr(t, s.Audit.Append(ctx, store.AuditEvent{ID: newID(), Kind: store.AuditLoginFailure, At: t0}), "Append without user")

		list := func(p store.PageRequest) ([]store.AuditEvent, string, error) { return s.Audit.List(ctx, a, p) }
		got := collect(t, 6, list)
		if len(got) != len(events) {
			t.Fatalf("listed %d events, want %d", len(got), len(events))
		}
		seen := map[string]bool{}
		for i, g := range got {
			if seen[g.ID] {
				t.Fatalf("event %s twice", g.ID)
			}
			seen[g.ID] = true
			if g.UserID != a || g.IP != "198.51.100.7" || g.Detail != `{"n":1}` {
				t.Fatalf("event = %+v", g)
			}
			if i > 0 {
				p := got[i-1]
				if p.At.Before(g.At) || (p.At.Equal(g.At) && p.ID < g.ID) {
					t.Fatalf("events %d and %d not newest first", i-1, i)
				}
			}
		}
		bl, _, err := s.Audit.List(ctx, b, store.PageRequest{})
		noErr(t, err, "List b")
		if len(bl) != 1 || bl[0].Kind != store.AuditTierChanged {
			t.Fatalf("b's events = %+v", bl)
		}
		checkBadCursors(t, list)
	})
}
