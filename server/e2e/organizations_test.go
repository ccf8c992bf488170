package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
)

// orgClient is OrganizationService as a's browser session on s.
func (s *server) orgClient(a *account) parleyv1connect.OrganizationServiceClient {
	hc := protocols[0].client()
	hc.Transport = credTransport{base: hc.Transport, c: cred{cookie: a.Cookie}}
	return parleyv1connect.NewOrganizationServiceClient(hc, s.BaseURL, protocols[0].opts...)
}

// orgSetup is an organisation with a team, made through the API by its owner.
type orgSetup struct {
	owner        *account
	orgID, team  string
	c            parleyv1connect.OrganizationServiceClient
	teamBudgetID string
}

func newOrgSetup(t *testing.T, s *server, owner *account, name string) orgSetup {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	c := s.orgClient(owner)
	o, err := c.CreateOrganization(ctx, connect.NewRequest(&parleyv1.CreateOrganizationRequest{Name: name, TimeZone: "Europe/Berlin"}))
	if err != nil {
		t.Fatalf("CreateOrganization: %v", err)
	}
	tm, err := c.CreateTeam(ctx, connect.NewRequest(&parleyv1.CreateTeamRequest{OrganizationId: o.Msg.GetOrganization().GetOrganizationId(), Name: "research"}))
	if err != nil {
		t.Fatalf("CreateTeam: %v", err)
	}
	return orgSetup{owner: owner, orgID: o.Msg.GetOrganization().GetOrganizationId(), team: tm.Msg.GetTeam().GetTeamId(), c: c}
}

func (o orgSetup) key(t *testing.T, req *parleyv1.CreateOrganizationApiKeyRequest) (secret, id string) {
	t.Helper()
	req.OrganizationId = o.orgID
	res, err := o.c.CreateOrganizationApiKey(ctxTimeout(t, 10*time.Second), connect.NewRequest(req))
	if err != nil {
		t.Fatalf("CreateOrganizationApiKey: %v", err)
	}
	return res.Msg.GetSecret(), res.Msg.GetKey().GetApiKey().GetKeyId()
}

func (o orgSetup) budget(t *testing.T, id string) *parleyv1.Budget {
	t.Helper()
	res, err := o.c.ListBudgets(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.ListBudgetsRequest{OrganizationId: o.orgID}))
	if err != nil {
		t.Fatalf("ListBudgets: %v", err)
	}
	for _, b := range res.Msg.GetBudgets() {
		if b.GetBudgetId() == id {
			return b
		}
	}
	t.Fatalf("budget %s not listed", id)
	return nil
}

// raceOutcome is how one request of the race ended.
type raceOutcome int

const (
	served raceOutcome = iota
	overBudget
	shortOfMoney
	cancelled
)

// raceRequest sends one request of the budget race on one of three
// surfaces; an OpenAI stream may be cut by the client after its first
// token.
func raceRequest(t *testing.T, gw *server, key string, i int) raceOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const prompt = "Tell me about the rabbit, at length, please."
	switch i % 3 {
	case 0: // Connect
		_, err := gw.api(protocols[0], cred{bearer: key}).Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-small", Messages: userText(prompt), MaxOutputTokens: 160}))
		var le parleyv1.LimitExceeded
		switch {
		case err == nil:
			return served
		case apierr.Detail(err, &le) && le.GetLimit().GetKind() == parleyv1.LimitKind_LIMIT_KIND_BUDGET:
			if !strings.Contains(err.Error(), "team budget exceeded") && !strings.Contains(err.Error(), "budget exceeded") {
				t.Errorf("Connect refusal does not name the budget: %v", err)
			}
			return overBudget
		case apierr.Detail(err, &parleyv1.InsufficientBalance{}):
			return shortOfMoney
		}
		t.Errorf("Connect: %v", err)
		return served
	case 1: // Anthropic Messages
		res, body := gw.postRaw(t, "/v1/messages", `{"model":"sim-small","max_tokens":160,"messages":[{"role":"user","content":"`+prompt+`"}]}`,
			map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"})
		switch {
		case res.StatusCode == http.StatusOK:
			return served
		case res.StatusCode == http.StatusTooManyRequests && strings.Contains(string(body), "budget exceeded"):
			return overBudget
		case res.StatusCode == http.StatusBadRequest && strings.Contains(string(body), "credit balance is too low"):
			return shortOfMoney
		}
		t.Errorf("Anthropic: %d %s", res.StatusCode, body)
		return served
	}
	// OpenAI, streamed; every other one cut after its first token.
	req, _ := http.NewRequestWithContext(ctx, "POST", gw.BaseURL+"/v1/chat/completions", strings.NewReader(
		`{"model":"sim-small","stream":true,"max_tokens":160,"messages":[{"role":"user","content":"`+prompt+`"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := h1Client().Do(req)
	if err != nil {
		t.Errorf("OpenAI: %v", err)
		return served
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		var e struct {
			Error struct{ Code, Type string }
		}
		_ = json.Unmarshal(body, &e)
		switch {
		case res.StatusCode == http.StatusTooManyRequests && e.Error.Code == "budget_exceeded" && res.Header.Get("X-Should-Retry") == "false":
			return overBudget
		case res.StatusCode == http.StatusTooManyRequests && e.Error.Code == "insufficient_quota":
			return shortOfMoney
		}
		t.Errorf("OpenAI: %d %s", res.StatusCode, body)
		return served
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"content":"`) && (i/3)%2 == 1 {
			cancel() // the client goes away mid-stream
			return cancelled
		}
	}
	return served
}

