package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// A worker killed mid-answer: the web stream ends with finish_reason error,
// and the partial answer is stored with it.
func TestPartialAnswerStoredWhenTheWorkerDies(t *testing.T) {
	w := startWorker(t, "--engine", "sim", "--time-scale", "1")
	s := startServer(t, append(fastAuth, "--workers", w.Addr())...)
	a := s.newAccount(t, "partial@example.com")
	c := s.api(protocols[0], cred{cookie: a.Cookie})
	ctx := ctxTimeout(t, 30*time.Second)
	// The gateway may need a moment to open the worker's load stream.
	var stream *connect.ServerStreamForClient[parleyv1.SendMessageResponse]
	var err error
	for try := 0; ; try++ {
		stream, err = c.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("Tell me a long story."), MaxOutputTokens: 1000}))
		if err == nil || try == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	var convID string
	var text strings.Builder
	var fin *parleyv1.GenerationFinished
	deltas := 0
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if st := ev.GetStarted(); st != nil {
			convID = st.GetConversationId()
		}
		if d := ev.GetDelta(); d != nil {
			text.WriteString(d.GetText())
			if deltas++; deltas == 5 {
				w.Signal(syscall.SIGKILL)
			}
		}
		if f := ev.GetFinished(); f != nil {
			fin = f
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if fin.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_ERROR || deltas < 5 || fin.GetErrorMessage() == "" {
		t.Fatalf("finished %v after %d deltas", fin, deltas)
	}
	msgs, err := c.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: convID}))
	if err != nil {
		t.Fatal(err)
	}
	stored := msgs.Msg.GetMessages()[1]
	if stored.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_ERROR || stored.GetParts()[0].GetText() != text.String() || text.Len() == 0 {
		t.Fatalf("stored %v, streamed %q", stored, text.String())
	}
}
