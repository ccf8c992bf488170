package e2e

import (
	"fmt"
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

// The sign-up policy (--signup), against the real binary: closed refuses
// every sign-up, invite needs a code with a use left (taken in the
// transaction that makes the user, so one single-use code makes one
// account however many sign-ups race for it), and --signup-rate-global
// holds across client addresses. A refused sign-up leaves no user.

// signUpReq is a sign-up of email with a code.
func signUpReq(email, code string) *connect.Request[parleyv1.SignUpRequest] {
	return connect.NewRequest(&parleyv1.SignUpRequest{Email: email, Password: "correct horse", InvitationCode: code})
}

// opsAdmin makes an admin with the CLI and returns its clients.
func (s *server) opsAdmin(t *testing.T) clients {
	t.Helper()
	s.admin(t, "create-user", "--email", "ops@example.com", "--password", "ops password", "--admin")
	in, err := s.clients(protocols[0], cred{}).Auth.Login(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.LoginRequest{Email: "ops@example.com", Password: "ops password"}))
	if err != nil {
		t.Fatal(err)
	}
	return s.clients(protocols[0], cred{cookie: sessionCookie(t, in.Header())})
}

// userEmails are every user's email, as the admin's SearchUsers lists them.
func userEmails(t *testing.T, ops clients) []string {
	t.Helper()
	res, err := ops.Admin.SearchUsers(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.SearchUsersRequest{PageSize: 200}))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range res.Msg.GetUsers() {
		out = append(out, u.GetUser().GetEmail())
	}
	return out
}

// wantPolicyRefusal checks a sign-up was refused by the policy: permission
// denied, naming the policy, and (for a code) naming invitation_code and
// saying why.
func wantPolicyRefusal(t *testing.T, what string, err error, policy, why string) {
	t.Helper()
	wantCode(t, what, err, connect.CodePermissionDenied)
	if msg := err.Error(); !strings.Contains(msg, "sign-up policy: "+policy) || !strings.Contains(msg, why) {
		t.Fatalf("%s: %q does not name the policy %s and say %q", what, msg, policy, why)
	}
	if policy == "invite" {
		var fv parleyv1.FieldViolation
		if !apierr.Detail(err, &fv) || fv.GetField() != "invitation_code" {
			t.Fatalf("%s: no FieldViolation naming invitation_code in %v", what, err)
		}
	}
}

func policyOf(t *testing.T, s *server) parleyv1.SignUpPolicy {
	t.Helper()
	res, err := s.clients(protocols[1], cred{}).Auth.GetSignUpPolicy(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.GetSignUpPolicyRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	return res.Msg.GetPolicy()
}

func TestSignUpClosed(t *testing.T) {
	s := startServer(t, append([]string{"--signup", "closed"}, fastAuth...)...)
	if p := policyOf(t, s); p != parleyv1.SignUpPolicy_SIGN_UP_POLICY_CLOSED {
		t.Fatalf("GetSignUpPolicy: %v", p)
	}
	ctx := ctxTimeout(t, 20*time.Second)
	for _, p := range protocols {
		_, err := s.clients(p, cred{}).Auth.SignUp(ctx, signUpReq(p.name+"@example.com", ""))
		wantPolicyRefusal(t, p.name+": sign-up while closed", err, "closed", "sign-up is closed")
	}
	// An operator still makes accounts; nothing of the refused ones exists.
	ops := s.opsAdmin(t)
	if got := userEmails(t, ops); len(got) != 1 || got[0] != "ops@example.com" {
		t.Fatalf("users after refused sign-ups: %v", got)
	}
	if _, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "connect@example.com", Password: "correct horse"})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("login as a refused sign-up: %v", err)
	}
}

