package api

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/org"
	"github.com/parleyhq/parley/server/store"
)

// OrganizationHandler serves OrganizationService over org.Service.
type OrganizationHandler struct {
	Orgs  *org.Service
	Audit store.Audit
	Pages PageTokens
}

var _ parleyv1connect.OrganizationServiceHandler = (*OrganizationHandler)(nil)

// caller resolves the calling member of the request's organisation.
func (h *OrganizationHandler) caller(ctx context.Context, req connect.AnyRequest, orgID string) (org.Caller, error) {
	p, _ := auth.FromContext(ctx)
	return h.Orgs.Caller(ctx, p, orgID, clientOf(req))
}

var orgRoles = map[parleyv1.OrganizationRole]store.OrgRole{
	parleyv1.OrganizationRole_ORGANIZATION_ROLE_OWNER:          store.RoleOwner,
	parleyv1.OrganizationRole_ORGANIZATION_ROLE_ADMIN:          store.RoleAdmin,
	parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER:         store.RoleMember,
	parleyv1.OrganizationRole_ORGANIZATION_ROLE_BILLING_READER: store.RoleBillingReader,
}

var teamRoles = map[parleyv1.TeamRole]store.TeamRole{
	parleyv1.TeamRole_TEAM_ROLE_ADMIN:  store.TeamRoleAdmin,
	parleyv1.TeamRole_TEAM_ROLE_MEMBER: store.TeamRoleMember,
}

// teamRole reads a team role; unset is a member.
func teamRole(field string, r parleyv1.TeamRole) (store.TeamRole, error) {
	if r == parleyv1.TeamRole_TEAM_ROLE_UNSPECIFIED {
		return store.TeamRoleMember, nil
	}
	role, ok := teamRoles[r]
	if !ok {
		return "", apierr.InvalidArgument(field, "must be TEAM_ROLE_ADMIN or TEAM_ROLE_MEMBER")
	}
	return role, nil
}

var budgetScopes = map[parleyv1.BudgetScope]store.BudgetScope{
	parleyv1.BudgetScope_BUDGET_SCOPE_ORGANIZATION: store.ScopeOrganization,
	parleyv1.BudgetScope_BUDGET_SCOPE_TEAM:         store.ScopeTeam,
	parleyv1.BudgetScope_BUDGET_SCOPE_KEY:          store.ScopeKey,
	parleyv1.BudgetScope_BUDGET_SCOPE_MEMBER:       store.ScopeMember,
}

var budgetPeriods = map[parleyv1.BudgetPeriod]store.BudgetPeriod{
	parleyv1.BudgetPeriod_BUDGET_PERIOD_DAILY:   store.PeriodDaily,
	parleyv1.BudgetPeriod_BUDGET_PERIOD_WEEKLY:  store.PeriodWeekly,
	parleyv1.BudgetPeriod_BUDGET_PERIOD_MONTHLY: store.PeriodMonthly,
	parleyv1.BudgetPeriod_BUDGET_PERIOD_TOTAL:   store.PeriodTotal,
}

// keyOf returns the map's key for v (the enum for a store value).
func keyOf[K comparable, V comparable](m map[K]V, v V) K {
	for k, x := range m {
		if x == v {
			return k
		}
	}
	var zero K
	return zero
}

func orgToProto(o store.Organization) *parleyv1.Organization {
	return &parleyv1.Organization{OrganizationId: o.ID, Name: o.Name, TimeZone: o.TimeZone, CreatedAt: timestamppb.New(o.CreatedAt), SsoDomain: o.SSODomain}
}

func teamToProto(t store.Team) *parleyv1.Team {
	return &parleyv1.Team{TeamId: t.ID, Name: t.Name, CreatedAt: timestamppb.New(t.CreatedAt), SsoGroup: t.SSOGroup}
}

