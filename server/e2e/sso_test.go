package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/internal/hydratest"
	"github.com/parleyhq/parley/server/sso"
)

// ssoBrowser is a browser with its own cookies that follows redirects
// through the gateway and the provider until the gateway sends it to the
// web app (after the callback), where it stops.
func ssoBrowser(base string) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 15 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > 12 {
			return errors.New("too many redirects")
		}
		if strings.HasPrefix(req.URL.String(), base) && !strings.HasPrefix(req.URL.Path, "/auth/oidc/") {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// ssoSignIn signs person in through the provider from a new browser,
// starting at the gateway's sign-in path with ret, and returns where the
// gateway sent the browser at the end and the session cookie it set ("" if
// none).
func ssoSignIn(t *testing.T, s *server, idp *hydratest.Provider, person hydratest.Person, ret string) (landing *url.URL, cookie string) {
	t.Helper()
	idp.SignInAs(person)
	b := ssoBrowser(s.BaseURL)
	res, err := b.Get(s.BaseURL + sso.LoginPath + "?return=" + url.QueryEscape(ret))
	if err != nil {
		t.Fatalf("signing in as %s: %v", person.Email, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound && res.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in as %s ended with %s, want a redirect to the web app", person.Email, res.Status)
	}
	landing, err = url.Parse(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.BaseURL)
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == "Session_id" {
			cookie = c.Value
		}
	}
	return landing, cookie
}

func (s *server) me(t *testing.T, cookie string) *parleyv1.User {
	t.Helper()
	res, err := s.clients(protocols[0], cred{cookie: cookie}).Auth.GetMe(ctxTimeout(t, 10*time.Second), connect.NewRequest(&parleyv1.GetMeRequest{}))
	if err != nil {
		t.Fatalf("GetMe with the SSO session: %v", err)
	}
	return res.Msg.GetUser()
}

func teamNames(t *testing.T, s *server, cookie, orgID string) []string {
	t.Helper()
	res, err := s.orgClient(&account{Cookie: cookie}).ListTeams(ctxTimeout(t, 10*time.Second),
		connect.NewRequest(&parleyv1.ListTeamsRequest{OrganizationId: orgID}))
	if err != nil {
		t.Fatalf("ListTeams: %v", err)
	}
	var names []string
	for _, tm := range res.Msg.GetTeams() {
		names = append(names, tm.GetName())
	}
	slices.Sort(names)
	return names
}

// TestSingleSignOn signs people in through a real OpenID Connect provider
// (Ory Hydra) on a gateway whose sign-up is closed: people of the
// organisation's domain are made accounts and members at their first
// sign-in and follow their groups into teams; the provider's account stays
// linked to its user when its address changes; an existing password user
// is linked, keeping its role; an unverified address, another domain, a
// wrong state, a missing flow cookie and an off-site return are refused.
func TestSingleSignOn(t *testing.T) {
	t.Parallel()
	idp := hydratest.Start(t)
	port := hydratest.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	clientID, secret := idp.Client(t, base+sso.CallbackPath)
	s := startServer(t, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--signup", "closed",
		"--oidc-issuer", idp.Issuer, "--oidc-client-id", clientID, "--oidc-client-secret", secret,
		"--oidc-redirect-url", base+sso.CallbackPath, "--oidc-name", "Acme SSO")
	defer s.kill()
	ctx := ctxTimeout(t, 60*time.Second)

	pol, err := s.clients(protocols[0], cred{}).Auth.GetSignUpPolicy(ctx, connect.NewRequest(&parleyv1.GetSignUpPolicyRequest{}))
	if err != nil || pol.Msg.GetSsoLoginUrl() != sso.LoginPath || pol.Msg.GetSsoName() != "Acme SSO" {
		t.Fatalf("GetSignUpPolicy = %v, %v; want the SSO path and name", pol, err)
	}

	// The owner has a password account (made by the operator: sign-up is closed).
	s.admin(t, "create-user", "--email", "owner@acme.example", "--password", "owner-password-1")
	login, err := s.clients(protocols[0], cred{}).Auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: "owner@acme.example", Password: "owner-password-1"}))
	if err != nil {
		t.Fatalf("owner login: %v", err)
	}
	owner := &account{Cookie: sessionCookie(t, login.Header()), User: login.Msg.GetUser()}
	oc := s.orgClient(owner)
	o, err := oc.CreateOrganization(ctx, connect.NewRequest(&parleyv1.CreateOrganizationRequest{Name: "Acme"}))
	if err != nil {
		t.Fatalf("CreateOrganization: %v", err)
	}
	orgID := o.Msg.GetOrganization().GetOrganizationId()
	for name, group := range map[string]string{"research": "eng", "operations": "ops", "sales": ""} {
		if _, err := oc.CreateTeam(ctx, connect.NewRequest(&parleyv1.CreateTeamRequest{OrganizationId: orgID, Name: name, SsoGroup: group})); err != nil {
			t.Fatalf("CreateTeam %s: %v", name, err)
		}
	}
	if out := s.admin(t, "org-sso", "--org", orgID, "--domain", "ACME.example"); !strings.Contains(out, "@acme.example") {
		t.Fatalf("parley admin org-sso said %q", out)
	}

	// Alice, of the domain, in group eng: an account, a member, in research.
	alice := hydratest.Person{Subject: "alice-1", Email: "alice@acme.example", Verified: true, Name: "Alice A.", Groups: []string{"eng", "unmapped"}}
	landing, cookie := ssoSignIn(t, s, idp, alice, "/#/c/42")
	if cookie == "" || landing.String() != "/#/c/42" {
		t.Fatalf("Alice's sign-in landed on %q with cookie %q; want /#/c/42 with a session", landing, cookie)
	}
	me := s.me(t, cookie)
	if me.GetEmail() != "alice@acme.example" || me.GetDisplayName() != "Alice A." {
		t.Fatalf("GetMe = %v, want Alice", me)
	}
	ms, err := s.orgClient(&account{Cookie: cookie}).ListOrganizations(ctx, connect.NewRequest(&parleyv1.ListOrganizationsRequest{}))
	if err != nil || len(ms.Msg.GetMemberships()) != 1 || ms.Msg.GetMemberships()[0].GetRole() != parleyv1.OrganizationRole_ORGANIZATION_ROLE_MEMBER {
		t.Fatalf("Alice's organisations = %v, %v; want Acme as a member", ms, err)
	}
	if got := teamNames(t, s, cookie, orgID); !slices.Equal(got, []string{"research"}) {
		t.Fatalf("Alice's teams = %v, want [research] (group eng)", got)
	}

	// Her groups change at the provider: her teams follow at the next sign-in.
	alice.Groups = []string{"ops"}
	_, cookie2 := ssoSignIn(t, s, idp, alice, "/")
	if got := teamNames(t, s, cookie2, orgID); !slices.Equal(got, []string{"operations"}) {
		t.Fatalf("Alice's teams after her groups became [ops] = %v, want [operations]", got)
	}
	// Her address changes at the provider: the subject still names her.
	alice.Email = "alice.new@acme.example"
	_, cookie3 := ssoSignIn(t, s, idp, alice, "/")
	if again := s.me(t, cookie3); again.GetUserId() != me.GetUserId() {
		t.Fatalf("after an address change the provider's account signed in as %s, want Alice's %s", again.GetUserId(), me.GetUserId())
	}

	// The owner, signing in through the provider with a verified address,
	// is linked to the password account and stays owner.
	ownerSSO := hydratest.Person{Subject: "owner-1", Email: "owner@acme.example", Verified: true}
	_, oc2 := ssoSignIn(t, s, idp, ownerSSO, "/")
	if got := s.me(t, oc2); got.GetUserId() != owner.User.GetUserId() {
		t.Fatalf("the owner's SSO sign-in is user %s, want the password account %s", got.GetUserId(), owner.User.GetUserId())
	}
	mine, err := s.orgClient(&account{Cookie: oc2}).ListOrganizations(ctx, connect.NewRequest(&parleyv1.ListOrganizationsRequest{}))
	if err != nil || len(mine.Msg.GetMemberships()) != 1 || mine.Msg.GetMemberships()[0].GetRole() != parleyv1.OrganizationRole_ORGANIZATION_ROLE_OWNER {
		t.Fatalf("the owner's organisations after SSO = %v, %v; want still owner", mine, err)
	}

	// Refusals: each lands on the web app with the reason and no session.
	refused := func(what string, person hydratest.Person, want string) {
		t.Helper()
		landing, cookie := ssoSignIn(t, s, idp, person, "/")
		if cookie != "" || !strings.Contains(landing.Query().Get(sso.ErrorParam), want) {
			t.Fatalf("%s: landed on %q with cookie %q; want %s=…%s… and no session", what, landing, cookie, sso.ErrorParam, want)
		}
	}
	refused("an address the provider did not verify", hydratest.Person{Subject: "dave-1", Email: "dave@acme.example", Verified: false}, "not verified")
	refused("another domain while sign-up is closed", hydratest.Person{Subject: "bob-1", Email: "bob@other.example", Verified: true}, "no account for bob@other.example")

	// Login CSRF: an attacker's real callback (its code and state) opened in
	// a victim's browser, which began a sign-in of its own, is refused for
	// its state; with no sign-in begun, for the missing flow.
	idp.SignInAs(hydratest.Person{Subject: "mallory-1", Email: "mallory@acme.example", Verified: true})
	attacker := ssoBrowser(s.BaseURL)
	attacker.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == sso.CallbackPath {
			return http.ErrUseLastResponse
		}
		return nil
	}
	res, err := attacker.Get(s.BaseURL + sso.LoginPath)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	forged := res.Header.Get("Location")
	if !strings.HasPrefix(forged, base+sso.CallbackPath+"?code=") {
		t.Fatalf("the attacker's flow stopped at %q, want the gateway's callback with a code", forged)
	}
	victim := ssoBrowser(s.BaseURL)
	victim.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if res, err := victim.Get(s.BaseURL + sso.LoginPath); err != nil || res.StatusCode != http.StatusFound {
		t.Fatalf("the victim's GET %s = %v, %v; want a redirect to the provider", sso.LoginPath, res, err)
	}
	for what, c := range map[string]struct {
		b    *http.Client
		want string
	}{
		"another browser's state": {victim, "state does not match"},
		"no sign-in begun":        {ssoBrowser(s.BaseURL), "another browser"},
	} {
		c.b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, err := c.b.Get(forged)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		loc, _ := url.Parse(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || !strings.Contains(loc.Query().Get(sso.ErrorParam), c.want) ||
			strings.Contains(strings.Join(res.Header.Values("Set-Cookie"), ";"), "Session_id=") {
			t.Fatalf("the attacker's callback with %s = %s to %q; want 303 to the web app saying %q, no session", what, res.Status, loc, c.want)
		}
	}

	// A return path off the site is not followed.
	if landing, _ := ssoSignIn(t, s, idp, hydratest.Person{Subject: "alice-1", Email: "alice@acme.example", Verified: true}, "//evil.example/x"); landing.String() != "/" {
		t.Fatalf("return=//evil.example/x landed on %q, want /", landing)
	}

	// The organisation's audit log says who joined through the provider.
	ev, err := oc.ListOrganizationAuditEvents(ctx, connect.NewRequest(&parleyv1.ListOrganizationAuditEventsRequest{OrganizationId: orgID}))
	if err != nil {
		t.Fatalf("ListOrganizationAuditEvents: %v", err)
	}
	var joined, moved bool
	for _, e := range ev.Msg.GetEvents() {
		joined = joined || e.GetKind() == "org_member_set" && strings.Contains(e.GetDetail(), `"via":"sso"`) && strings.Contains(e.GetDetail(), "alice@acme.example")
		moved = moved || e.GetKind() == "org_team_member_removed" && strings.Contains(e.GetDetail(), `"group":"eng"`)
	}
	if !joined || !moved {
		t.Fatalf("audit log lacks Alice joining via SSO (%v) or leaving research with group eng (%v): %v", joined, moved, ev.Msg.GetEvents())
	}
}