func TestSignUpInvite(t *testing.T) {
	s := startServer(t, append([]string{"--signup", "invite"}, fastAuth...)...)
	if p := policyOf(t, s); p != parleyv1.SignUpPolicy_SIGN_UP_POLICY_INVITE {
		t.Fatalf("GetSignUpPolicy: %v", p)
	}
	ctx := ctxTimeout(t, 60*time.Second)
	anon := s.clients(protocols[0], cred{})
	ops := s.opsAdmin(t)

	// No code, a malformed one, an unknown one: refused.
	_, err := anon.Auth.SignUp(ctx, signUpReq("none@example.com", ""))
	wantPolicyRefusal(t, "no code", err, "invite", "invitation_code is required")
	_, err = anon.Auth.SignUp(ctx, signUpReq("bad@example.com", "inv_nonsense"))
	wantPolicyRefusal(t, "malformed code", err, "invite", "no such invitation")
	_, err = anon.Auth.SignUp(ctx, signUpReq("bad@example.com", "inv_"+strings.Repeat("A", 43)))
	wantPolicyRefusal(t, "unknown code", err, "invite", "no such invitation")
	_, err = anon.Auth.SignUp(ctx, signUpReq("long@example.com", strings.Repeat("x", 200)))
	wantCode(t, "a 200-byte code", err, connect.CodeInvalidArgument)

	// A code from the CLI makes one account, on the free tier; then it is used up.
	code := strings.TrimSpace(s.admin(t, "create-invite", "--note", "for ada"))
	if !strings.HasPrefix(code, "inv_") || len(code) != 47 {
		t.Fatalf("create-invite printed %q", code)
	}
	res, err := anon.Auth.SignUp(ctx, signUpReq("ada@example.com", " "+code+" "))
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Msg.GetUser(); u.GetTier() != parleyv1.Tier_TIER_FREE || u.GetEmail() != "ada@example.com" {
		t.Fatalf("invited user %v", u)
	}
	if _, err := s.clients(protocols[0], cred{cookie: sessionCookie(t, res.Header())}).Auth.GetMe(ctx, connect.NewRequest(&parleyv1.GetMeRequest{})); err != nil {
		t.Fatalf("the invited user's session: %v", err)
	}
	_, err = s.clients(protocols[1], cred{}).Auth.SignUp(ctx, signUpReq("eve@example.com", code))
	wantPolicyRefusal(t, "used code", err, "invite", "used up")

	// A code from the RPC, revoked before use: refused.
	made, err := ops.Admin.CreateInvitation(ctx, connect.NewRequest(&parleyv1.CreateInvitationRequest{MaxUses: 2, Ttl: durationpb.New(time.Hour), Note: "for bob"}))
	if err != nil {
		t.Fatal(err)
	}
	inv := made.Msg.GetInvitation()
	if inv.GetMaxUses() != 2 || inv.GetUses() != 0 || inv.GetPrefix() != made.Msg.GetCode()[:12] || inv.GetNote() != "for bob" ||
		inv.GetExpiresAt().AsTime().Sub(inv.GetCreatedAt().AsTime()) != time.Hour || inv.GetRevokedAt() != nil {
		t.Fatalf("CreateInvitation: %v", made.Msg)
	}
	rev, err := ops.Admin.RevokeInvitation(ctx, connect.NewRequest(&parleyv1.RevokeInvitationRequest{InvitationId: inv.GetInvitationId()}))
	if err != nil || rev.Msg.GetInvitation().GetRevokedAt() == nil {
		t.Fatalf("RevokeInvitation: %v %v", rev, err)
	}
	_, err = anon.Auth.SignUp(ctx, signUpReq("bob@example.com", made.Msg.GetCode()))
	wantPolicyRefusal(t, "revoked code", err, "invite", "revoked")

	// The CLI revokes too, and lists what the RPC lists.
	spare := strings.TrimSpace(s.admin(t, "create-invite", "--uses", "3", "--ttl", "2h"))
	list, err := ops.Admin.ListInvitations(ctx, connect.NewRequest(&parleyv1.ListInvitationsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	invs := list.Msg.GetInvitations()
	if len(invs) != 3 || invs[0].GetPrefix() != spare[:12] || invs[0].GetCreatedBy() != "cli" || invs[0].GetMaxUses() != 3 ||
		invs[1].GetCreatedBy() != ops.userID(t) || invs[2].GetUses() != 1 || invs[2].GetLastUsedAt() == nil || invs[2].GetNote() != "for ada" {
		t.Fatalf("ListInvitations: %v", invs)
	}
	out := s.admin(t, "revoke-invite", "--id", invs[0].GetInvitationId())
	if !strings.Contains(out, "revoked invitation "+invs[0].GetInvitationId()) {
		t.Fatalf("revoke-invite printed %q", out)
	}
	lines := strings.Split(strings.TrimSpace(s.admin(t, "list-invites")), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], " 0/3 revoked ") || !strings.Contains(lines[2], ` 1/1 used up `) || !strings.Contains(lines[2], `"for ada"`) {
		t.Fatalf("list-invites:\n%s", strings.Join(lines, "\n"))
	}
	_, err = anon.Auth.SignUp(ctx, signUpReq("carol@example.com", spare))
	wantPolicyRefusal(t, "code revoked by the CLI", err, "invite", "revoked")

	// Concurrent sign-ups with one single-use code: exactly one account.
	race, err := ops.Admin.CreateInvitation(ctx, connect.NewRequest(&parleyv1.CreateInvitationRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.clients(protocols[i%2], cred{}).Auth.SignUp(ctx, signUpReq(fmt.Sprintf("racer%d@example.com", i), race.Msg.GetCode()))
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		if err == nil {
			won++
			continue
		}
		wantPolicyRefusal(t, fmt.Sprintf("racer %d", i), err, "invite", "used up")
	}
	if won != 1 {
		t.Fatalf("%d racing sign-ups with one single-use code succeeded, want 1", won)
	}

	// Every refused sign-up left nothing: the admin, ada and one racer.
	emails := userEmails(t, ops)
	racers := 0
	for _, e := range emails {
		if strings.HasPrefix(e, "racer") {
			racers++
		}
	}
	if len(emails) != 3 || racers != 1 {
		t.Fatalf("users: %v", emails)
	}

	// The admin RPCs' bad inputs name the field; others may not call them.
	for _, tc := range []struct {
		req   *parleyv1.CreateInvitationRequest
		field string
	}{
		{&parleyv1.CreateInvitationRequest{MaxUses: -1}, "max_uses"},
		{&parleyv1.CreateInvitationRequest{MaxUses: 10_001}, "max_uses"},
		{&parleyv1.CreateInvitationRequest{Ttl: durationpb.New(400 * 24 * time.Hour)}, "ttl"},
		{&parleyv1.CreateInvitationRequest{Ttl: durationpb.New(-time.Hour)}, "ttl"},
		{&parleyv1.CreateInvitationRequest{Note: strings.Repeat("n", 201)}, "note"},
	} {
		_, err := ops.Admin.CreateInvitation(ctx, connect.NewRequest(tc.req))
		wantField(t, "CreateInvitation", err, connect.CodeInvalidArgument, tc.field)
	}
	_, err = ops.Admin.RevokeInvitation(ctx, connect.NewRequest(&parleyv1.RevokeInvitationRequest{}))
	wantField(t, "RevokeInvitation without an id", err, connect.CodeInvalidArgument, "invitation_id")
	_, err = ops.Admin.RevokeInvitation(ctx, connect.NewRequest(&parleyv1.RevokeInvitationRequest{InvitationId: "01900000-0000-7000-8000-000000000000"}))
	wantCode(t, "RevokeInvitation of nothing", err, connect.CodeNotFound)
	ada, err := anon.Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "ada@example.com", Password: "correct horse"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.clients(protocols[0], cred{cookie: sessionCookie(t, ada.Header())}).Admin.CreateInvitation(ctx, connect.NewRequest(&parleyv1.CreateInvitationRequest{}))
	wantCode(t, "CreateInvitation by a non-admin", err, connect.CodePermissionDenied)
}

// userID is the id of the user these clients' session is of.
func (c clients) userID(t *testing.T) string {
	t.Helper()
	me, err := c.Auth.GetMe(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.GetMeRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	return me.Msg.GetUser().GetUserId()
}

// --signup-rate-global holds across client addresses (distinct loopback
// sources: the gateway trusts no forwarded-for header), each well under
// its own --login-rate; and under open a code is ignored.
func TestSignUpRateGlobal(t *testing.T) {
	s := startServer(t, "--login-rate", "10000", "--signup-rate-global", "3")
	if p := policyOf(t, s); p != parleyv1.SignUpPolicy_SIGN_UP_POLICY_OPEN {
		t.Fatalf("GetSignUpPolicy: %v", p)
	}
	ctx := ctxTimeout(t, 20*time.Second)
	from := func(ip string) parleyv1connect.AuthServiceClient {
		return parleyv1connect.NewAuthServiceClient(fromAddr(ip), s.BaseURL)
	}
	for i := range 3 {
		ip := fmt.Sprintf("127.0.0.%d", i+2)
		if _, err := from(ip).SignUp(ctx, signUpReq(fmt.Sprintf("u%d@example.com", i), "inv_ignored")); err != nil {
			t.Fatalf("sign-up %d from %s: %v", i, ip, err)
		}
	}
	_, err := from("127.0.0.9").SignUp(ctx, signUpReq("u9@example.com", ""))
	wantCode(t, "fourth sign-up, from a fourth address", err, connect.CodeResourceExhausted)
	if !strings.Contains(err.Error(), "--signup-rate-global") {
		t.Fatalf("the refusal does not name the server-wide rate: %v", err)
	}
	if d, ok := apierr.RetryAfter(err); !ok || d <= 0 || d > 21*time.Second {
		t.Fatalf("retry-after %v %v, want about 20 s", d, ok)
	}
	// Logins are not counted by it.
	if _, err := from("127.0.0.10").Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "u0@example.com", Password: "correct horse"})); err != nil {
		t.Fatalf("login while sign-ups are throttled: %v", err)
	}
}

