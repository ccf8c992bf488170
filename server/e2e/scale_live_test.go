package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// A web generation started on one gateway is followed to the end from the
// other, after its own client went away; a second one started there is
// stopped from the other gateway, and a second send meanwhile is refused on
// either.
func TestScaleGenerationFollowedAndCancelledFromAnotherGateway(t *testing.T) {
	scaleMode(t)
	gw := []*server{
		startServer(t, append(fastAuth, "--sim-time-scale", "0.5")...),
		startServer(t, append(fastAuth, "--sim-time-scale", "0.5")...),
	}
	a := gw[0].newAccount(t, "roaming@example.com")
	on := []apiClients{gw[0].api(protocols[0], cred{cookie: a.Cookie}), gw[1].api(protocols[1], cred{cookie: a.Cookie})}

	// Start on gateway 0, read a little, go away.
	ctx, cancel := context.WithCancel(ctxTimeout(t, 60*time.Second))
	stream, err := on[0].Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("Tell me a story."), MaxOutputTokens: 60}))
	if err != nil {
		t.Fatal(err)
	}
	var convID string
	var seen strings.Builder
	n := 0
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if st := ev.GetStarted(); st != nil {
			convID = st.GetConversationId()
		}
		seen.WriteString(ev.GetDelta().GetText())
		if n++; n == 4 {
			break
		}
	}
	cancel()
	stream.Close()

	// Gateway 1 refuses a second send meanwhile, then follows the first to the end.
	ctx1 := ctxTimeout(t, 60*time.Second)
	again, _ := on[1].Conv.SendMessage(ctx1, connect.NewRequest(&parleyv1.SendMessageRequest{ConversationId: convID, Parts: textPart("more")}))
	for again.Receive() {
	}
	wantCode(t, "a second send on the other gateway", again.Err(), connect.CodeFailedPrecondition)
	follow, err := on[1].Conv.StreamGeneration(ctx1, connect.NewRequest(&parleyv1.StreamGenerationRequest{ConversationId: convID, AfterSeq: uint64(n)}))
	if err != nil {
		t.Fatal(err)
	}
	var fin *parleyv1.GenerationFinished
	first := uint64(0)
	for follow.Receive() {
		ev := follow.Msg().GetEvent()
		if first == 0 {
			first = ev.GetSeq()
		}
		seen.WriteString(ev.GetDelta().GetText())
		if f := ev.GetFinished(); f != nil {
			fin = f
		}
	}
	if err := follow.Err(); err != nil {
		t.Fatal(err)
	}
	if first != uint64(n)+1 || fin == nil || fin.GetFinishReason() == parleyv1.FinishReason_FINISH_REASON_CANCELLED {
		t.Fatalf("followed from seq %d, finished %v", first, fin)
	}
	msgs, err := on[1].Conv.ListMessages(ctx1, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: convID}))
	if err != nil || msgs.Msg.GetMessages()[1].GetParts()[0].GetText() != seen.String() {
		t.Fatalf("stored %v (%v), streamed %q", msgs, err, seen.String())
	}

	// A new generation on gateway 0 is stopped from gateway 1.
	stream, err = on[0].Conv.SendMessage(ctx1, connect.NewRequest(&parleyv1.SendMessageRequest{ConversationId: convID, Parts: textPart("And then?"), MaxOutputTokens: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	fin, n = nil, 0
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if ev.GetDelta() != nil {
			if n++; n == 3 {
				res, err := on[1].Conv.CancelGeneration(ctx1, connect.NewRequest(&parleyv1.CancelGenerationRequest{ConversationId: convID}))
				if err != nil || !res.Msg.GetCancelled() {
					t.Fatalf("cancel from the other gateway: %v %v", res, err)
				}
			}
		}
		if f := ev.GetFinished(); f != nil {
			fin = f
		}
	}
	if fin.GetFinishReason() != parleyv1.FinishReason_FINISH_REASON_CANCELLED || fin.GetUsage().GetCompletionTokens() > 200 {
		t.Fatalf("finished %v", fin)
	}
}
