package e2e

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// The IDOR rows of search, share, export and the usage summary.
func init() {
	idorCases = append(idorCases,
		idorCase{
			name: "ConversationService.ShareConversation of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Conv.ShareConversation(ctx, connect.NewRequest(&parleyv1.ShareConversationRequest{ConversationId: b.ConversationID}))
				return leakIfNil(err, "shared B's conversation")
			},
			intact: conversationIntact,
		},
		idorCase{
			name: "ConversationService.UnshareConversation of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Conv.UnshareConversation(ctx, connect.NewRequest(&parleyv1.UnshareConversationRequest{ConversationId: b.ConversationID}))
				return leakIfNil(err, "unshare reached B's conversation")
			},
		},
		idorCase{
			name: "ConversationService.ExportConversation of B's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				_, err := a.Conv.ExportConversation(ctx, connect.NewRequest(&parleyv1.ExportConversationRequest{
					ConversationId: b.ConversationID, Format: parleyv1.ExportFormat_EXPORT_FORMAT_JSON}))
				return leakIfNil(err, "exported B's conversation")
			},
		},
		idorCase{
			name: "ConversationService.SearchConversations finds only A's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				res, err := a.Conv.SearchConversations(ctx, connect.NewRequest(&parleyv1.SearchConversationsRequest{Query: "secret question"}))
				if err != nil {
					return err
				}
				if len(res.Msg.GetResults()) != 0 {
					return errLeak("found B's conversation")
				}
				return connect.NewError(connect.CodeNotFound, fmt.Errorf("B's conversations not found"))
			},
		},
		idorCase{
			name: "BillingService.GetUsageSummary adds up only A's",
			attempt: func(ctx context.Context, a clients, b *account) error {
				res, err := a.Bill.GetUsageSummary(ctx, connect.NewRequest(&parleyv1.GetUsageSummaryRequest{}))
				if err != nil {
					return err
				}
				if res.Msg.GetTotal().GetRequests() != 0 { // A has generated nothing; B has
					return errLeak("summed usage that is not A's")
				}
				return connect.NewError(connect.CodeNotFound, fmt.Errorf("B's usage not summed"))
			},
		},
	)
}