// In scale mode (PostgreSQL, Redis) two gateways share the invitations:
// sign-ups racing for one single-use code through both make one account,
// and a code issued by the CLI on one works through the other.
func TestScaleSignUpInviteAcrossGateways(t *testing.T) {
	scaleMode(t)
	args := append([]string{"--signup", "invite"}, fastAuth...)
	gw := []*server{startServer(t, args...), startServer(t, args...)}
	ctx := ctxTimeout(t, 60*time.Second)
	code := strings.TrimSpace(gw[0].admin(t, "create-invite", "--uses", "2"))
	for i := range 2 {
		if _, err := gw[1-i].clients(protocols[0], cred{}).Auth.SignUp(ctx, signUpReq(fmt.Sprintf("both%d@example.com", i), code)); err != nil {
			t.Fatalf("sign-up %d through gateway %d: %v", i, 1-i, err)
		}
	}
	_, err := gw[0].clients(protocols[0], cred{}).Auth.SignUp(ctx, signUpReq("third@example.com", code))
	wantPolicyRefusal(t, "a third sign-up with a two-use code", err, "invite", "used up")

	for round := range 3 {
		single := strings.TrimSpace(gw[round%2].admin(t, "create-invite"))
		const n = 10
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = gw[i%2].clients(protocols[i%2], cred{}).Auth.SignUp(ctx, signUpReq(fmt.Sprintf("r%d-%d@example.com", round, i), single))
			}()
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			if err == nil {
				won++
				continue
			}
			wantPolicyRefusal(t, fmt.Sprintf("round %d, racer %d", round, i), err, "invite", "used up")
		}
		if won != 1 {
			t.Fatalf("round %d: %d sign-ups racing through two gateways for one single-use code succeeded, want 1", round, won)
		}
	}
	ops := gw[1].opsAdmin(t)
	if got := userEmails(t, ops); len(got) != 1+2+3 {
		t.Fatalf("users: %v", got)
	}
}
