package e2e

import (
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
)

// The `user` a caller names in a request is on its usage record, and usage
// lists per end user: the account's own ListUsage, AdminService.ListUsage
// (admins only) and `parley admin usage`.
func TestUsagePerEndUser(t *testing.T) { usagePerEndUser(t, startServer(t, fastAuth...)) }

// The same in scale mode: PostgreSQL, and ClickHouse for usage when
// PARLEY_TEST_CLICKHOUSE_URL is set (its shared database may hold a table of
// an older schema, which the gateway migrates at start).
func TestScaleUsagePerEndUser(t *testing.T) {
	scaleMode(t)
	usagePerEndUser(t, startServer(t, fastAuth...))
}

func usagePerEndUser(t *testing.T, s *server) {
	s.admin(t, "create-user", "--email", "ops@example.com", "--password", "ops password", "--admin")
	a := s.newAccount(t, "reseller@example.com")
	s.topup(t, a, "10")
	c := s.api(protocols[1], cred{bearer: a.Key})
	ctx := ctxTimeout(t, 60*time.Second)
	for _, user := range []string{"alice", "bob", "alice", ""} {
		_, err := c.Chat.Complete(ctx, connect.NewRequest(&parleyv1.CompleteRequest{
			Model: "sim-small", Messages: userText("Hello."), MaxOutputTokens: 5, User: user,
		}))
		if err != nil {
			t.Fatalf("Complete as %q: %v", user, err)
		}
	}
	all := usageOf(t, c, 4) // waits for the asynchronous writes
	ends := map[string]int{}
	for _, r := range all {
		ends[r.GetUser()]++
	}
	if ends["alice"] != 2 || ends["bob"] != 1 || ends[""] != 1 {
		t.Fatalf("end users of the records: %v", ends)
	}

	// The account's own list, filtered; paged, with the token bound to the filter.
	listUsage := func(req *parleyv1.ListUsageRequest) (*parleyv1.ListUsageResponse, error) {
		res, err := c.Billing.ListUsage(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	alice, err := listUsage(&parleyv1.ListUsageRequest{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(alice.GetUsageRecords()) != 2 || alice.GetNextPageToken() != "" {
		t.Fatalf("alice's records: %v", alice)
	}
	for _, r := range alice.GetUsageRecords() {
		if r.GetUser() != "alice" {
			t.Fatalf("record %s of user %q in alice's list", r.GetRequestId(), r.GetUser())
		}
	}
	first, err := listUsage(&parleyv1.ListUsageRequest{User: "alice", PageSize: 1})
	if err != nil || len(first.GetUsageRecords()) != 1 || first.GetNextPageToken() == "" {
		t.Fatalf("first page of alice's: %v %v", first, err)
	}
	second, err := listUsage(&parleyv1.ListUsageRequest{User: "alice", PageSize: 1, PageToken: first.GetNextPageToken()})
	if err != nil || len(second.GetUsageRecords()) != 1 || second.GetNextPageToken() != "" ||
		second.GetUsageRecords()[0].GetRequestId() == first.GetUsageRecords()[0].GetRequestId() ||
		second.GetUsageRecords()[0].GetUser() != "alice" {
		t.Fatalf("second page of alice's: %v %v", second, err)
	}
	for _, other := range []string{"bob", ""} {
		_, err = listUsage(&parleyv1.ListUsageRequest{User: other, PageSize: 1, PageToken: first.GetNextPageToken()})
		wantCode(t, "alice's page token with user "+other, err, connect.CodeInvalidArgument)
	}
	_, err = listUsage(&parleyv1.ListUsageRequest{User: strings.Repeat("u", 257)})
	var fv parleyv1.FieldViolation
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, &fv) || fv.GetField() != "user" {
		t.Fatalf("257-byte user: %v (field %q), want invalid_argument naming user", err, fv.GetField())
	}
	if none, err := listUsage(&parleyv1.ListUsageRequest{User: "carol"}); err != nil || len(none.GetUsageRecords()) != 0 {
		t.Fatalf("carol's records: %v %v", none, err)
	}

	// An admin lists the account's records of one end user.
	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "ops@example.com", Password: "ops password"}))
	if err != nil {
		t.Fatal(err)
	}
	ops := s.clients(protocols[0], cred{cookie: sessionCookie(t, in.Header())})
	adminList := func(cl clients, req *parleyv1.AdminServiceListUsageRequest) (*parleyv1.AdminServiceListUsageResponse, error) {
		res, err := cl.Admin.ListUsage(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	bob, err := adminList(ops, &parleyv1.AdminServiceListUsageRequest{UserId: a.User.GetUserId(), EndUser: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bob.GetUsageRecords()) != 1 || bob.GetUsageRecords()[0].GetUser() != "bob" {
		t.Fatalf("bob's records: %v", bob)
	}
	every, err := adminList(ops, &parleyv1.AdminServiceListUsageRequest{UserId: a.User.GetUserId(), PageSize: 3})
	if err != nil || len(every.GetUsageRecords()) != 3 || every.GetNextPageToken() == "" {
		t.Fatalf("first page of every record: %v %v", every, err)
	}
	rest, err := adminList(ops, &parleyv1.AdminServiceListUsageRequest{UserId: a.User.GetUserId(), PageSize: 3, PageToken: every.GetNextPageToken()})
	if err != nil || len(rest.GetUsageRecords()) != 1 || rest.GetNextPageToken() != "" {
		t.Fatalf("second page of every record: %v %v", rest, err)
	}
	_, err = adminList(ops, &parleyv1.AdminServiceListUsageRequest{UserId: a.User.GetUserId(), EndUser: "bob", PageSize: 3, PageToken: every.GetNextPageToken()})
	wantCode(t, "admin page token with another filter", err, connect.CodeInvalidArgument)
	// No user_id: every user's records, the filter kept. (In scale mode the
	// ClickHouse database is shared: other runs' bobs may be listed too.)
	anyBob, err := adminList(ops, &parleyv1.AdminServiceListUsageRequest{EndUser: "bob", PageSize: 200})
	if err != nil {
		t.Fatal(err)
	}
	ours := 0
	for _, r := range anyBob.GetUsageRecords() {
		if r.GetUser() != "bob" {
			t.Fatalf("every user's bob records hold %v", r)
		}
		if r.GetUserId() == a.User.GetUserId() {
			ours++
		}
	}
	if ours != 1 {
		t.Fatalf("every user's bob records: %d of the account's, want 1", ours)
	}
	_, err = adminList(ops, &parleyv1.AdminServiceListUsageRequest{UserId: a.User.GetUserId(), EndUser: strings.Repeat("u", 257)})
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !detailOf(err, &fv) || fv.GetField() != "end_user" {
		t.Fatalf("257-byte end_user: %v (field %q), want invalid_argument naming end_user", err, fv.GetField())
	}
	// Not for the account itself, by session or key.
	for _, channel := range []string{"session", "key"} {
		_, err = adminList(s.as(protocols[0], a, channel), &parleyv1.AdminServiceListUsageRequest{UserId: a.User.GetUserId(), EndUser: "bob"})
		wantCode(t, "AdminService.ListUsage as the user's "+channel, err, connect.CodePermissionDenied)
	}

	// The CLI prints one line per record.
	out := strings.TrimSpace(s.admin(t, "usage", "--email", a.Email, "--end-user", "alice"))
	lines := strings.Split(out, "\n")
	if len(lines) != 2 {
		t.Fatalf("parley admin usage --end-user alice printed:\n%s", out)
	}
	for _, l := range lines {
		if !strings.Contains(l, `user="alice"`) || !strings.Contains(l, "model=sim-small") {
			t.Fatalf("line %q", l)
		}
	}
	if out := strings.TrimSpace(s.admin(t, "usage", "--email", a.Email, "--limit", "3")); strings.Count(out, "\n") != 2 {
		t.Fatalf("parley admin usage --limit 3 printed:\n%s", out)
	}
}
