package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// TestUsage is the conformance suite for store.Usage.
func TestUsage(t *testing.T, newStore NewStore) {
	t.Run("RecordList", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		a, b := newID(), newID()
		var recs []store.UsageRecord
		for i := range 30 {
			recs = append(recs, store.UsageRecord{RequestID: newID(), UserID: a, APIKeyID: newID(), Channel: store.ChannelAPI,
				Model: "sim-small", PromptTokens: int64(100 + i), CompletionTokens: int64(i), CachedTokens: int64(i / 2),
				Estimated: i%2 == 0, CacheHit: i%3 == 0, CostNanos: int64(i) * 1_000, FinishReason: "stop", RequestedModel: []string{"", "claude-sonnet-4-5"}[i%2],
				CreatedAt: t0.Add(time.Duration(i/3) * time.Second)})
		}
		recs = append(recs, store.UsageRecord{RequestID: newID(), UserID: b, Channel: store.ChannelWeb, Model: "m", CreatedAt: t0})
		noErr(t, s.Usage.Record(ctx, recs[:20]), "Record first batch")
		// A retried batch overlapping the first is stored once.
		noErr(t, s.Usage.Record(ctx, recs[10:]), "Record overlapping batch")
		noErr(t, s.Usage.Record(ctx, nil), "Record empty")

		list := func(p store.PageRequest) ([]store.UsageRecord, string, error) {
			return s.Usage.List(ctx, a, store.UsageFilter{}, p)
		}
		sameNewestFirst(t, "user a", collect(t, 7, list), recs[:30])
		bl, _, err := s.Usage.List(ctx, b, store.UsageFilter{}, store.PageRequest{})
		noErr(t, err, "List b")
		if len(bl) != 1 || bl[0].Channel != store.ChannelWeb {
			t.Fatalf("user b records = %+v", bl)
		}
		checkBadCursors(t, list)
	})

	t.Run("EndUserFilter", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		a, b := newID(), newID()
		// 25 records of a: every third one's end user is alice, every third
		// bob, the rest name none; several share a timestamp, so paging has to
		// break ties by request ID. b has an alice of its own.
		ends := []string{"alice", "bob", ""}
		var recs []store.UsageRecord
		want := map[string][]store.UsageRecord{}
		for i := range 25 {
			r := store.UsageRecord{RequestID: newID(), UserID: a, APIKeyID: newID(), Channel: store.ChannelAPI, Model: "sim-small",
				PromptTokens: int64(i), CompletionTokens: 1, CostNanos: int64(i), FinishReason: "stop",
				CreatedAt: t0.Add(time.Duration(i/4) * time.Second), EndUser: ends[i%3]}
			recs = append(recs, r)
			want[r.EndUser] = append(want[r.EndUser], r)
		}
		// An end user of the longest allowed length, in UTF-8, round-trips.
		long := strings.Repeat("é", store.MaxEndUserLen/2)
		recs = append(recs, store.UsageRecord{RequestID: newID(), UserID: a, Channel: store.ChannelAPI, Model: "m", CreatedAt: t0, EndUser: long})
		want[long] = recs[len(recs)-1:]
		recs = append(recs, store.UsageRecord{RequestID: newID(), UserID: b, Channel: store.ChannelAPI, Model: "m", CreatedAt: t0, EndUser: "alice"})
		noErr(t, s.Usage.Record(ctx, recs), "Record")

		listOf := func(user, end string) func(p store.PageRequest) ([]store.UsageRecord, string, error) {
			return func(p store.PageRequest) ([]store.UsageRecord, string, error) {
				return s.Usage.List(ctx, user, store.UsageFilter{EndUser: end}, p)
			}
		}
		for _, end := range []string{"alice", "bob", long} {
			for _, size := range []int{1, 3, 50} {
				sameNewestFirst(t, fmt.Sprintf("end user %.10q, page size %d", end, size), collect(t, size, listOf(a, end)), want[end])
			}
		}
		// No filter lists every record, the end user of each as stored.
		all := collect(t, 4, listOf(a, ""))
		if len(all) != 26 {
			t.Fatalf("unfiltered: listed %d records, want 26", len(all))
		}
		counts := map[string]int{}
		for _, r := range all {
			counts[r.EndUser]++
		}
		if counts["alice"] != len(want["alice"]) || counts["bob"] != len(want["bob"]) || counts[""] != len(want[""]) || counts[long] != 1 {
			t.Fatalf("unfiltered end users = %v", counts)
		}
		// The filter is exact, and stays within the account.
		for _, end := range []string{"Alice", "alic", "alice ", "carol"} {
			got, next, err := s.Usage.List(ctx, a, store.UsageFilter{EndUser: end}, store.PageRequest{})
			noErr(t, err, "List "+end)
			if len(got) != 0 || next != "" {
				t.Fatalf("end user %q: listed %d records, next %q; want none", end, len(got), next)
			}
		}
		bl, _, err := s.Usage.List(ctx, b, store.UsageFilter{EndUser: "alice"}, store.PageRequest{})
		noErr(t, err, "List b alice")
		if len(bl) != 1 || bl[0].UserID != b || bl[0].EndUser != "alice" {
			t.Fatalf("user b alice records = %+v", bl)
		}
		checkBadCursors(t, listOf(a, "alice"))
	})
	t.Run("AllUsers", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		// Three users' records interleaved in time, several sharing a
		// timestamp across users, so paging breaks ties by request ID.
		users := []string{newID(), newID(), newID()}
		var recs []store.UsageRecord
		for i := range 20 {
			r := store.UsageRecord{RequestID: newID(), UserID: users[i%3], Channel: store.ChannelAPI, Model: "sim-small",
				PromptTokens: int64(i), CostNanos: int64(i), FinishReason: "stop",
				CreatedAt: t0.Add(time.Duration(i/4) * time.Second), EndUser: []string{"alice", ""}[i%2]}
			recs = append(recs, r)
		}
		noErr(t, s.Usage.Record(ctx, recs), "Record")
		listOf := func(end string) func(p store.PageRequest) ([]store.UsageRecord, string, error) {
			return func(p store.PageRequest) ([]store.UsageRecord, string, error) {
				return s.Usage.List(ctx, "", store.UsageFilter{EndUser: end}, p)
			}
		}
		for _, size := range []int{1, 7, 50} {
			sameNewestFirst(t, fmt.Sprintf("all users, page size %d", size), collect(t, size, listOf("")), recs)
		}
		// The end-user filter applies across users too.
		alice := collect(t, 3, listOf("alice"))
		if len(alice) != 10 {
			t.Fatalf("all users, end user alice: listed %d records, want 10", len(alice))
		}
		owners := map[string]bool{}
		for _, r := range alice {
			if r.EndUser != "alice" {
				t.Fatalf("end user filter let through %+v", r)
			}
			owners[r.UserID] = true
		}
		if len(owners) != 3 {
			t.Fatalf("all users, end user alice: records of %d users, want 3", len(owners))
		}
		checkBadCursors(t, listOf(""))
	})
}

// sameNewestFirst fails unless got lists exactly the records of want, each
// once and as stored, newest first (ties by request ID, descending).
func sameNewestFirst(t *testing.T, what string, got, want []store.UsageRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: listed %d records, want %d", what, len(got), len(want))
	}
	byID := make(map[string]store.UsageRecord, len(want))
	for _, r := range want {
		byID[r.RequestID] = r
	}
	for i, g := range got {
		w, ok := byID[g.RequestID]
		if !ok {
			t.Fatalf("%s: record %s (end user %.10q) not wanted, or listed twice", what, g.RequestID, g.EndUser)
		}
		delete(byID, g.RequestID)
		sameTime(t, g.CreatedAt, w.CreatedAt, what+": CreatedAt")
		g.CreatedAt = w.CreatedAt
		if g != w {
			t.Fatalf("%s: record = %+v, want %+v", what, g, w)
		}
		if i > 0 {
			p := got[i-1]
			if p.CreatedAt.Before(g.CreatedAt) || (p.CreatedAt.Equal(g.CreatedAt) && p.RequestID < g.RequestID) {
				t.Fatalf("%s: records %d and %d not newest first", what, i-1, i)
			}
		}
	}
}
