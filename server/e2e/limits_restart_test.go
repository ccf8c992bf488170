package e2e

import (
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// kill -9 of the embedded gateway after N requests, then a restart on the
// same data directory: the tier limits still count them, because the
// in-process limiter's buckets are saved to SQLite every second.
func TestKillNineForgivesNoTierUsage(t *testing.T) {
	dir := t.TempDir()
	args := append(fastAuth, "--data-dir", dir)
	s := startServer(t, args...)
	a := s.newAccount(t, "limits-restart@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 60*time.Second)
	const n = 4
	var conv string
	for range n {
		g := mustSend(t, ctx, c, &parleyv1.SendMessageRequest{ConversationId: conv, Model: "sim-small", Parts: textPart("hi"), MaxOutputTokens: 5})
		conv = g.started.GetConversationId()
	}
	used := func(c apiClients) map[parleyv1.LimitKind]int64 {
		lim, err := c.Billing.GetLimits(ctx, connect.NewRequest(&parleyv1.GetLimitsRequest{Model: "sim-small"}))
		if err != nil {
			t.Fatal(err)
		}
		m := map[parleyv1.LimitKind]int64{}
		for _, l := range lim.Msg.GetLimits() {
			m[l.GetKind()] = l.GetUsed()
		}
		return m
	}
	before := used(c)
	if before[parleyv1.LimitKind_LIMIT_KIND_REQUESTS] != n {
		t.Fatalf("before the crash: %v, want %d requests used", before, n)
	}
	// The save interval is a second: wait it out, then crash.
	time.Sleep(1500 * time.Millisecond)
	s.Signal(syscall.SIGKILL)
	if _, err := s.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, args...)
	after := used(s2.api(protocols[0], cred{cookie: a.Cookie}))
	for kind, u := range before {
		// Output and input tokens refill continuously: allow what a few
		// seconds of refill give back, never a reset to zero.
		if after[kind] == 0 || after[kind] > u {
			t.Errorf("%v used %d after kill -9 and restart, %d before", kind, after[kind], u)
		}
	}
	if after[parleyv1.LimitKind_LIMIT_KIND_REQUESTS] != n {
		t.Errorf("requests used %d after the restart, want %d", after[parleyv1.LimitKind_LIMIT_KIND_REQUESTS], n)
	}
}
