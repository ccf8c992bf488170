package api

import (
	"context"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// maxFeedbackNote bounds a rating's note, in characters.
const maxFeedbackNote = 2000

func ratingToProto(r store.Rating) *parleyv1.MessageFeedback {
	rating := parleyv1.Rating_RATING_BAD
	if r.Good {
		rating = parleyv1.Rating_RATING_GOOD
	}
	return &parleyv1.MessageFeedback{Rating: rating, Note: r.Note, UpdateTime: timestamppb.New(r.UpdatedAt)}
}

// RateMessage records, replaces or takes back the caller's rating of an
// answer of its conversation.
func (h *ConversationHandler) RateMessage(ctx context.Context, req *connect.Request[parleyv1.RateMessageRequest]) (*connect.Response[parleyv1.RateMessageResponse], error) {
	if h.Feedback == nil {
		return nil, apierr.FailedPrecondition("feedback is not kept on this server")
	}
	c, err := h.own(ctx, req.Msg.GetConversationId())
	if err != nil {
		return nil, err
	}
	note := req.Msg.GetNote()
	switch {
	case !utf8.ValidString(note):
		return nil, apierr.InvalidArgument("note", "is not valid UTF-8")
	case utf8.RuneCountInString(note) > maxFeedbackNote:
		return nil, apierr.InvalidArgument("note", "is longer than 2,000 characters")
	}
	rating := req.Msg.GetRating()
	if _, ok := parleyv1.Rating_name[int32(rating)]; !ok {
		return nil, apierr.InvalidArgument("rating", "must be RATING_GOOD, RATING_BAD or unspecified (take it back)")
	}
	tree, err := h.Core.Tree(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	m, ok := tree.Get(req.Msg.GetMessageId())
	if !ok || m.Role != "assistant" {
		return nil, apierr.InvalidArgument("message_id", "must be an answer (assistant message) of the conversation")
	}
	if rating == parleyv1.Rating_RATING_UNSPECIFIED {
		if err := h.Feedback.DeleteRating(ctx, c.UserID, m.ID); err != nil {
			return nil, apierr.Store(err)
		}
		return connect.NewResponse(&parleyv1.RateMessageResponse{}), nil
	}
	r := store.Rating{UserID: c.UserID, ConversationID: c.ID, MessageID: m.ID, Model: m.Model, Good: rating == parleyv1.Rating_RATING_GOOD,
		Note: note, UpdatedAt: h.Core.Now().UTC()}
	if err := h.Feedback.PutRating(ctx, r); err != nil {
		return nil, apierr.Store(err)
	}
	return connect.NewResponse(&parleyv1.RateMessageResponse{Feedback: ratingToProto(r)}), nil
}

// ratingsOf is the caller's ratings in a conversation by message id (none
// where feedback is not kept, or on a read error: a page still shows).
func (h *ConversationHandler) ratingsOf(ctx context.Context, c store.Conversation) map[string]store.Rating {
	if h.Feedback == nil {
		return nil
	}
	list, err := h.Feedback.ListRatings(ctx, c.UserID, c.ID)
	if err != nil {
		return nil
	}
	out := make(map[string]store.Rating, len(list))
	for _, r := range list {
		out[r.MessageID] = r
	}
	return out
}

// GetFeedbackSummary counts ratings per model in a range, with the newest
// notes, without conversations or people.
func (h *AdminHandler) GetFeedbackSummary(ctx context.Context, req *connect.Request[parleyv1.GetFeedbackSummaryRequest]) (*connect.Response[parleyv1.GetFeedbackSummaryResponse], error) {
	if h.Feedback == nil {
		return nil, apierr.FailedPrecondition("feedback is not kept on this server")
	}
	end := time.Now().UTC()
	if t := req.Msg.GetEndTime(); t != nil {
		if err := t.CheckValid(); err != nil {
			return nil, apierr.InvalidArgument("end_time", "is not a valid time")
		}
		end = t.AsTime()
	}
	start := end.AddDate(0, 0, -30)
	if t := req.Msg.GetStartTime(); t != nil {
		if err := t.CheckValid(); err != nil {
			return nil, apierr.InvalidArgument("start_time", "is not a valid time")
		}
		start = t.AsTime()
	}
	if !start.Before(end) {
		return nil, apierr.InvalidArgument("start_time", "must be before end_time")
	}
	counts, err := h.Feedback.CountRatings(ctx, start, end)
	if err != nil {
		return nil, apierr.Store(err)
	}
	notes, err := h.Feedback.RatingNotes(ctx, start, end, 50)
	if err != nil {
		return nil, apierr.Store(err)
	}
	res := &parleyv1.GetFeedbackSummaryResponse{}
	for _, c := range counts {
		res.Models = append(res.Models, &parleyv1.ModelFeedback{Model: c.Model, Good: c.Good, Bad: c.Bad})
	}
	for _, n := range notes {
		res.Notes = append(res.Notes, &parleyv1.FeedbackNote{Model: n.Model, Rating: ratingToProto(n).GetRating(), Note: n.Note, UpdateTime: timestamppb.New(n.UpdatedAt)})
	}
	return connect.NewResponse(res), nil
}
