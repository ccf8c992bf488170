package e2e

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/sqlite"
)

// startLongAnswer starts a web generation that runs for many seconds and
// returns its conversation id once a few tokens have streamed.
func startLongAnswer(t *testing.T, c apiClients) string {
	t.Helper()
	stream, err := c.Conv.SendMessage(ctxTimeout(t, 30*time.Second), connect.NewRequest(&parleyv1.SendMessageRequest{
		Model: "sim-small", Parts: textPart("Tell me everything you know."), MaxOutputTokens: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	id, n := "", 0
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if st := ev.GetStarted(); st != nil {
			id = st.GetConversationId()
		}
		if ev.GetDelta() != nil {
			if n++; n == 3 {
				break
			}
		}
	}
	stream.Close()
	if id == "" {
		t.Fatalf("no generation started: %v", stream.Err())
	}
	return id
}

func storedMessages(t *testing.T, dataDir, conversationID string) []store.Message {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(dataDir, "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	msgs, _, err := db.Store().Messages.List(context.Background(), conversationID, store.PageRequest{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// SIGTERM: open web generations get the grace period, then are cancelled
// and stored with what they had — the process does not wait for them to end.
func TestShutdownCancelsAndStoresWebGenerations(t *testing.T) {
	s := startServer(t, append(fastAuth, "--sim-time-scale", "1", "--shutdown-grace", "300ms")...)
	a := s.newAccount(t, "shutdown@example.com")
	id := startLongAnswer(t, s.api(protocols[0], cred{cookie: a.Cookie}))
	start := time.Now()
	s.Signal(syscall.SIGTERM)
	code, err := s.Wait(10 * time.Second)
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v: it waited for the generation to finish", d)
	}
	msgs := storedMessages(t, s.DataDir, id)
	if len(msgs) != 2 || msgs[1].FinishReason != "cancelled" || msgs[1].Parts[0].Text == "" {
		t.Fatalf("stored %+v", msgs)
	}
}

// Deleting a conversation while it generates leaves nothing of it stored.
func TestDeleteDuringGenerationLeavesNothing(t *testing.T) {
	s := startServer(t, append(fastAuth, "--sim-time-scale", "1")...)
	a := s.newAccount(t, "forget@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	id := startLongAnswer(t, c)
	if _, err := c.Conv.DeleteConversation(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.DeleteConversationRequest{ConversationId: id})); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		running, err := c.Conv.StreamGeneration(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.StreamGenerationRequest{ConversationId: id}))
		if err == nil {
			for running.Receive() {
			}
		}
		if msgs := storedMessages(t, s.DataDir, id); len(msgs) == 0 {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%d messages of the deleted conversation still stored", len(msgs))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A model priced at zero is served without holding money.
func TestFreeModel(t *testing.T) {
	file := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(file, []byte("models:\n- id: free\n  simulated: true\n  context_window: 4096\n  max_output_tokens: 50\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, append(fastAuth, "--models-file", file)...)
	a := s.newAccount(t, "free@example.com")
	res, err := s.api(protocols[0], cred{bearer: a.Key}).Chat.Complete(ctxTimeout(t, 10*time.Second),
		connect.NewRequest(&parleyv1.CompleteRequest{Model: "free", Messages: userText("hi"), MaxOutputTokens: 5}))
	if err != nil || res.Msg.GetCostNanos() != 0 || res.Msg.GetUsage().GetCompletionTokens() == 0 {
		t.Fatalf("%v %v", res, err)
	}
}
