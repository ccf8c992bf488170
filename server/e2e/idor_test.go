package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// idorCase is one attempt by user A, with A's own session or key, to read or
// change user B's data. attempt returns an error when A was refused (any
// code) or a description of what leaked; intact checks, as B, that B's data
// is unchanged. Later issues add a row for each method that takes an id.
type idorCase struct {
	name    string
	attempt func(ctx context.Context, a clients, victim *account) error
	intact  func(ctx context.Context, b clients, victim *account) error
}

// errLeak marks an attempt that succeeded where it must not.
type errLeak string

func (e errLeak) Error() string { return string(e) }

var idorCases = []idorCase{
	{
		name: "ApiKeyService.RevokeApiKey of B's key",
		attempt: func(ctx context.Context, a clients, b *account) error {
			_, err := a.Keys.RevokeApiKey(ctx, connect.NewRequest(&parleyv1.RevokeApiKeyRequest{KeyId: b.KeyID}))
			if err == nil {
				return errLeak("revoked B's key")
			}
			return err
		},
		intact: func(ctx context.Context, b clients, victim *account) error {
			res, err := b.Keys.ListApiKeys(ctx, connect.NewRequest(&parleyv1.ListApiKeysRequest{}))
			if err != nil {
				return err
			}
			for _, k := range res.Msg.GetApiKeys() {
				if k.GetKeyId() == victim.KeyID && k.GetRevokedAt() != nil {
					return errLeak("B's key is revoked")
				}
			}
			return nil
		},
	},
	{
		name: "ApiKeyService.ListApiKeys shows only A's keys",
		attempt: func(ctx context.Context, a clients, b *account) error {
			res, err := a.Keys.ListApiKeys(ctx, connect.NewRequest(&parleyv1.ListApiKeysRequest{}))
			if err != nil {
				return err
			}
			for _, k := range res.Msg.GetApiKeys() {
				if k.GetKeyId() == b.KeyID {
					return errLeak("listed B's key")
				}
			}
			return connect.NewError(connect.CodeNotFound, fmt.Errorf("B's keys not listed")) // refused: nothing of B's seen
		},
	},
	{
		name: "AuthService.GetMe returns A, never B",
		attempt: func(ctx context.Context, a clients, b *account) error {
			res, err := a.Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{}))
			if err != nil {
				return err
			}
			if res.Msg.GetUser().GetUserId() == b.User.GetUserId() {
				return errLeak("GetMe returned B")
			}
			return connect.NewError(connect.CodeNotFound, fmt.Errorf("only A seen"))
		},
	},
}

// victimConversation gives B a conversation with one exchange in it.
func victimConversation(t *testing.T, b clients) string {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	stream, err := b.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{Parts: textPart("B's secret question"), MaxOutputTokens: 5}))
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for stream.Receive() {
		if st := stream.Msg().GetEvent().GetStarted(); st != nil {
			id = st.GetConversationId()
		}
	}
	if stream.Err() != nil || id == "" {
		t.Fatalf("B's conversation: %v", stream.Err())
	}
	return id
}

// conversationIntact checks, as B, that B's conversation is as it was:
// titled from its first message, with its two messages.
func conversationIntact(ctx context.Context, b clients, victim *account) error {
	c, err := b.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: victim.ConversationID}))
	if err != nil {
		return err
	}
	if c.Msg.GetConversation().GetTitle() != "B's secret question" || c.Msg.GetConversation().GetArchived() {
		return errLeak("B's conversation was changed")
	}
	m, err := b.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: victim.ConversationID}))
	if err != nil {
		return err
	}
	if n := len(m.Msg.GetMessages()); n != 2 {
		return errLeak(fmt.Sprintf("B's conversation has %d messages, want 2", n))
	}
	return nil
}

// refusedStream runs a server stream and returns its error (nil if it ran).
func refusedStream[T any](stream *connect.ServerStreamForClient[T], err error) error {
	if err != nil {
		return err
	}
	for stream.Receive() {
	}
	if err := stream.Err(); err != nil {
		return err
	}
	return errLeak("the stream ran")
}

