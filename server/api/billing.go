package api

import (
	"context"
	"encoding/base64"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/chat"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/llm"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// BillingHandler serves BillingService.
type BillingHandler struct {
	parleyv1connect.UnimplementedBillingServiceHandler
	Billing *billing.Billing
	Usage   store.Usage
	Pages   PageTokens
	Limits  *limits.Limits
	Catalog *models.Catalog
}

// GetLimits reports the caller's tier limits, their use and when they reset.
func (h *BillingHandler) GetLimits(ctx context.Context, req *connect.Request[parleyv1.GetLimitsRequest]) (*connect.Response[parleyv1.GetLimitsResponse], error) {
	p, _ := auth.FromContext(ctx)
	ms := h.Catalog.All()
	if id := req.Msg.GetModel(); id != "" {
		m, ok := h.Catalog.Lookup(id)
		if !ok {
			return nil, apierr.UnknownModel("model", id)
		}
		ms = []*models.Model{m}
	}
	next := limits.NextRequest{InputTokens: req.Msg.GetInputTokens(), MaxOutputTokens: req.Msg.GetMaxOutputTokens()}
	if next.InputTokens < 0 {
		return nil, apierr.InvalidArgument("input_tokens", "must not be negative")
	}
	if next.MaxOutputTokens < 0 {
		return nil, apierr.InvalidArgument("max_output_tokens", "must not be negative")
	}
	st, err := h.Limits.Status(ctx, p.UserID, p.Tier, ms, next)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetLimitsResponse{Tier: TierToProto(p.Tier), Limits: st}), nil
}

// GetBalance returns the caller's available and reserved money.
func (h *BillingHandler) GetBalance(ctx context.Context, _ *connect.Request[parleyv1.GetBalanceRequest]) (*connect.Response[parleyv1.GetBalanceResponse], error) {
	p, _ := auth.FromContext(ctx)
	b, err := h.Billing.Balance(ctx, p.UserID)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.GetBalanceResponse{BalanceNanos: b.AvailableNanos, ReservedNanos: b.ReservedNanos}), nil
}

// ListUsage pages through the caller's usage records, newest first, those
// of one end user when the request names one.
func (h *BillingHandler) ListUsage(ctx context.Context, req *connect.Request[parleyv1.ListUsageRequest]) (*connect.Response[parleyv1.ListUsageResponse], error) {
	p, _ := auth.FromContext(ctx)
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	filter, err := usageFilter("user", req.Msg.GetUser())
	if err != nil {
		return nil, err
	}
	list := usageList("usage", filter)
	cursor, err := h.Pages.Open(p.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	records, next, err := h.Usage.List(store.AllowStale(ctx), p.UserID, filter, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, apierr.Internal()
	}
	return connect.NewResponse(&parleyv1.ListUsageResponse{
		UsageRecords: UsageRecordsToProto(records), NextPageToken: h.Pages.Seal(p.UserID, list, next),
	}), nil
}

// usageFilter checks a request's end-user filter (field names it in errors).
func usageFilter(field, endUser string) (store.UsageFilter, error) {
	if len(endUser) > store.MaxEndUserLen {
		return store.UsageFilter{}, apierr.InvalidArgument(field, fmt.Sprintf("is over %d bytes", store.MaxEndUserLen))
	}
	return store.UsageFilter{EndUser: endUser}, nil
}

// usageList names a usage list for its page tokens, so a token is only good
// with the filter it was made under. The unfiltered name is base itself (the
// tokens issued before filters existed stay valid); a filter's end user is
// base64url-encoded, so no two filters share a name.
func usageList(base string, f store.UsageFilter) string {
	if f.EndUser == "" {
		return base
	}
	return base + ":user=" + base64.RawURLEncoding.EncodeToString([]byte(f.EndUser))
}

// UsageRecordsToProto maps stored usage records to the API's.
func UsageRecordsToProto(records []store.UsageRecord) []*parleyv1.UsageRecord {
	out := make([]*parleyv1.UsageRecord, 0, len(records))
	for _, r := range records {
		channel := parleyv1.AuthChannel_AUTH_CHANNEL_SESSION
		if r.APIKeyID != "" {
			channel = parleyv1.AuthChannel_AUTH_CHANNEL_API_KEY
		}
		out = append(out, &parleyv1.UsageRecord{
			RequestId: r.RequestID, Model: r.Model, CostNanos: r.CostNanos, ApiKeyId: r.APIKeyID, Channel: channel,
			FinishReason: chat.FinishReasonToProto(llm.FinishReason(r.FinishReason)),
			Usage: &parleyv1.Usage{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
				CachedTokens: r.CachedTokens, Estimated: r.Estimated},
			CreatedAt:      timestamppb.New(r.CreatedAt),
			User:           r.EndUser,
			CacheHit:       r.CacheHit,
			UserId:         r.UserID,
			RequestedModel: r.RequestedModel,
			Batch:          r.Channel == store.ChannelBatch,
		})
	}
	return out
}
