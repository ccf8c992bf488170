package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// kill -9 of the gateway right after the first deltas of a web answer
// reached the client: after the restart the interrupted answer holds them.
// The first in-progress save happens at the first delta, so a crash loses
// at most what streamed since the last save (the throttle in
// server/chat/web.go), never the beginning of what the user watched.
func TestCrashKeepsTheFirstDeltasTheClientSaw(t *testing.T) {
	dir := t.TempDir()
	args := append(fastAuth, "--data-dir", dir, "--sim-time-scale", "10") // ~7 tokens a second
	s := startServer(t, args...)
	a := s.newAccount(t, "first-deltas@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 90*time.Second)
	stream, err := c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{
		Model: "sim-small", Parts: textPart("Tell me everything you know."), MaxOutputTokens: 2000}))
	if err != nil {
		t.Fatal(err)
	}
	var conv string
	var streamed strings.Builder
	deltas := 0
	for deltas < 2 && stream.Receive() {
		ev := stream.Msg().GetEvent()
		if st := ev.GetStarted(); st != nil {
			conv = st.GetConversationId()
		}
		if d := ev.GetDelta(); d != nil && d.GetText() != "" {
			streamed.WriteString(d.GetText())
			deltas++
		}
	}
	if conv == "" || deltas < 2 {
		t.Fatalf("no answer streamed: %v", stream.Err())
	}
	// The deltas came about 150 ms apart: well inside the old 2 s throttle,
	// under which nothing had been saved yet.
	s.Signal(syscall.SIGKILL)
	if _, err := s.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, args...)
	c = s2.api(protocols[0], cred{cookie: a.Cookie})
	msgs := branchOf(t, ctx, c, conv, "", false)
	if len(msgs) != 2 || msgs[1].GetStatus() != parleyv1.MessageStatus_MESSAGE_STATUS_INTERRUPTED {
		t.Fatalf("after the crash: %v", msgs)
	}
	saved, seen := textOf(msgs[1]), streamed.String()
	// The save follows the send, so one may be a few deltas ahead of the
	// other; what the first delta showed is always there.
	if saved == "" || !(strings.HasPrefix(seen, saved) || strings.HasPrefix(saved, seen)) {
		t.Fatalf("stored interrupted answer %q, the client saw %q", saved, seen)
	}
	t.Logf("client saw %d bytes in %d deltas; %d bytes stored", len(seen), deltas, len(saved))
}