func init() {
	idorCases = append(idorCases,
		idorCase{
			name: "ConversationService.GetConversation of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: b.ConversationID}))
				return leakIfNil(err, "read B's conversation")
			},
		},
		idorCase{
			name: "ConversationService.ListMessages of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Conv.ListMessages(ctx, connect.NewRequest(&parleyv1.ListMessagesRequest{ConversationId: b.ConversationID}))
				return leakIfNil(err, "read B's messages")
			},
		},
		idorCase{
			name: "ConversationService.UpdateConversation of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				title, archived := "pwned", true
				_, err := a.Conv.UpdateConversation(ctx, connect.NewRequest(&parleyv1.UpdateConversationRequest{ConversationId: b.ConversationID, Title: &title, Archived: &archived}))
				return leakIfNil(err, "renamed B's conversation")
			},
			intact: conversationIntact,
		},
		idorCase{
			name: "ConversationService.DeleteConversation of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Conv.DeleteConversation(ctx, connect.NewRequest(&parleyv1.DeleteConversationRequest{ConversationId: b.ConversationID}))
				return leakIfNil(err, "deleted B's conversation")
			},
			intact: conversationIntact,
		},
		idorCase{
			name: "ConversationService.SendMessage into B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				return refusedStream(a.Conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{ConversationId: b.ConversationID, Parts: textPart("hi")})))
			},
			intact: conversationIntact,
		},
		idorCase{
			name: "ConversationService.StreamGeneration of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				return refusedStream(a.Conv.StreamGeneration(ctx, connect.NewRequest(&parleyv1.StreamGenerationRequest{ConversationId: b.ConversationID})))
			},
		},
		idorCase{
			name: "ConversationService.CancelGeneration of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Conv.CancelGeneration(ctx, connect.NewRequest(&parleyv1.CancelGenerationRequest{ConversationId: b.ConversationID}))
				return leakIfNil(err, "cancel reached B's conversation")
			},
		},
		idorCase{
			name: "ConversationService.ListConversations shows only A's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				res, err := a.Conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{Archived: parleyv1.ArchivedFilter_ARCHIVED_FILTER_ALL}))
				if err != nil {
					return err
				}
				for _, c := range res.Msg.GetConversations() {
					if c.GetConversationId() == b.ConversationID {
						return errLeak("listed B's conversation")
					}
				}
				return connect.NewError(connect.CodeNotFound, fmt.Errorf("B's conversations not listed"))
			},
		},
		idorCase{
			name: "BillingService.ListUsage shows only A's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				res, err := a.Bill.ListUsage(ctx, connect.NewRequest(&parleyv1.ListUsageRequest{}))
				if err != nil {
					return err
				}
				if len(res.Msg.GetUsageRecords()) != 0 { // A has generated nothing; B has
					return errLeak("listed usage that is not A's")
				}
				return connect.NewError(connect.CodeNotFound, fmt.Errorf("B's usage not listed"))
			},
		},
	)
}

// leakIfNil turns a refused attempt into its error, and a success into a leak.
func leakIfNil(err error, what string) error {
	if err == nil {
		return errLeak(what)
	}
	return err
}

func TestIDOR(t *testing.T) {
	s := startServer(t, fastAuth...)
	a := s.newAccount(t, "a@example.com")
	b := s.newAccount(t, "b@example.com")
	asB := s.as(protocols[0], b, "session")
	b.ConversationID = victimConversation(t, asB)
	b.AttachmentID = victimAttachment(t, s, b)
	b.FileID = victimFile(t, s, b)
	for _, p := range protocols {
		for _, channel := range []string{"session", "key"} {
			for _, tc := range idorCases {
				t.Run(fmt.Sprintf("%s/%s/%s", p.name, channel, tc.name), func(t *testing.T) {
					ctx := ctxTimeout(t, 10*time.Second)
					err := tc.attempt(ctx, s.as(p, a, channel), b)
					if _, leaked := err.(errLeak); leaked || err == nil {
						t.Fatalf("A reached B's data: %v", err)
					}
					if tc.intact != nil {
						if err := tc.intact(ctx, asB, b); err != nil {
							t.Fatalf("B's data changed: %v", err)
						}
					}
				})
			}
		}
	}
}
