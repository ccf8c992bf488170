package org

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/parleyhq/parley/server/store"
)

// UsageGroup is what Usage breaks spend down by, besides day and model.
type UsageGroup int

// The groupings.
const (
	// ByModel is day and model only.
	ByModel UsageGroup = iota
	// ByKey adds the key.
	ByKey
	// ByTeam adds the key's team (empty: a member's own key).
	ByTeam
	// ByMember adds the member who made the key.
	ByMember
)

// UsageRow is the usage of one day, model and (by the grouping) key, team
// or member. Day is the day's number (store.UsageDay.Day) in the
// organisation's zone as of the range's start.
type UsageRow struct {
	store.UsageDay
	TeamID, UserID string
}

// Usage adds up the organisation's usage records from from to to per day,
// model and by. Owners, admins and billing readers read all of it; a team
// admin reads its team's (teamID set), no one else any. teamID keeps the
// team's keys only.
func (s *Service) Usage(ctx context.Context, c Caller, from, to time.Time, by UsageGroup, teamID string) ([]UsageRow, error) {
	if !can(c.Role, readBill) {
		if teamID == "" {
			return nil, denied("reading usage (a team admin reads its team's: set team_id)")
		}
		if _, manages, err := s.team(ctx, c, teamID); err != nil {
			return nil, err
		} else if !manages {
			return nil, denied("reading the team's usage (its admins only)")
		}
	} else if teamID != "" {
		if _, _, err := s.team(ctx, c, teamID); err != nil {
			return nil, err
		}
	}
	_, off := from.In(store.Location(c.Org.TimeZone)).Zone()
	offset := time.Duration(off) * time.Second
	if by == ByModel && teamID == "" {
		days, err := s.Records.Summarize(ctx, c.Org.BillingUserID, from, to, offset)
		if err != nil {
			return nil, s.internal("summarising usage", err)
		}
		out := make([]UsageRow, len(days))
		for i, d := range days {
			out[i] = UsageRow{UsageDay: d}
		}
		return out, nil
	}
	days, err := s.Records.SummarizeKeys(ctx, c.Org.BillingUserID, from, to, offset)
	if err != nil {
		return nil, s.internal("summarising usage", err)
	}
	keys, err := s.allKeys(ctx, c.Org.ID, store.OrgKeyFilter{})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]store.APIKey, len(keys))
	for _, k := range keys {
		byID[k.ID] = k
	}
	type group struct {
		day          int64
		model, value string
	}
	sums := map[group]*UsageRow{}
	for _, d := range days {
		k := byID[d.APIKeyID]
		if teamID != "" && k.TeamID != teamID {
			continue
		}
		row := UsageRow{UsageDay: store.UsageDay{Day: d.Day, Model: d.Model}}
		g := group{day: d.Day, model: d.Model}
		switch by {
		case ByKey:
			row.APIKeyID, g.value = d.APIKeyID, d.APIKeyID
		case ByTeam:
			row.TeamID, g.value = k.TeamID, k.TeamID
		case ByMember:
			row.UserID, g.value = k.CreatedBy, k.CreatedBy
		}
		sum := sums[g]
		if sum == nil {
			sum = &row
			sums[g] = sum
		}
		sum.Requests += d.Requests
		sum.PromptTokens += d.PromptTokens
		sum.CompletionTokens += d.CompletionTokens
		sum.CachedTokens += d.CachedTokens
		sum.CostNanos += d.CostNanos
	}
	out := make([]UsageRow, 0, len(sums))
	for _, r := range sums {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b UsageRow) int {
		return cmp.Or(cmp.Compare(a.Day, b.Day), cmp.Compare(a.Model, b.Model),
			cmp.Compare(a.APIKeyID, b.APIKeyID), cmp.Compare(a.TeamID, b.TeamID), cmp.Compare(a.UserID, b.UserID))
	})
	return out, nil
}
