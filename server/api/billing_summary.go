package api

import (
	"context"
	"google.golang.org/protobuf/types/known/timestamppb"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

const (
	// defaultSummarySpan is GetUsageSummary's range when start_time is unset.
	defaultSummarySpan = 30 * 24 * time.Hour
	// maxSummarySpan is the longest range GetUsageSummary adds up.
	maxSummarySpan = 400 * 24 * time.Hour
	// maxUTCOffset is the furthest a time zone is from UTC (UTC+14).
	maxUTCOffset = 14 * 60
)

// GetUsageSummary adds up the caller's usage per day, per model, or both.
func (h *BillingHandler) GetUsageSummary(ctx context.Context, req *connect.Request[parleyv1.GetUsageSummaryRequest]) (*connect.Response[parleyv1.GetUsageSummaryResponse], error) {
	p, _ := auth.FromContext(ctx)
	m := req.Msg
	start, end, err := usageRange(m.GetStartTime(), m.GetEndTime())
	if err != nil {
		return nil, err
	}
	off := m.GetUtcOffsetMinutes()
	if off < -maxUTCOffset || off > maxUTCOffset {
		return nil, apierr.InvalidArgument("utc_offset_minutes", "must be between -840 and 840")
	}
	byDay, byModel := true, false
	switch m.GetGroupBy() {
	case parleyv1.UsageGroupBy_USAGE_GROUP_BY_UNSPECIFIED, parleyv1.UsageGroupBy_USAGE_GROUP_BY_DAY:
	case parleyv1.UsageGroupBy_USAGE_GROUP_BY_MODEL:
		byDay, byModel = false, true
	case parleyv1.UsageGroupBy_USAGE_GROUP_BY_DAY_AND_MODEL:
		byModel = true
	default:
		return nil, apierr.InvalidArgument("group_by", "unknown grouping")
	}
	days, err := h.Usage.Summarize(ctx, p.UserID, start, end, time.Duration(off)*time.Minute)
	if err != nil {
		return nil, apierr.Internal()
	}
	res := &parleyv1.GetUsageSummaryResponse{Total: &parleyv1.UsageBucket{}}
	buckets := map[[2]string]*parleyv1.UsageBucket{}
	for _, d := range days {
		var k [2]string
		if byDay {
			k[0] = time.Unix(d.Day*int64(24*time.Hour/time.Second), 0).UTC().Format(time.DateOnly)
		}
		if byModel {
			k[1] = d.Model
		}
		b := buckets[k]
		if b == nil {
			b = &parleyv1.UsageBucket{Day: k[0], Model: k[1]}
			buckets[k] = b
			res.Buckets = append(res.Buckets, b)
		}
		addToBucket(b, d)
		addToBucket(res.Total, d)
	}
	sortBuckets(res.Buckets)
	return connect.NewResponse(res), nil
}

func addToBucket(b *parleyv1.UsageBucket, d store.UsageDay) {
	b.Requests += d.Requests
	b.PromptTokens += d.PromptTokens
	b.CompletionTokens += d.CompletionTokens
	b.CachedTokens += d.CachedTokens
	b.CostNanos += d.CostNanos
}

// usageRange reads a summary's range: end unset is now, start unset is
// defaultSummarySpan before end, at most maxSummarySpan long.
func usageRange(startTS, endTS *timestamppb.Timestamp) (start, end time.Time, err error) {
	end = time.Now()
	if endTS != nil {
		if endTS.CheckValid() != nil {
			return start, end, apierr.InvalidArgument("end_time", "is not a valid time")
		}
		end = endTS.AsTime()
	}
	start = end.Add(-defaultSummarySpan)
	if startTS != nil {
		if startTS.CheckValid() != nil {
			return start, end, apierr.InvalidArgument("start_time", "is not a valid time")
		}
		start = startTS.AsTime()
	}
	switch {
	case start.Unix() < 0:
		return start, end, apierr.InvalidArgument("start_time", "must not be before 1970")
	case !start.Before(end):
		return start, end, apierr.InvalidArgument("end_time", "must be after start_time")
	case end.Sub(start) > maxSummarySpan:
		return start, end, apierr.InvalidArgument("end_time", "must be at most 400 days after start_time")
	}
	return start, end, nil
}

// sortBuckets orders buckets by day, then model.
func sortBuckets(bs []*parleyv1.UsageBucket) {
	slices.SortFunc(bs, func(a, b *parleyv1.UsageBucket) int {
		if c := strings.Compare(a.Day, b.Day); c != 0 {
			return c
		}
		return strings.Compare(a.Model, b.Model)
	})
}