func budgetToProto(b store.Budget) *parleyv1.Budget {
	pb := &parleyv1.Budget{BudgetId: b.ID, Scope: keyOf(budgetScopes, b.Scope), ScopeId: b.ScopeID, Period: keyOf(budgetPeriods, b.Period),
		LimitNanos: b.LimitNanos, SpentNanos: b.SpentNanos, ReservedNanos: b.ReservedNanos, PeriodStart: timestamppb.New(b.WindowStart)}
	if !b.ResetsAt.IsZero() {
		pb.ResetsAt = timestamppb.New(b.ResetsAt)
	}
	return pb
}

func orgKeyToProto(k store.APIKey) *parleyv1.OrganizationApiKey {
	return &parleyv1.OrganizationApiKey{ApiKey: APIKeyToProto(k), TeamId: k.TeamID, CreatedBy: k.CreatedBy, Models: k.Models,
		AllowedIps: k.AllowedIPs, RequestsPerMinute: k.RPM, TokensPerMinute: k.TPM}
}

// CreateOrganization makes an organisation owned by the caller.
func (h *OrganizationHandler) CreateOrganization(ctx context.Context, req *connect.Request[parleyv1.CreateOrganizationRequest]) (*connect.Response[parleyv1.CreateOrganizationResponse], error) {
	p, _ := auth.FromContext(ctx)
	if p.Org != nil {
		return nil, apierr.PermissionDenied("an organisation's API key cannot manage organisations")
	}
	o, err := h.Orgs.Create(ctx, p, req.Msg.GetName(), req.Msg.GetTimeZone(), clientOf(req))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateOrganizationResponse{Organization: orgToProto(o)}), nil
}

// ListOrganizations lists the caller's organisations.
func (h *OrganizationHandler) ListOrganizations(ctx context.Context, _ *connect.Request[parleyv1.ListOrganizationsRequest]) (*connect.Response[parleyv1.ListOrganizationsResponse], error) {
	p, _ := auth.FromContext(ctx)
	ms, err := h.Orgs.Memberships(ctx, p)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListOrganizationsResponse{}
	for _, m := range ms {
		res.Memberships = append(res.Memberships, &parleyv1.OrganizationMembership{Organization: orgToProto(m.Organization), Role: keyOf(orgRoles, m.Role)})
	}
	return connect.NewResponse(res), nil
}

