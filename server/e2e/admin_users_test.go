package e2e

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// The admin page's RPCs: find users by email prefix (paged, with balances),
// top up with a reason that lands in the audit log (as the CLI's top-up
// does), grant and take away the admin flag (applied at once).
func TestAdminUsersAndAudit(t *testing.T) {
	s := startServer(t, fastAuth...)
	s.admin(t, "create-user", "--email", "ops@example.com", "--password", "ops password", "--admin")
	var users []*account
	for _, e := range []string{"pat@example.com", "pam@example.com", "paul@example.org", "zoe@example.com"} {
		users = append(users, s.newAccount(t, e))
	}
	pat := users[0]
	ctx := ctxTimeout(t, 30*time.Second)
	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "ops@example.com", Password: "ops password"}))
	if err != nil {
		t.Fatal(err)
	}
	opsID := in.Msg.GetUser().GetUserId()
	ops := s.clients(protocols[0], cred{cookie: sessionCookie(t, in.Header())})

	// Top-ups: the RPC's with a reason, the CLI's.
	if _, err := ops.Admin.AdjustBalance(ctx, connect.NewRequest(&parleyv1.AdjustBalanceRequest{Email: pat.Email, DeltaNanos: 2_500_000_000, Reason: "welcome credit"})); err != nil {
		t.Fatal(err)
	}
	s.topup(t, pat, "1.5")

	// Search by prefix, any case, paged, with balances.
	var found []*parleyv1.AdminUser
	token := ""
	for range 5 {
		res, err := ops.Admin.SearchUsers(ctx, connect.NewRequest(&parleyv1.SearchUsersRequest{EmailPrefix: "PA", PageSize: 2, PageToken: token}))
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, res.Msg.GetUsers()...)
		if token = res.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	var emails []string
	for _, u := range found {
		emails = append(emails, u.GetUser().GetEmail())
	}
	if !slices.Equal(emails, []string{"pam@example.com", "pat@example.com", "paul@example.org"}) {
		t.Fatalf("prefix PA: %v", emails)
	}
	if found[1].GetBalanceNanos() != 4_000_000_000 || found[0].GetBalanceNanos() != 0 || found[1].GetUser().GetUserId() != pat.User.GetUserId() {
		t.Fatalf("balances %v", found)
	}
	all, err := ops.Admin.SearchUsers(ctx, connect.NewRequest(&parleyv1.SearchUsersRequest{}))
	if err != nil || len(all.Msg.GetUsers()) != 5 {
		t.Fatalf("all users: %v %v", all, err)
	}

	// Both top-ups are in pat's audit log, newest first.
	ev, err := ops.Admin.ListAuditEvents(ctx, connect.NewRequest(&parleyv1.ListAuditEventsRequest{UserId: pat.User.GetUserId()}))
	if err != nil {
		t.Fatal(err)
	}
	var adj []map[string]string
	for _, e := range ev.Msg.GetEvents() {
		if e.GetKind() == "balance_adjusted" {
			var d map[string]string
			if err := json.Unmarshal([]byte(e.GetDetail()), &d); err != nil {
				t.Fatal(err)
			}
			adj = append(adj, d)
		}
	}
	want := []map[string]string{
		{"by": "cli", "delta_nanos": "1500000000", "reason": "admin topup", "balance_nanos": "4000000000"},
		{"by": opsID, "delta_nanos": "2500000000", "reason": "welcome credit", "balance_nanos": "2500000000"},
	}
	if len(adj) != 2 || !maps.Equal(adj[0], want[0]) || !maps.Equal(adj[1], want[1]) {
		t.Fatalf("balance events %v, want %v (all: %v)", adj, want, ev.Msg.GetEvents())
	}

	// The admin flag: granted, it works at once; taken away, likewise.
	patc := s.clients(protocols[0], cred{cookie: pat.Cookie})
	_, err = patc.Admin.ListWorkers(ctx, connect.NewRequest(&parleyv1.ListWorkersRequest{}))
	wantCode(t, "ListWorkers before the grant", err, connect.CodePermissionDenied)
	if res, err := ops.Admin.SetUserAdmin(ctx, connect.NewRequest(&parleyv1.SetUserAdminRequest{Email: pat.Email, Admin: true})); err != nil || !res.Msg.GetUser().GetAdmin() {
		t.Fatalf("grant: %v %v", res, err)
	}
	if _, err := patc.Admin.ListWorkers(ctx, connect.NewRequest(&parleyv1.ListWorkersRequest{})); err != nil {
		t.Fatalf("ListWorkers after the grant: %v", err)
	}
	if _, err := ops.Admin.SetUserAdmin(ctx, connect.NewRequest(&parleyv1.SetUserAdminRequest{UserId: pat.User.GetUserId(), Admin: false})); err != nil {
		t.Fatal(err)
	}
	_, err = patc.Admin.SearchUsers(ctx, connect.NewRequest(&parleyv1.SearchUsersRequest{}))
	wantCode(t, "SearchUsers after the flag was taken", err, connect.CodePermissionDenied)
	_, err = ops.Admin.SetUserAdmin(ctx, connect.NewRequest(&parleyv1.SetUserAdminRequest{UserId: opsID, Admin: false}))
	wantCode(t, "taking away one's own flag", err, connect.CodeFailedPrecondition)
	ev, err = ops.Admin.ListAuditEvents(ctx, connect.NewRequest(&parleyv1.ListAuditEventsRequest{UserId: pat.User.GetUserId(), PageSize: 2}))
	if err != nil || len(ev.Msg.GetEvents()) != 2 || ev.Msg.GetEvents()[0].GetKind() != "admin_changed" || ev.Msg.GetNextPageToken() == "" {
		t.Fatalf("audit after the flag changes: %v %v", ev, err)
	}

	// Bad input names its field; users are refused.
	_, err = ops.Admin.ListAuditEvents(ctx, connect.NewRequest(&parleyv1.ListAuditEventsRequest{}))
	wantCode(t, "ListAuditEvents without user_id", err, connect.CodeInvalidArgument)
	_, err = ops.Admin.SearchUsers(ctx, connect.NewRequest(&parleyv1.SearchUsersRequest{EmailPrefix: "pa", PageToken: token + "x"}))
	wantCode(t, "a bad page token", err, connect.CodeInvalidArgument)
	_, err = ops.Admin.SetUserAdmin(ctx, connect.NewRequest(&parleyv1.SetUserAdminRequest{Admin: true}))
	wantCode(t, "SetUserAdmin of nobody", err, connect.CodeInvalidArgument)
	_, err = s.clients(protocols[0], cred{bearer: users[3].Key}).Admin.ListAuditEvents(ctx, connect.NewRequest(&parleyv1.ListAuditEventsRequest{UserId: pat.User.GetUserId()}))
	wantCode(t, "ListAuditEvents as a user", err, connect.CodePermissionDenied)
}