// budgetRace runs 200 requests over five keys of one team, mixed surfaces,
// some cut mid-stream, spread over gws, against a team budget of $0.01 (or
// an organisation balance of $0.01 with orgBalance): the budget is never
// exceeded and what was charged equals what the usage records add up to
// and what the balance lost, to the nano-USD.
func budgetRace(t *testing.T, gws []*server, orgBalance bool) {
	owner := gws[0].newAccount(t, "owner@example.com")
	o := newOrgSetup(t, gws[0], owner, "Initech")
	ctx := ctxTimeout(t, 120*time.Second)
	topup := "10"
	const limit = 10_000_000 // $0.01
	if orgBalance {
		topup = "0.01"
	} else {
		b, err := o.c.SetBudget(ctx, connect.NewRequest(&parleyv1.SetBudgetRequest{OrganizationId: o.orgID, Scope: parleyv1.BudgetScope_BUDGET_SCOPE_TEAM,
			ScopeId: o.team, Period: parleyv1.BudgetPeriod_BUDGET_PERIOD_MONTHLY, LimitNanos: limit}))
		if err != nil {
			t.Fatalf("SetBudget: %v", err)
		}
		o.teamBudgetID = b.Msg.GetBudget().GetBudgetId()
	}
	gws[0].admin(t, "org-topup", "--org", o.orgID, "--usd", topup)
	var keys []string
	for i := range 5 {
		k, _ := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: o.team, Name: fmt.Sprintf("ci-%d", i)})
		keys = append(keys, k)
	}
	var (
		mu    sync.Mutex
		count = map[raceOutcome]int{}
		wg    sync.WaitGroup
	)
	for i := range 200 {
		wg.Go(func() {
			r := raceRequest(t, gws[i%len(gws)], keys[i%5], i)
			mu.Lock()
			count[r]++
			mu.Unlock()
		})
	}
	wg.Wait()
	refused := count[overBudget]
	if orgBalance {
		refused = count[shortOfMoney]
	}
	if refused == 0 || count[served]+count[cancelled] == 0 || count[shortOfMoney]+count[overBudget] != refused {
		t.Fatalf("outcomes %v: want some served and some refused for the %s only", count, map[bool]string{false: "team budget", true: "balance"}[orgBalance])
	}
	// Cut streams settle after their clients left: wait for every hold.
	var spent int64
	var bal *parleyv1.GetBalanceResponse
	waitFor(t, 20*time.Second, "every hold settled", func() bool {
		res, err := o.c.GetOrganization(ctx, connect.NewRequest(&parleyv1.GetOrganizationRequest{OrganizationId: o.orgID}))
		if err != nil {
			t.Fatalf("GetOrganization: %v", err)
		}
		bal = res.Msg.GetBalance()
		if orgBalance {
			return bal.GetReservedNanos() == 0
		}
		b := o.budget(t, o.teamBudgetID)
		spent = b.GetSpentNanos()
		return b.GetReservedNanos() == 0 && bal.GetReservedNanos() == 0
	})
	lost := int64(10_000_000_000) - bal.GetBalanceNanos()
	if orgBalance {
		lost, spent = 10_000_000-bal.GetBalanceNanos(), 10_000_000-bal.GetBalanceNanos()
	}
	if spent > limit || lost != spent {
		t.Fatalf("spent %d of a budget of %d; the balance lost %d", spent, limit, lost)
	}
	var usage int64
	waitFor(t, 20*time.Second, "the usage records add up to the charges", func() bool {
		res, err := o.c.GetOrganizationUsage(ctx, connect.NewRequest(&parleyv1.GetOrganizationUsageRequest{OrganizationId: o.orgID}))
		if err != nil {
			t.Fatalf("GetOrganizationUsage: %v", err)
		}
		usage = res.Msg.GetTotal().GetCostNanos()
		return usage == spent
	})
	t.Logf("outcomes %v; spent %d of %d nano-USD; usage records %d", count, spent, limit, usage)
}

func TestOrganizationBudgetHoldsUnderConcurrency(t *testing.T) {
	budgetRace(t, []*server{startServer(t, append(fastAuth, "--sim-time-scale", "0.1")...)}, false)
}

func TestOrganizationBalanceHoldsUnderConcurrency(t *testing.T) {
	budgetRace(t, []*server{startServer(t, append(fastAuth, "--sim-time-scale", "0.1")...)}, true)
}

// The same race over two gateways sharing PostgreSQL and Redis.
func TestScaleOrganizationBudgetHoldsAcrossGateways(t *testing.T) {
	scaleMode(t)
	args := append(fastAuth, "--sim-time-scale", "0.1")
	budgetRace(t, []*server{startServer(t, args...), startServer(t, args...)}, false)
}

// A key limited to one model can use no other on any surface, and lists
// only that one; its request rate holds across gateways.
func TestOrganizationKeyModelsAndRates(t *testing.T) {
	checkKeyModelsAndRates(t, []*server{startServer(t, fastAuth...)})
}

func TestScaleOrganizationKeyRatesAcrossGateways(t *testing.T) {
	scaleMode(t)
	checkKeyModelsAndRates(t, []*server{startServer(t, fastAuth...), startServer(t, fastAuth...)})
}

