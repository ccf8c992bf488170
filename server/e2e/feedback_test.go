package e2e

import (
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// Thumbs up or down on an answer, with a note: stored, shown on the
// message, replaced, taken back; refused on someone else's conversation,
// on a question and for a long note; admins read the counts per model and
// the notes, nothing else.
func TestRateAnswers(t *testing.T) {
	s := startServer(t, fastAuth...)
	s.admin(t, "create-user", "--email", "ops@example.com", "--password", "ops password", "--admin")
	ctx := ctxTimeout(t, 60*time.Second)
	a, b := s.newAccount(t, "rater@example.com"), s.newAccount(t, "nosy@example.com")
	ac, bc := s.api(protocols[0], cred{cookie: a.Cookie}), s.api(protocols[0], cred{cookie: b.Cookie})
	started, _, _ := send(t, ctx, ac, &parleyv1.SendMessageRequest{Model: "sim-small", Parts: textPart("What is a raven like?")})
	conv, answer := started.GetConversationId(), started.GetMessageId()
	rate := func(c apiClients, req *parleyv1.RateMessageRequest) (*parleyv1.RateMessageResponse, error) {
		res, err := c.Conv.RateMessage(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	feedbackOn := func(id string) *parleyv1.MessageFeedback {
		t.Helper()
		res, err := ac.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: conv}))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Msg.GetMessages() {
			if m.GetMessageId() == id {
				return m.GetFeedback()
			}
		}
		t.Fatalf("message %s not listed", id)
		return nil
	}
	if _, err := rate(ac, &parleyv1.RateMessageRequest{ConversationId: conv, MessageId: answer, Rating: parleyv1.Rating_RATING_BAD}); err != nil {
		t.Fatal(err)
	}
	r, err := rate(ac, &parleyv1.RateMessageRequest{ConversationId: conv, MessageId: answer, Rating: parleyv1.Rating_RATING_GOOD, Note: "a writing desk"})
	if err != nil || r.GetFeedback().GetRating() != parleyv1.Rating_RATING_GOOD {
		t.Fatalf("RateMessage: %v %v", r, err)
	}
	if f := feedbackOn(answer); f.GetRating() != parleyv1.Rating_RATING_GOOD || f.GetNote() != "a writing desk" {
		t.Fatalf("the answer's feedback: %v", f)
	}
	// Refusals name what is wrong; another user's conversation does not exist for them.
	_, err = rate(bc, &parleyv1.RateMessageRequest{ConversationId: conv, MessageId: answer, Rating: parleyv1.Rating_RATING_BAD})
	wantCode(t, "rating another user's answer", err, connect.CodeNotFound)
	for field, req := range map[string]*parleyv1.RateMessageRequest{
		"message_id": {ConversationId: conv, MessageId: started.GetUserMessageId(), Rating: parleyv1.Rating_RATING_GOOD},
		"note":       {ConversationId: conv, MessageId: answer, Rating: parleyv1.Rating_RATING_BAD, Note: strings.Repeat("é", 2001)},
		"rating":     {ConversationId: conv, MessageId: answer, Rating: parleyv1.Rating(7)},
	} {
		_, err := rate(ac, req)
		if fv := new(parleyv1.FieldViolation); connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, fv) || fv.GetField() != field {
			t.Errorf("a bad %s: %v", field, err)
		}
	}
	if f := feedbackOn(answer); f.GetRating() != parleyv1.Rating_RATING_GOOD {
		t.Fatalf("a refused rating changed the stored one: %v", f)
	}
	// A second answer rated bad; the admin's summary counts both, with the note.
	second, _, _ := send(t, ctx, ac, &parleyv1.SendMessageRequest{ConversationId: conv, Parts: textPart("And a writing desk?")})
	if _, err := rate(ac, &parleyv1.RateMessageRequest{ConversationId: conv, MessageId: second.GetMessageId(), Rating: parleyv1.Rating_RATING_BAD}); err != nil {
		t.Fatal(err)
	}
	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "ops@example.com", Password: "ops password"}))
	if err != nil {
		t.Fatal(err)
	}
	ops := s.clients(protocols[0], cred{cookie: sessionCookie(t, in.Header())})
	sum, err := ops.Admin.GetFeedbackSummary(ctx, connect.NewRequest(&parleyv1.GetFeedbackSummaryRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Msg.GetModels()) != 1 || sum.Msg.GetModels()[0].GetGood() != 1 || sum.Msg.GetModels()[0].GetBad() != 1 ||
		len(sum.Msg.GetNotes()) != 1 || sum.Msg.GetNotes()[0].GetNote() != "a writing desk" {
		t.Fatalf("the admin's summary: %v", sum.Msg)
	}
	_, err = s.clients(protocols[0], cred{cookie: a.Cookie}).Admin.GetFeedbackSummary(ctx, connect.NewRequest(&parleyv1.GetFeedbackSummaryRequest{}))
	wantCode(t, "a user reads the summary", err, connect.CodePermissionDenied)
	// Taken back: gone from the message and from the counts.
	if _, err := rate(ac, &parleyv1.RateMessageRequest{ConversationId: conv, MessageId: answer}); err != nil {
		t.Fatal(err)
	}
	if f := feedbackOn(answer); f != nil {
		t.Fatalf("a rating taken back still shows: %v", f)
	}
	if sum, _ := ops.Admin.GetFeedbackSummary(ctx, connect.NewRequest(&parleyv1.GetFeedbackSummaryRequest{})); sum.Msg.GetModels()[0].GetGood() != 0 {
		t.Fatalf("counts after taking one back: %v", sum.Msg)
	}
}
