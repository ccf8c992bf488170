package e2e

import (
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// The admin page's recent usage: AdminService.ListUsage without a user_id
// lists every user's records, newest first, paged, with the accounts'
// emails; the end-user filter still applies; a non-admin is refused.
func TestAdminRecentUsageOfAllUsers(t *testing.T) {
	s := startServer(t, fastAuth...)
	s.admin(t, "create-user", "--email", "ops@example.com", "--password", "ops password", "--admin")
	ctx := ctxTimeout(t, 60*time.Second)
	// Three accounts, two requests each, alternating so their records interleave.
	var accts []*account
	for _, e := range []string{"ann@example.com", "ben@example.com", "cy@example.com"} {
		a := s.newAccount(t, e)
		s.topup(t, a, "1")
		accts = append(accts, a)
	}
	for round := range 2 {
		for i, a := range accts {
			end := ""
			if i == 1 && round == 1 {
				end = "ben-customer"
			}
			if _, err := s.api(protocols[1], cred{bearer: a.Key}).Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{
				Model: "sim-small", Messages: userText("Hello."), MaxOutputTokens: 3, User: end,
			})); err != nil {
				t.Fatalf("Complete as %s: %v", a.Email, err)
			}
		}
	}
	for _, a := range accts {
		usageOf(t, s.api(protocols[1], cred{bearer: a.Key}), 2) // waits for the asynchronous writes
	}

	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "ops@example.com", Password: "ops password"}))
	if err != nil {
		t.Fatal(err)
	}
	ops := s.clients(protocols[0], cred{cookie: sessionCookie(t, in.Header())})
	emailOf := map[string]string{}
	for _, a := range accts {
		emailOf[a.User.GetUserId()] = a.Email
	}

	// Paged by 4: 4 + 2 records, newest first, each page's emails given.
	var recs []*parleyv1.UsageRecord
	token, pages := "", 0
	for range 5 {
		res, err := ops.Admin.ListUsage(ctx, connect.NewRequest(&parleyv1.AdminServiceListUsageRequest{PageSize: 4, PageToken: token}))
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range res.Msg.GetUsageRecords() {
			if got := res.Msg.GetUserEmails()[r.GetUserId()]; got != emailOf[r.GetUserId()] {
				t.Fatalf("record %s of user %q: email %q, want %q", r.GetRequestId(), r.GetUserId(), got, emailOf[r.GetUserId()])
			}
		}
		recs = append(recs, res.Msg.GetUsageRecords()...)
		if token = res.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(recs) != 6 || pages != 2 {
		t.Fatalf("listed %d records in %d pages, want 6 in 2", len(recs), pages)
	}
	perUser := map[string]int{}
	for i, r := range recs {
		perUser[r.GetUserId()]++
		if i > 0 && recs[i-1].GetCreatedAt().AsTime().Before(r.GetCreatedAt().AsTime()) {
			t.Fatalf("records %d and %d not newest first", i-1, i)
		}
		if r.GetModel() != "sim-small" || r.GetUsage().GetCompletionTokens() == 0 || r.GetCostNanos() <= 0 {
			t.Fatalf("record %v", r)
		}
	}
	for _, a := range accts {
		if perUser[a.User.GetUserId()] != 2 {
			t.Fatalf("records per user: %v", perUser)
		}
	}
	// The newest record is cy's second request (the last made).
	if recs[0].GetUserId() != accts[2].User.GetUserId() {
		t.Fatalf("newest record is %s's, want cy's", emailOf[recs[0].GetUserId()])
	}

	// The filter across users; a token of the unfiltered list is refused with it.
	res, err := ops.Admin.ListUsage(ctx, connect.NewRequest(&parleyv1.AdminServiceListUsageRequest{EndUser: "ben-customer"}))
	if err != nil || len(res.Msg.GetUsageRecords()) != 1 || res.Msg.GetUsageRecords()[0].GetUserId() != accts[1].User.GetUserId() {
		t.Fatalf("every user's ben-customer records: %v %v", res, err)
	}
	first, err := ops.Admin.ListUsage(ctx, connect.NewRequest(&parleyv1.AdminServiceListUsageRequest{PageSize: 1}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ops.Admin.ListUsage(ctx, connect.NewRequest(&parleyv1.AdminServiceListUsageRequest{UserId: accts[0].User.GetUserId(), PageSize: 1, PageToken: first.Msg.GetNextPageToken()}))
	wantCode(t, "all-users page token with a user_id", err, connect.CodeInvalidArgument)

	// A non-admin is refused, by session and by key.
	for _, channel := range []string{"session", "key"} {
		_, err = s.as(protocols[0], accts[0], channel).Admin.ListUsage(ctx, connect.NewRequest(&parleyv1.AdminServiceListUsageRequest{}))
		wantCode(t, "every user's usage as a non-admin's "+channel, err, connect.CodePermissionDenied)
	}
}