func checkKeyModelsAndRates(t *testing.T, gws []*server) {
	s := gws[0]
	o := newOrgSetup(t, s, s.newAccount(t, "owner@example.com"), "Globex")
	s.admin(t, "org-topup", "--org", o.orgID, "--usd", "5")
	key, _ := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: o.team, Name: "small only", Models: []string{"sim-small"}})
	ctx := ctxTimeout(t, 60*time.Second)
	bearer := map[string]string{"Authorization": "Bearer " + key}
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"sim-large","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/completions", `{"model":"sim-large","max_tokens":4,"prompt":"hi"}`},
		{"/v1/responses", `{"model":"sim-large","max_output_tokens":16,"input":"hi"}`},
		{"/v1/embeddings", `{"model":"sim-embed","input":"hi"}`},
	} {
		res, body := s.postRaw(t, c.path, c.body, bearer)
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "this API key may not use") {
			t.Errorf("%s with another model: %d %s", c.path, res.StatusCode, body)
		}
	}
	res, body := s.postRaw(t, "/v1/messages", `{"model":"sim-large","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"})
	anthropicErr(t, "Anthropic with another model", res, body, http.StatusNotFound, "not_found_error")
	_, err := s.api(protocols[0], cred{bearer: key}).Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{Model: "sim-large", Messages: userText("hi"), MaxOutputTokens: 4}))
	wantCode(t, "Connect with another model", err, connect.CodeNotFound)
	// Aliases of another model are another model.
	res, body = s.postRaw(t, "/v1/chat/completions", `{"model":"gpt-4o","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`, bearer)
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("an alias of sim-large: %d %s", res.StatusCode, body)
	}
	// The model it may use works, and is all it lists.
	if res, body := s.postRaw(t, "/v1/chat/completions", `{"model":"sim-small","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`, bearer); res.StatusCode != http.StatusOK {
		t.Fatalf("the allowed model: %d %s", res.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", s.BaseURL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	mres, err := h1Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Data []struct{ ID string } }
	_ = json.NewDecoder(mres.Body).Decode(&list)
	mres.Body.Close()
	if len(list.Data) != 1 || list.Data[0].ID != "sim-small" {
		t.Errorf("/v1/models for the key: %+v", list.Data)
	}
	lm, err := s.api(protocols[0], cred{bearer: key}).Models.ListModels(ctx, connect.NewRequest(&parleyv1.ListModelsRequest{}))
	if err != nil || len(lm.Msg.GetModels()) != 1 {
		t.Errorf("ListModels for the key: %v %v", lm, err)
	}

	// Three requests a minute, across every gateway.
	rated, _ := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: o.team, Name: "three a minute", RequestsPerMinute: 3})
	okN, refused := 0, 0
	for i := range 6 {
		res, body := gws[i%len(gws)].postRaw(t, "/v1/chat/completions", `{"model":"sim-small","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"Authorization": "Bearer " + rated})
		switch {
		case res.StatusCode == http.StatusOK:
			okN++
		case res.StatusCode == http.StatusTooManyRequests && strings.Contains(string(body), "at most 3 requests a minute") && res.Header.Get("Retry-After") != "":
			refused++
		default:
			t.Fatalf("rated request %d: %d %s", i, res.StatusCode, body)
		}
	}
	if okN != 3 || refused != 3 {
		t.Fatalf("3 a minute over %d gateways: %d served, %d refused", len(gws), okN, refused)
	}
}

// Who may do what: members, team admins, billing readers and outsiders.
func TestOrganizationRoles(t *testing.T) {
	s := startServer(t, fastAuth...)
	ctx := ctxTimeout(t, 60*time.Second)
	o := newOrgSetup(t, s, s.newAccount(t, "owner@example.com"), "Umbrella")
	other, err := o.c.CreateTeam(ctx, connect.NewRequest(&parleyv1.CreateTeamRequest{OrganizationId: o.orgID, Name: "ops"}))
	if err != nil {
		t.Fatal(err)
	}
	otherTeam := other.Msg.GetTeam().GetTeamId()
	_, otherKey := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: otherTeam, Name: "ops key"})
	member := s.newAccount(t, "member@example.com")
	reader := s.newAccount(t, "reader@example.com")
	outsider := s.newAccount(t, "outsider@example.com")
	add := func(a *account, role parleyv1.OrganizationRole) {
		res, err := o.c.AddMember(ctx, connect.NewRequest(&parleyv1.AddMemberRequest{OrganizationId: o.orgID, Email: a.Email, Role: role}))
		if err != nil {
			t.Fatalf("AddMember %s: %v", a.Email, err)
		}
		a.User = &parleyv1.User{UserId: res.Msg.GetMember().GetUserId()}
	}
	add(member, parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER)
	add(reader, parleyv1.OrganizationRole_ORGANIZATION_ROLE_BILLING_READER)
	if _, err := o.c.SetTeamMember(ctx, connect.NewRequest(&parleyv1.SetTeamMemberRequest{OrganizationId: o.orgID, TeamId: o.team,
		UserId: member.User.GetUserId(), Role: parleyv1.TeamRole_TEAM_ROLE_ADMIN})); err != nil {
		t.Fatal(err)
	}
	mc, rc, xc := s.orgClient(member), s.orgClient(reader), s.orgClient(outsider)
	setBudget := &parleyv1.SetBudgetRequest{OrganizationId: o.orgID, Scope: parleyv1.BudgetScope_BUDGET_SCOPE_TEAM, ScopeId: o.team,
		Period: parleyv1.BudgetPeriod_BUDGET_PERIOD_DAILY, LimitNanos: 1000}

	// A member (its team's admin) cannot change budgets or members.
	_, err = mc.SetBudget(ctx, connect.NewRequest(setBudget))
	wantCode(t, "a member sets a budget", err, connect.CodePermissionDenied)
	_, err = mc.AddMember(ctx, connect.NewRequest(&parleyv1.AddMemberRequest{OrganizationId: o.orgID, Email: outsider.Email, Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_ADMIN}))
	wantCode(t, "a member adds a member", err, connect.CodePermissionDenied)
	_, err = mc.ListBudgets(ctx, connect.NewRequest(&parleyv1.ListBudgetsRequest{OrganizationId: o.orgID}))
	wantCode(t, "a member reads budgets", err, connect.CodePermissionDenied)
	// A team admin makes its team's keys, not another team's; reads
	// neither that team nor its keys; cannot revoke them.
	if _, err := mc.CreateOrganizationApiKey(ctx, connect.NewRequest(&parleyv1.CreateOrganizationApiKeyRequest{OrganizationId: o.orgID, TeamId: o.team, Name: "mine"})); err != nil {
		t.Fatalf("a team admin makes its team's key: %v", err)
	}
	_, err = mc.CreateOrganizationApiKey(ctx, connect.NewRequest(&parleyv1.CreateOrganizationApiKeyRequest{OrganizationId: o.orgID, TeamId: otherTeam, Name: "theirs"}))
	wantCode(t, "a team admin makes another team's key", err, connect.CodeNotFound)
	_, err = mc.ListOrganizationApiKeys(ctx, connect.NewRequest(&parleyv1.ListOrganizationApiKeysRequest{OrganizationId: o.orgID, TeamId: otherTeam}))
	wantCode(t, "a team admin lists another team's keys", err, connect.CodeNotFound)
	_, err = mc.ListTeamMembers(ctx, connect.NewRequest(&parleyv1.ListTeamMembersRequest{OrganizationId: o.orgID, TeamId: otherTeam}))
	wantCode(t, "a team admin lists another team's members", err, connect.CodeNotFound)
	_, err = mc.RevokeOrganizationApiKey(ctx, connect.NewRequest(&parleyv1.RevokeOrganizationApiKeyRequest{OrganizationId: o.orgID, KeyId: otherKey}))
	wantCode(t, "a team admin revokes another team's key", err, connect.CodeNotFound)
	teams, err := mc.ListTeams(ctx, connect.NewRequest(&parleyv1.ListTeamsRequest{OrganizationId: o.orgID}))
	if err != nil || len(teams.Msg.GetTeams()) != 1 || teams.Msg.GetTeams()[0].GetTeamId() != o.team {
		t.Fatalf("a member's teams: %v %v", teams, err)
	}
	// Its own listing holds only what it may see.
	keys, err := mc.ListOrganizationApiKeys(ctx, connect.NewRequest(&parleyv1.ListOrganizationApiKeysRequest{OrganizationId: o.orgID}))
	if err != nil || len(keys.Msg.GetKeys()) != 1 || keys.Msg.GetKeys()[0].GetApiKey().GetName() != "mine" {
		t.Fatalf("a member's keys: %v %v", keys, err)
	}
	// A billing reader reads budgets and usage, changes nothing, makes no keys.
	if _, err := rc.ListBudgets(ctx, connect.NewRequest(&parleyv1.ListBudgetsRequest{OrganizationId: o.orgID})); err != nil {
		t.Fatalf("a billing reader reads budgets: %v", err)
	}
	if g, err := rc.GetOrganization(ctx, connect.NewRequest(&parleyv1.GetOrganizationRequest{OrganizationId: o.orgID})); err != nil || g.Msg.GetBalance() == nil {
		t.Fatalf("a billing reader sees the balance: %v %v", g, err)
	}
	if g, err := mc.GetOrganization(ctx, connect.NewRequest(&parleyv1.GetOrganizationRequest{OrganizationId: o.orgID})); err != nil || g.Msg.GetBalance() != nil {
		t.Fatalf("a member does not see the balance: %v %v", g, err)
	}
	_, err = rc.SetBudget(ctx, connect.NewRequest(setBudget))
	wantCode(t, "a billing reader sets a budget", err, connect.CodePermissionDenied)
	_, err = rc.CreateOrganizationApiKey(ctx, connect.NewRequest(&parleyv1.CreateOrganizationApiKeyRequest{OrganizationId: o.orgID, Name: "x"}))
	wantCode(t, "a billing reader makes a key", err, connect.CodePermissionDenied)
	_, err = rc.ListOrganizationAuditEvents(ctx, connect.NewRequest(&parleyv1.ListOrganizationAuditEventsRequest{OrganizationId: o.orgID}))
	wantCode(t, "a billing reader reads the audit log", err, connect.CodePermissionDenied)
	// Nobody outside sees any of it.
	for name, call := range map[string]func() error{
		"GetOrganization": func() error {
			_, err := xc.GetOrganization(ctx, connect.NewRequest(&parleyv1.GetOrganizationRequest{OrganizationId: o.orgID}))
			return err
		},
		"ListMembers": func() error {
			_, err := xc.ListMembers(ctx, connect.NewRequest(&parleyv1.ListMembersRequest{OrganizationId: o.orgID}))
			return err
		},
		"ListOrganizationApiKeys": func() error {
			_, err := xc.ListOrganizationApiKeys(ctx, connect.NewRequest(&parleyv1.ListOrganizationApiKeysRequest{OrganizationId: o.orgID}))
			return err
		},
		"SetBudget": func() error { _, err := xc.SetBudget(ctx, connect.NewRequest(setBudget)); return err },
		"RevokeOrganizationApiKey": func() error {
			_, err := xc.RevokeOrganizationApiKey(ctx, connect.NewRequest(&parleyv1.RevokeOrganizationApiKeyRequest{OrganizationId: o.orgID, KeyId: otherKey}))
			return err
		},
		"an unknown organisation": func() error {
			_, err := xc.GetOrganization(ctx, connect.NewRequest(&parleyv1.GetOrganizationRequest{OrganizationId: "0193c0de-0000-7000-8000-000000000000"}))
			return err
		},
	} {
		wantCode(t, "an outsider: "+name, call(), connect.CodeNotFound)
	}
	if l, err := xc.ListOrganizations(ctx, connect.NewRequest(&parleyv1.ListOrganizationsRequest{})); err != nil || len(l.Msg.GetMemberships()) != 0 {
		t.Fatalf("an outsider's organisations: %v %v", l, err)
	}
	// An organisation's key cannot manage the organisation.
	key, _ := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: o.team, Name: "k"})
	hc := protocols[0].client()
	hc.Transport = credTransport{base: hc.Transport, c: cred{bearer: key}}
	_, err = parleyv1connect.NewOrganizationServiceClient(hc, s.BaseURL, protocols[0].opts...).ListOrganizations(ctx, connect.NewRequest(&parleyv1.ListOrganizationsRequest{}))
	wantCode(t, "an organisation's key manages organisations", err, connect.CodePermissionDenied)
	// The last owner cannot leave; every change is in the log, with its actor.
	_, err = o.c.RemoveMember(ctx, connect.NewRequest(&parleyv1.RemoveMemberRequest{OrganizationId: o.orgID, UserId: o.owner.User.GetUserId()}))
	wantCode(t, "the last owner leaves", err, connect.CodeFailedPrecondition)
	if _, err := o.c.SetBudget(ctx, connect.NewRequest(setBudget)); err != nil {
		t.Fatal(err)
	}
	log, err := o.c.ListOrganizationAuditEvents(ctx, connect.NewRequest(&parleyv1.ListOrganizationAuditEventsRequest{OrganizationId: o.orgID, PageSize: 200}))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range log.Msg.GetEvents() {
		kinds[e.GetKind()]++
		if !strings.Contains(e.GetDetail(), `"by":"`) {
			t.Errorf("an audit event without its actor: %v", e)
		}
	}
	for _, k := range []string{"org_created", "org_team_created", "org_member_set", "org_team_member_set", "org_key_created", "org_budget_set"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the audit log: %v", k, kinds)
		}
	}
	// Allow-listed addresses: a key from 10.0.0.0/8 is refused from loopback.
	ipKey, _ := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: o.team, Name: "office only", AllowedIps: []string{"10.0.0.0/8"}})
	// X-Forwarded-For from a peer that is no trusted proxy changes nothing.
	res, body := s.postRaw(t, "/v1/chat/completions", `{"model":"sim-small","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Authorization": "Bearer " + ipKey, "X-Forwarded-For": "10.1.2.3"})
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "IP allow-list") {
		t.Fatalf("a key used outside its allow-list: %d %s", res.StatusCode, body)
	}
	_, err = o.c.CreateOrganizationApiKey(ctx, connect.NewRequest(&parleyv1.CreateOrganizationApiKeyRequest{OrganizationId: o.orgID, Name: "bad", AllowedIps: []string{"not-an-ip"}}))
	if fv := new(parleyv1.FieldViolation); connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, fv) || fv.GetField() != "allowed_ips" {
		t.Fatalf("a bad allow-list: %v", err)
	}
}

// A batch made with an organisation's key is held against its budgets and
// keeps to its models, line by line, as the key's own requests are (the
// hole LiteLLM users reported: batches not checked against team budgets).
func TestOrganizationBatchKeepsToTheKey(t *testing.T) {
	s := startServer(t, fastAuth...)
	o := newOrgSetup(t, s, s.newAccount(t, "owner@example.com"), "Batchco")
	s.admin(t, "org-topup", "--org", o.orgID, "--usd", "10")
	ctx := ctxTimeout(t, 60*time.Second)
	b, err := o.c.SetBudget(ctx, connect.NewRequest(&parleyv1.SetBudgetRequest{OrganizationId: o.orgID, Scope: parleyv1.BudgetScope_BUDGET_SCOPE_TEAM,
		ScopeId: o.team, Period: parleyv1.BudgetPeriod_BUDGET_PERIOD_TOTAL, LimitNanos: 200_000}))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: o.team, Name: "batch", Models: []string{"sim-small"}})
	var lines []string
	for i := range 40 {
		body, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint("p", i), "method": "POST", "url": "/v1/chat/completions",
			"body": map[string]any{"model": "sim-small", "max_tokens": 100, "messages": []map[string]string{{"role": "user", "content": fmt.Sprint("line ", i)}}}})
		lines = append(lines, string(body))
	}
	lines = append(lines, chatLine("other-model", "sim-large", "hello"))
	got := waitBatch(t, s, key, createBatch(t, s, key, "/v1/chat/completions", lines).ID, 60*time.Second)
	if got.Status != "completed" || got.RequestCounts.Completed == 0 || got.RequestCounts.Failed < 2 {
		t.Fatalf("ended: %+v", got)
	}
	over, model := 0, 0
	for _, e := range fileLines(t, s, key, got.ErrorFileID) {
		switch {
		case e.Response != nil && e.Response.StatusCode == 429 && strings.Contains(string(e.Response.Body), "budget_exceeded"):
			over++
		case e.CustomID == "other-model" && e.Response != nil && e.Response.StatusCode == 404:
			model++
		default:
			t.Fatalf("an error line: %+v", e)
		}
	}
	if over == 0 || model != 1 {
		t.Fatalf("%d lines over the budget, %d for another model", over, model)
	}
	var spent int64
	waitFor(t, 10*time.Second, "the batch's holds settled", func() bool {
		bu := o.budget(t, b.Msg.GetBudget().GetBudgetId())
		spent = bu.GetSpentNanos()
		return bu.GetReservedNanos() == 0
	})
	if spent > 200_000 || spent == 0 {
		t.Fatalf("the batch spent %d of a budget of 200000", spent)
	}
}

// Usage per key, team and member adds up to the organisation's total; a
// team admin reads only its team's; the CSV export says the same as the
// API, to its owner only.
func TestOrganizationUsageBreakdown(t *testing.T) {
	s := startServer(t, fastAuth...)
	ctx := ctxTimeout(t, 60*time.Second)
	o := newOrgSetup(t, s, s.newAccount(t, "owner@example.com"), "Initech")
	s.admin(t, "org-topup", "--org", o.orgID, "--usd", "5")
	ops, err := o.c.CreateTeam(ctx, connect.NewRequest(&parleyv1.CreateTeamRequest{OrganizationId: o.orgID, Name: "ops"}))
	if err != nil {
		t.Fatal(err)
	}
	opsTeam := ops.Msg.GetTeam().GetTeamId()
	lead := s.newAccount(t, "lead@example.com")
	reader := s.newAccount(t, "reader@example.com")
	for a, role := range map[*account]parleyv1.OrganizationRole{
		lead: parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER, reader: parleyv1.OrganizationRole_ORGANIZATION_ROLE_BILLING_READER,
	} {
		res, err := o.c.AddMember(ctx, connect.NewRequest(&parleyv1.AddMemberRequest{OrganizationId: o.orgID, Email: a.Email, Role: role}))
		if err != nil {
			t.Fatalf("AddMember %s: %v", a.Email, err)
		}
		a.User = &parleyv1.User{UserId: res.Msg.GetMember().GetUserId()}
	}
	if _, err := o.c.SetTeamMember(ctx, connect.NewRequest(&parleyv1.SetTeamMemberRequest{OrganizationId: o.orgID, TeamId: o.team,
		UserId: lead.User.GetUserId(), Role: parleyv1.TeamRole_TEAM_ROLE_ADMIN})); err != nil {
		t.Fatal(err)
	}
	lc := s.orgClient(lead)
	// The owner's key in research, the lead's in research, the owner's in ops.
	ownerKey, ownerKeyID := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: o.team, Name: "owner research"})
	lk, err := lc.CreateOrganizationApiKey(ctx, connect.NewRequest(&parleyv1.CreateOrganizationApiKeyRequest{OrganizationId: o.orgID, TeamId: o.team, Name: "lead research"}))
	if err != nil {
		t.Fatal(err)
	}
	leadKey, leadKeyID := lk.Msg.GetSecret(), lk.Msg.GetKey().GetApiKey().GetKeyId()
	opsKey, opsKeyID := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: opsTeam, Name: "ops"})
	sends := map[string]int{ownerKey: 2, leadKey: 3, opsKey: 4}
	for key, n := range sends {
		for i := range n {
			model := []string{"sim-small", "sim-large"}[i%2]
			res, body := s.postRaw(t, "/v1/chat/completions", `{"model":"`+model+`","max_tokens":8,"messages":[{"role":"user","content":"count"}]}`,
				map[string]string{"Authorization": "Bearer " + key})
			if res.StatusCode != http.StatusOK {
				t.Fatalf("a request: %d %s", res.StatusCode, body)
			}
		}
	}
	usage := func(c parleyv1connect.OrganizationServiceClient, by parleyv1.UsageGrouping, team string) (*parleyv1.GetOrganizationUsageResponse, error) {
		res, err := c.GetOrganizationUsage(ctx, connect.NewRequest(&parleyv1.GetOrganizationUsageRequest{OrganizationId: o.orgID, GroupBy: by, TeamId: team}))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	var total *parleyv1.UsageBucket
	waitFor(t, 20*time.Second, "nine requests in the usage records", func() bool {
		res, err := usage(o.c, parleyv1.UsageGrouping_USAGE_GROUPING_UNSPECIFIED, "")
		if err != nil {
			t.Fatal(err)
		}
		total = res.GetTotal()
		return total.GetRequests() == 9
	})
	if total.GetCostNanos() <= 0 {
		t.Fatalf("the total: %v", total)
	}
	// Each grouping adds up to the same total, and says whose spend it is.
	sumBy := func(res *parleyv1.GetOrganizationUsageResponse, key func(*parleyv1.UsageBucket) string) map[string]int64 {
		m := map[string]int64{}
		var cost int64
		for _, b := range res.GetBuckets() {
			m[key(b)] += b.GetRequests()
			cost += b.GetCostNanos()
		}
		if cost != total.GetCostNanos() || res.GetTotal().GetCostNanos() != cost {
			t.Errorf("buckets cost %d, total %d, organisation %d", cost, res.GetTotal().GetCostNanos(), total.GetCostNanos())
		}
		return m
	}
	byKey, err := usage(o.c, parleyv1.UsageGrouping_USAGE_GROUPING_KEY, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := sumBy(byKey, (*parleyv1.UsageBucket).GetApiKeyId); got[ownerKeyID] != 2 || got[leadKeyID] != 3 || got[opsKeyID] != 4 {
		t.Errorf("requests per key: %v", got)
	}
	byTeam, err := usage(o.c, parleyv1.UsageGrouping_USAGE_GROUPING_TEAM, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := sumBy(byTeam, (*parleyv1.UsageBucket).GetTeamId); got[o.team] != 5 || got[opsTeam] != 4 {
		t.Errorf("requests per team: %v", got)
	}
	byMember, err := usage(o.c, parleyv1.UsageGrouping_USAGE_GROUPING_MEMBER, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := sumBy(byMember, (*parleyv1.UsageBucket).GetUserId); got[o.owner.User.GetUserId()] != 6 || got[lead.User.GetUserId()] != 3 {
		t.Errorf("requests per member: %v", got)
	}
	// A team admin reads its team's, not the organisation's or another team's.
	mine, err := usage(lc, parleyv1.UsageGrouping_USAGE_GROUPING_KEY, o.team)
	if err != nil {
		t.Fatalf("a team admin reads its team's usage: %v", err)
	}
	if mine.GetTotal().GetRequests() != 5 {
		t.Errorf("the team's usage: %v", mine.GetTotal())
	}
	_, err = usage(lc, parleyv1.UsageGrouping_USAGE_GROUPING_UNSPECIFIED, "")
	wantCode(t, "a team admin reads the organisation's usage", err, connect.CodePermissionDenied)
	_, err = usage(lc, parleyv1.UsageGrouping_USAGE_GROUPING_KEY, opsTeam)
	wantCode(t, "a team admin reads another team's usage", err, connect.CodeNotFound)
	if r, err := usage(s.orgClient(reader), parleyv1.UsageGrouping_USAGE_GROUPING_TEAM, ""); err != nil || r.GetTotal().GetRequests() != 9 {
		t.Errorf("a billing reader reads usage: %v %v", r, err)
	}
	_, err = usage(o.c, parleyv1.UsageGrouping(99), "")
	if fv := new(parleyv1.FieldViolation); connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, fv) || fv.GetField() != "group_by" {
		t.Errorf("an unknown grouping: %v", err)
	}

	// The CSV: the owner's cookie gets the key breakdown, line for line.
	csvPath := "/export/organizations/" + o.orgID + "/usage.csv?group_by=key"
	res, body := s.getRaw(t, csvPath, map[string]string{"Cookie": "Session_id=" + o.owner.Cookie})
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("the CSV: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV: %v\n%s", err, body)
	}
	if len(rows) != len(byKey.GetBuckets())+1 || rows[0][2] != "api_key_id" {
		t.Fatalf("the CSV has %d rows for %d buckets:\n%s", len(rows), len(byKey.GetBuckets()), body)
	}
	var csvCost int64
	for _, r := range rows[1:] {
		n, err := strconv.ParseInt(r[9], 10, 64)
		if err != nil {
			t.Fatalf("cost_nanos %q: %v", r[9], err)
		}
		csvCost += n
	}
	if csvCost != total.GetCostNanos() {
		t.Errorf("the CSV costs %d, the total %d", csvCost, total.GetCostNanos())
	}
	for name, c := range map[string]struct {
		path   string
		header map[string]string
		want   int
	}{
		"another organisation's owner": {csvPath, map[string]string{"Cookie": "Session_id=" + s.newAccount(t, "rival@example.com").Cookie}, http.StatusNotFound},
		"no session":                   {csvPath, nil, http.StatusUnauthorized},
		"the organisation's key":       {csvPath, map[string]string{"Authorization": "Bearer " + ownerKey}, http.StatusForbidden},
		"a bad date":                   {"/export/organizations/" + o.orgID + "/usage.csv?start_time=yesterday", map[string]string{"Cookie": "Session_id=" + o.owner.Cookie}, http.StatusBadRequest},
		"a bad grouping":               {"/export/organizations/" + o.orgID + "/usage.csv?group_by=colour", map[string]string{"Cookie": "Session_id=" + o.owner.Cookie}, http.StatusBadRequest},
	} {
		if res, body := s.getRaw(t, c.path, c.header); res.StatusCode != c.want {
			t.Errorf("the CSV for %s: %d %s", name, res.StatusCode, body)
		}
	}
}

// Invitation links: whoever holds one joins with its role and team, up to
// its uses, not after it is revoked, and only as the address it names.
func TestOrganizationInvitationLinks(t *testing.T) {
	s := startServer(t, fastAuth...)
	ctx := ctxTimeout(t, 60*time.Second)
	o := newOrgSetup(t, s, s.newAccount(t, "owner@example.com"), "Hooli")
	invite := func(c parleyv1connect.OrganizationServiceClient, req *parleyv1.CreateOrganizationInvitationRequest) (*parleyv1.CreateOrganizationInvitationResponse, error) {
		req.OrganizationId = o.orgID
		res, err := c.CreateOrganizationInvitation(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	inv, err := invite(o.c, &parleyv1.CreateOrganizationInvitationRequest{Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER,
		TeamId: o.team, MaxUses: 3})
	if err != nil {
		t.Fatalf("CreateOrganizationInvitation: %v", err)
	}
	if !strings.HasPrefix(inv.GetCode(), "oinv_") || !strings.HasPrefix(inv.GetCode(), inv.GetInvitation().GetPrefix()) {
		t.Fatalf("the code %q, prefix %q", inv.GetCode(), inv.GetInvitation().GetPrefix())
	}
	// The holder sees what it offers, then joins with the role and the team.
	joiner := s.newAccount(t, "joiner@example.com")
	jc := s.orgClient(joiner)
	offer, err := jc.GetOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.GetOrganizationInvitationRequest{Code: inv.GetCode()}))
	if err != nil || offer.Msg.GetOrganizationName() != "Hooli" || offer.Msg.GetTeamName() != "research" || offer.Msg.GetAlreadyMember() ||
		offer.Msg.GetRole() != parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER {
		t.Fatalf("GetOrganizationInvitation: %v %v", offer, err)
	}
	acc, err := jc.AcceptOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.AcceptOrganizationInvitationRequest{Code: inv.GetCode()}))
	if err != nil || acc.Msg.GetMembership().GetOrganization().GetOrganizationId() != o.orgID {
		t.Fatalf("AcceptOrganizationInvitation: %v %v", acc, err)
	}
	teams, err := jc.ListTeams(ctx, connect.NewRequest(&parleyv1.ListTeamsRequest{OrganizationId: o.orgID}))
	if err != nil || len(teams.Msg.GetTeams()) != 1 || teams.Msg.GetTeams()[0].GetTeamId() != o.team {
		t.Fatalf("the joiner's teams: %v %v", teams, err)
	}
	_, err = jc.AcceptOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.AcceptOrganizationInvitationRequest{Code: inv.GetCode()}))
	wantCode(t, "accepting twice", err, connect.CodeAlreadyExists)
	// Its own key works while it is a member; removed, the key goes with it.
	mk, err := jc.CreateOrganizationApiKey(ctx, connect.NewRequest(&parleyv1.CreateOrganizationApiKeyRequest{OrganizationId: o.orgID, Name: "mine"}))
	if err != nil {
		t.Fatalf("a member's own key: %v", err)
	}
	models := func() int {
		res, _ := s.getRaw(t, "/v1/models", map[string]string{"Authorization": "Bearer " + mk.Msg.GetSecret()})
		return res.StatusCode
	}
	if got := models(); got != http.StatusOK {
		t.Fatalf("a member's key: %d", got)
	}
	if _, err := o.c.RemoveMember(ctx, connect.NewRequest(&parleyv1.RemoveMemberRequest{OrganizationId: o.orgID, UserId: acc.Msg.GetMembership().GetOrganization().GetOrganizationId()})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("removing a user who is no member (the organisation's id): %v", err)
	}
	members, err := o.c.ListMembers(ctx, connect.NewRequest(&parleyv1.ListMembersRequest{OrganizationId: o.orgID}))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members.Msg.GetMembers() {
		if m.GetEmail() == joiner.Email {
			if _, err := o.c.RemoveMember(ctx, connect.NewRequest(&parleyv1.RemoveMemberRequest{OrganizationId: o.orgID, UserId: m.GetUserId()})); err != nil {
				t.Fatalf("RemoveMember: %v", err)
			}
		}
	}
	if got := models(); got != http.StatusUnauthorized {
		t.Fatalf("a removed member's key: %d", got)
	}
	// Back in through the link (a second use), for the race below to take the last.
	if _, err := jc.AcceptOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.AcceptOrganizationInvitationRequest{Code: inv.GetCode()})); err != nil {
		t.Fatalf("rejoining: %v", err)
	}
	// A member invites nobody; an admin invites no owner.
	_, err = invite(jc, &parleyv1.CreateOrganizationInvitationRequest{Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER})
	wantCode(t, "a member invites", err, connect.CodePermissionDenied)
	_, err = jc.ListOrganizationInvitations(ctx, connect.NewRequest(&parleyv1.ListOrganizationInvitationsRequest{OrganizationId: o.orgID}))
	wantCode(t, "a member lists invitations", err, connect.CodePermissionDenied)
	admin := s.newAccount(t, "admin@example.com")
	if _, err := o.c.AddMember(ctx, connect.NewRequest(&parleyv1.AddMemberRequest{OrganizationId: o.orgID, Email: admin.Email,
		Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_ADMIN})); err != nil {
		t.Fatal(err)
	}
	_, err = invite(s.orgClient(admin), &parleyv1.CreateOrganizationInvitationRequest{Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_OWNER})
	wantCode(t, "an admin invites an owner", err, connect.CodePermissionDenied)
	// Bad requests name their field; another organisation's team is not found.
	other := newOrgSetup(t, s, s.newAccount(t, "rival@example.com"), "Raviga")
	for field, req := range map[string]*parleyv1.CreateOrganizationInvitationRequest{
		"role":     {},
		"max_uses": {Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER, MaxUses: 5000},
		"email":    {Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER, Email: "not an address"},
		"ttl":      {Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER, Ttl: durationpb.New(40 * 24 * time.Hour)},
	} {
		_, err := invite(o.c, req)
		if fv := new(parleyv1.FieldViolation); connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, fv) || fv.GetField() != field {
			t.Errorf("a bad %s: %v", field, err)
		}
	}
	_, err = invite(o.c, &parleyv1.CreateOrganizationInvitationRequest{Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER, TeamId: other.team})
	wantCode(t, "another organisation's team", err, connect.CodeNotFound)

	// Three uses: of four racing for the third, one joins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[connect.Code]int{}
	for i := range 4 {
		c := s.orgClient(s.newAccount(t, fmt.Sprintf("racer%d@example.com", i)))
		wg.Go(func() {
			_, err := c.AcceptOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.AcceptOrganizationInvitationRequest{Code: inv.GetCode()}))
			mu.Lock()
			if err == nil {
				codes[0]++
			} else {
				codes[connect.CodeOf(err)]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[0] != 1 || codes[connect.CodeFailedPrecondition] != 3 {
		t.Fatalf("four racing for the last use: %v", codes)
	}
	// For one address only.
	named, err := invite(o.c, &parleyv1.CreateOrganizationInvitationRequest{Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_BILLING_READER, Email: "Auditor@Example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.orgClient(s.newAccount(t, "impostor@example.com")).AcceptOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.AcceptOrganizationInvitationRequest{Code: named.GetCode()}))
	wantCode(t, "another address", err, connect.CodeFailedPrecondition)
	auditor := s.newAccount(t, "auditor@example.com")
	if _, err := s.orgClient(auditor).AcceptOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.AcceptOrganizationInvitationRequest{Code: named.GetCode()})); err != nil {
		t.Fatalf("the named address: %v", err)
	}
	// Revoked: nobody else joins; another organisation cannot revoke it.
	open, err := invite(o.c, &parleyv1.CreateOrganizationInvitationRequest{Role: parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER, MaxUses: 10})
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.c.RevokeOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.RevokeOrganizationInvitationRequest{OrganizationId: other.orgID, InvitationId: open.GetInvitation().GetInvitationId()}))
	wantCode(t, "another organisation revokes", err, connect.CodeNotFound)
	if _, err := o.c.RevokeOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.RevokeOrganizationInvitationRequest{OrganizationId: o.orgID, InvitationId: open.GetInvitation().GetInvitationId()})); err != nil {
		t.Fatal(err)
	}
	late := s.orgClient(s.newAccount(t, "late@example.com"))
	_, err = late.AcceptOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.AcceptOrganizationInvitationRequest{Code: open.GetCode()}))
	wantCode(t, "a revoked link", err, connect.CodeFailedPrecondition)
	for _, code := range []string{"oinv_" + strings.Repeat("A", 43), "inv_nope", strings.Repeat("x", 10000)} {
		_, err = late.GetOrganizationInvitation(ctx, connect.NewRequest(&parleyv1.GetOrganizationInvitationRequest{Code: code}))
		wantCode(t, "a made-up code", err, connect.CodeNotFound)
	}
	list, err := o.c.ListOrganizationInvitations(ctx, connect.NewRequest(&parleyv1.ListOrganizationInvitationsRequest{OrganizationId: o.orgID}))
	if err != nil || len(list.Msg.GetInvitations()) != 3 || list.Msg.GetInvitations()[0].GetRevokeTime() == nil || list.Msg.GetInvitations()[2].GetUses() != 3 {
		t.Fatalf("ListOrganizationInvitations: %v %v", list, err)
	}
	log, err := o.c.ListOrganizationAuditEvents(ctx, connect.NewRequest(&parleyv1.ListOrganizationAuditEventsRequest{OrganizationId: o.orgID, PageSize: 200}))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range log.Msg.GetEvents() {
		kinds[e.GetKind()]++
	}
	if kinds["org_invitation_created"] != 3 || kinds["org_invitation_accepted"] != 4 || kinds["org_invitation_revoked"] != 1 {
		t.Fatalf("the audit log: %v", kinds)
	}
}

// Behind a trusted reverse proxy the allow-list reads the client's address
// from X-Forwarded-For: what the proxy appended, not what the client wrote.
func TestOrganizationKeyAllowListBehindProxy(t *testing.T) {
	s := startServer(t, append([]string{"--trusted-proxies", "127.0.0.1/32,::1"}, fastAuth...)...)
	o := newOrgSetup(t, s, s.newAccount(t, "owner@example.com"), "Proxied")
	s.admin(t, "org-topup", "--org", o.orgID, "--usd", "1")
	key, _ := o.key(t, &parleyv1.CreateOrganizationApiKeyRequest{TeamId: o.team, Name: "office only", AllowedIps: []string{"10.0.0.0/8"}})
	for _, c := range []struct {
		xff  string
		want int
	}{
		{"10.1.2.3", http.StatusOK},                   // the proxy saw the office
		{"10.1.2.3, 192.0.2.1", http.StatusForbidden}, // the client wrote the office; the proxy saw 192.0.2.1
		{"", http.StatusForbidden},                    // no header: the proxy itself, outside the list
	} {
		h := map[string]string{"Authorization": "Bearer " + key}
		if c.xff != "" {
			h["X-Forwarded-For"] = c.xff
		}
		res, body := s.postRaw(t, "/v1/chat/completions", `{"model":"sim-small","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`, h)
		if res.StatusCode != c.want {
			t.Errorf("X-Forwarded-For %q: %d %s", c.xff, res.StatusCode, body)
		}
	}
}