// GetOrganization returns an organisation, the caller's role and, to those
// who read the bill, its balance.
func (h *OrganizationHandler) GetOrganization(ctx context.Context, req *connect.Request[parleyv1.GetOrganizationRequest]) (*connect.Response[parleyv1.GetOrganizationResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	res := &parleyv1.GetOrganizationResponse{Organization: orgToProto(c.Org), Role: keyOf(orgRoles, c.Role)}
	b, ok, err := h.Orgs.Balance(ctx, c)
	if err != nil {
		return nil, err
	}
	if ok {
		res.Balance = &parleyv1.GetBalanceResponse{BalanceNanos: b.AvailableNanos + b.ReservedNanos, ReservedNanos: b.ReservedNanos}
	}
	return connect.NewResponse(res), nil
}

// UpdateOrganization renames it or changes its time zone.
func (h *OrganizationHandler) UpdateOrganization(ctx context.Context, req *connect.Request[parleyv1.UpdateOrganizationRequest]) (*connect.Response[parleyv1.UpdateOrganizationResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	o, err := h.Orgs.Update(ctx, c, req.Msg.GetName(), req.Msg.GetTimeZone())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.UpdateOrganizationResponse{Organization: orgToProto(o)}), nil
}

// AddMember adds a user or changes its role.
func (h *OrganizationHandler) AddMember(ctx context.Context, req *connect.Request[parleyv1.AddMemberRequest]) (*connect.Response[parleyv1.AddMemberResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if req.Msg.GetEmail() == "" {
		return nil, apierr.InvalidArgument("email", "is required")
	}
	role, ok := orgRoles[req.Msg.GetRole()]
	if !ok {
		return nil, apierr.InvalidArgument("role", "must be owner, admin, member or billing reader")
	}
	m, err := h.Orgs.AddMember(ctx, c, req.Msg.GetEmail(), role)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.AddMemberResponse{Member: &parleyv1.Member{UserId: m.UserID, Email: m.Email, Role: req.Msg.GetRole(), CreatedAt: timestamppb.New(m.CreatedAt)}}), nil
}

// RemoveMember removes a member.
func (h *OrganizationHandler) RemoveMember(ctx context.Context, req *connect.Request[parleyv1.RemoveMemberRequest]) (*connect.Response[parleyv1.RemoveMemberResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if err := h.Orgs.RemoveMember(ctx, c, req.Msg.GetUserId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.RemoveMemberResponse{}), nil
}

// ListMembers lists the members.
func (h *OrganizationHandler) ListMembers(ctx context.Context, req *connect.Request[parleyv1.ListMembersRequest]) (*connect.Response[parleyv1.ListMembersResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	ms, err := h.Orgs.Members(ctx, c)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListMembersResponse{}
	for _, m := range ms {
		res.Members = append(res.Members, &parleyv1.Member{UserId: m.UserID, Email: m.Email, Role: keyOf(orgRoles, m.Role), CreatedAt: timestamppb.New(m.CreatedAt)})
	}
	return connect.NewResponse(res), nil
}

// CreateTeam makes a team.
func (h *OrganizationHandler) CreateTeam(ctx context.Context, req *connect.Request[parleyv1.CreateTeamRequest]) (*connect.Response[parleyv1.CreateTeamResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	t, err := h.Orgs.CreateTeam(ctx, c, req.Msg.GetName(), req.Msg.GetSsoGroup())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateTeamResponse{Team: teamToProto(t)}), nil
}

// UpdateTeam renames a team or sets its identity provider group.
func (h *OrganizationHandler) UpdateTeam(ctx context.Context, req *connect.Request[parleyv1.UpdateTeamRequest]) (*connect.Response[parleyv1.UpdateTeamResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	t, err := h.Orgs.UpdateTeam(ctx, c, req.Msg.GetTeamId(), req.Msg.GetName(), req.Msg.SsoGroup)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.UpdateTeamResponse{Team: teamToProto(t)}), nil
}

// ListTeams lists the teams the caller may see.
func (h *OrganizationHandler) ListTeams(ctx context.Context, req *connect.Request[parleyv1.ListTeamsRequest]) (*connect.Response[parleyv1.ListTeamsResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	ts, err := h.Orgs.Teams(ctx, c)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListTeamsResponse{}
	for _, t := range ts {
		res.Teams = append(res.Teams, teamToProto(t))
	}
	return connect.NewResponse(res), nil
}

// DeleteTeam deletes a team.
func (h *OrganizationHandler) DeleteTeam(ctx context.Context, req *connect.Request[parleyv1.DeleteTeamRequest]) (*connect.Response[parleyv1.DeleteTeamResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if err := h.Orgs.DeleteTeam(ctx, c, req.Msg.GetTeamId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.DeleteTeamResponse{}), nil
}

// SetTeamMember adds a member to a team or changes its team role.
func (h *OrganizationHandler) SetTeamMember(ctx context.Context, req *connect.Request[parleyv1.SetTeamMemberRequest]) (*connect.Response[parleyv1.SetTeamMemberResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	role, err := teamRole("role", req.Msg.GetRole())
	if err != nil {
		return nil, err
	}
	if req.Msg.GetUserId() == "" {
		return nil, apierr.InvalidArgument("user_id", "is required")
	}
	if err := h.Orgs.SetTeamMember(ctx, c, req.Msg.GetTeamId(), req.Msg.GetUserId(), role); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.SetTeamMemberResponse{}), nil
}

// RemoveTeamMember removes a member from a team.
func (h *OrganizationHandler) RemoveTeamMember(ctx context.Context, req *connect.Request[parleyv1.RemoveTeamMemberRequest]) (*connect.Response[parleyv1.RemoveTeamMemberResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if err := h.Orgs.RemoveTeamMember(ctx, c, req.Msg.GetTeamId(), req.Msg.GetUserId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.RemoveTeamMemberResponse{}), nil
}

// ListTeamMembers lists a team's members.
func (h *OrganizationHandler) ListTeamMembers(ctx context.Context, req *connect.Request[parleyv1.ListTeamMembersRequest]) (*connect.Response[parleyv1.ListTeamMembersResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	ms, err := h.Orgs.TeamMembers(ctx, c, req.Msg.GetTeamId())
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListTeamMembersResponse{}
	for _, m := range ms {
		res.Members = append(res.Members, &parleyv1.TeamMember{UserId: m.UserID, Email: m.Email, Role: keyOf(teamRoles, m.Role)})
	}
	return connect.NewResponse(res), nil
}

// SetBudget sets a scope's budget.
func (h *OrganizationHandler) SetBudget(ctx context.Context, req *connect.Request[parleyv1.SetBudgetRequest]) (*connect.Response[parleyv1.SetBudgetResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if err := org.CheckManage(c, "managing budgets"); err != nil {
		return nil, err
	}
	scope, ok := budgetScopes[req.Msg.GetScope()]
	if !ok {
		return nil, apierr.InvalidArgument("scope", "must be BUDGET_SCOPE_ORGANIZATION, _TEAM, _KEY or _MEMBER")
	}
	period, ok := budgetPeriods[req.Msg.GetPeriod()]
	if !ok {
		return nil, apierr.InvalidArgument("period", "must be BUDGET_PERIOD_DAILY, _WEEKLY, _MONTHLY or _TOTAL")
	}
	b, err := h.Orgs.SetBudget(ctx, c, store.Budget{Scope: scope, ScopeID: req.Msg.GetScopeId(), Period: period, LimitNanos: req.Msg.GetLimitNanos()})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.SetBudgetResponse{Budget: budgetToProto(b)}), nil
}

// DeleteBudget removes a budget.
func (h *OrganizationHandler) DeleteBudget(ctx context.Context, req *connect.Request[parleyv1.DeleteBudgetRequest]) (*connect.Response[parleyv1.DeleteBudgetResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if err := h.Orgs.DeleteBudget(ctx, c, req.Msg.GetBudgetId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.DeleteBudgetResponse{}), nil
}

// ListBudgets lists the budgets as they stand.
func (h *OrganizationHandler) ListBudgets(ctx context.Context, req *connect.Request[parleyv1.ListBudgetsRequest]) (*connect.Response[parleyv1.ListBudgetsResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	bs, err := h.Orgs.Budgets(ctx, c)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListBudgetsResponse{}
	for _, b := range bs {
		res.Budgets = append(res.Budgets, budgetToProto(b))
	}
	return connect.NewResponse(res), nil
}

// CreateOrganizationApiKey makes a key of the organisation.
func (h *OrganizationHandler) CreateOrganizationApiKey(ctx context.Context, req *connect.Request[parleyv1.CreateOrganizationApiKeyRequest]) (*connect.Response[parleyv1.CreateOrganizationApiKeyResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	m := req.Msg
	spec := org.KeySpec{TeamID: m.GetTeamId(), Name: m.GetName(), Models: m.GetModels(), IPs: m.GetAllowedIps(),
		RPM: m.GetRequestsPerMinute(), TPM: m.GetTokensPerMinute(), BudgetNanos: m.GetBudgetLimitNanos()}
	if d := m.GetTtl(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, apierr.InvalidArgument("ttl", "is not a valid duration")
		}
		if spec.TTL = d.AsDuration(); spec.TTL <= 0 {
			return nil, apierr.InvalidArgument("ttl", "must be positive")
		}
	}
	if m.GetBudgetPeriod() != parleyv1.BudgetPeriod_BUDGET_PERIOD_UNSPECIFIED {
		var ok bool
		if spec.BudgetPeriod, ok = budgetPeriods[m.GetBudgetPeriod()]; !ok {
			return nil, apierr.InvalidArgument("budget_period", "must be BUDGET_PERIOD_DAILY, _WEEKLY, _MONTHLY or _TOTAL")
		}
	}
	k, secret, b, err := h.Orgs.CreateKey(ctx, c, spec)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.CreateOrganizationApiKeyResponse{Key: orgKeyToProto(k), Secret: secret}
	if b != nil {
		res.Budget = budgetToProto(*b)
	}
	return connect.NewResponse(res), nil
}

// ListOrganizationApiKeys lists the keys the caller may see.
func (h *OrganizationHandler) ListOrganizationApiKeys(ctx context.Context, req *connect.Request[parleyv1.ListOrganizationApiKeysRequest]) (*connect.Response[parleyv1.ListOrganizationApiKeysResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	list := "org_keys:" + c.Org.ID + ":" + req.Msg.GetTeamId()
	cursor, err := h.Pages.Open(c.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	keys, next, err := h.Orgs.Keys(ctx, c, req.Msg.GetTeamId(), store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListOrganizationApiKeysResponse{NextPageToken: h.Pages.Seal(c.UserID, list, next)}
	for _, k := range keys {
		res.Keys = append(res.Keys, orgKeyToProto(k))
	}
	return connect.NewResponse(res), nil
}

// RevokeOrganizationApiKey revokes a key.
func (h *OrganizationHandler) RevokeOrganizationApiKey(ctx context.Context, req *connect.Request[parleyv1.RevokeOrganizationApiKeyRequest]) (*connect.Response[parleyv1.RevokeOrganizationApiKeyResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if err := h.Orgs.RevokeKey(ctx, c, req.Msg.GetKeyId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.RevokeOrganizationApiKeyResponse{}), nil
}

// GetOrganizationUsage adds up the organisation's usage per day and model.
func (h *OrganizationHandler) GetOrganizationUsage(ctx context.Context, req *connect.Request[parleyv1.GetOrganizationUsageRequest]) (*connect.Response[parleyv1.GetOrganizationUsageResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	start, end, err := usageRange(req.Msg.GetStartTime(), req.Msg.GetEndTime())
	if err != nil {
		return nil, err
	}
	by, ok := usageGroups[req.Msg.GetGroupBy()]
	if !ok {
		return nil, apierr.InvalidArgument("group_by", "must be unset, key, team or member")
	}
	rows, err := h.Orgs.Usage(ctx, c, start, end, by, req.Msg.GetTeamId())
	if err != nil {
		return nil, err
	}
	res := &parleyv1.GetOrganizationUsageResponse{Total: &parleyv1.UsageBucket{}}
	for _, r := range rows {
		b := &parleyv1.UsageBucket{Day: time.Unix(r.Day*int64(24*time.Hour/time.Second), 0).UTC().Format(time.DateOnly), Model: r.Model,
			ApiKeyId: r.APIKeyID, TeamId: r.TeamID, UserId: r.UserID}
		addToBucket(b, r.UsageDay)
		addToBucket(res.Total, r.UsageDay)
		res.Buckets = append(res.Buckets, b)
	}
	return connect.NewResponse(res), nil
}

var usageGroups = map[parleyv1.UsageGrouping]org.UsageGroup{
	parleyv1.UsageGrouping_USAGE_GROUPING_UNSPECIFIED: org.ByModel,
	parleyv1.UsageGrouping_USAGE_GROUPING_KEY:         org.ByKey,
	parleyv1.UsageGrouping_USAGE_GROUPING_TEAM:        org.ByTeam,
	parleyv1.UsageGrouping_USAGE_GROUPING_MEMBER:      org.ByMember,
}

// UsageCSVPath serves an organisation's usage as CSV (ServeUsageCSV).
const UsageCSVPath = "GET /export/organizations/{organization_id}/usage.csv"

// ServeUsageCSV writes GetOrganizationUsage as CSV, one line per bucket:
// query parameters start_time and end_time (RFC 3339 or YYYY-MM-DD),
// group_by (key, team or member) and team_id.
func (h *OrganizationHandler) ServeUsageCSV(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	msg := &parleyv1.GetOrganizationUsageRequest{OrganizationId: r.PathValue("organization_id"), TeamId: q.Get("team_id")}
	var err error
	if msg.StartTime, err = csvTime("start_time", q.Get("start_time")); err == nil {
		msg.EndTime, err = csvTime("end_time", q.Get("end_time"))
	}
	if err == nil {
		switch g := q.Get("group_by"); g {
		case "", "model":
		case "key", "team", "member":
			msg.GroupBy = parleyv1.UsageGrouping(parleyv1.UsageGrouping_value["USAGE_GROUPING_"+strings.ToUpper(g)])
		default:
			err = apierr.InvalidArgument("group_by", "must be model, key, team or member")
		}
	}
	var res *connect.Response[parleyv1.GetOrganizationUsageResponse]
	if err == nil {
		req := connect.NewRequest(msg)
		res, err = h.GetOrganizationUsage(r.Context(), req)
	}
	if err != nil {
		writeDownloadError(w, r, downloadError(err))
		return
	}
	downloadHeaders(w.Header(), "text/csv; charset=utf-8", "usage-"+msg.OrganizationId+".csv")
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"day", "model", "api_key_id", "team_id", "user_id", "requests", "prompt_tokens", "completion_tokens", "cached_tokens", "cost_nanos", "cost_usd"})
	for _, b := range res.Msg.GetBuckets() {
		_ = cw.Write([]string{csvCell(b.GetDay()), csvCell(b.GetModel()), b.GetApiKeyId(), b.GetTeamId(), b.GetUserId(),
			strconv.FormatInt(b.GetRequests(), 10), strconv.FormatInt(b.GetPromptTokens(), 10), strconv.FormatInt(b.GetCompletionTokens(), 10),
			strconv.FormatInt(b.GetCachedTokens(), 10), strconv.FormatInt(b.GetCostNanos(), 10), fmt.Sprintf("%d.%09d", b.GetCostNanos()/1e9, b.GetCostNanos()%1e9)})
	}
	cw.Flush()
}

// csvTime reads a CSV query's time: RFC 3339, or a date (midnight UTC).
func csvTime(field, s string) (*timestamppb.Timestamp, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			return nil, apierr.InvalidArgument(field, "must be RFC 3339 (2026-12-01T00:00:00Z) or a date (2026-12-01)")
		}
	}
	return timestamppb.New(t), nil
}

// csvCell keeps a spreadsheet from reading a cell as a formula (model
// names are operators' and clients' text).
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// ListOrganizationAuditEvents pages through the organisation's audit log.
func (h *OrganizationHandler) ListOrganizationAuditEvents(ctx context.Context, req *connect.Request[parleyv1.ListOrganizationAuditEventsRequest]) (*connect.Response[parleyv1.ListOrganizationAuditEventsResponse], error) {
	c, err := h.caller(ctx, req, req.Msg.GetOrganizationId())
	if err != nil {
		return nil, err
	}
	if err := org.CheckManage(c, "reading the audit log"); err != nil {
		return nil, err
	}
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	list := "org_audit:" + c.Org.ID
	cursor, err := h.Pages.Open(c.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	events, next, err := h.Audit.List(ctx, c.Org.BillingUserID, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, apierr.Internal()
	}
	res := &parleyv1.ListOrganizationAuditEventsResponse{NextPageToken: h.Pages.Seal(c.UserID, list, next)}
	for _, e := range events {
		res.Events = append(res.Events, &parleyv1.AuditEvent{EventId: e.ID, UserId: e.UserID, Kind: e.Kind, Ip: e.IP, UserAgent: e.UserAgent, Detail: e.Detail, At: timestamppb.New(e.At)})
	}
	return connect.NewResponse(res), nil
}
