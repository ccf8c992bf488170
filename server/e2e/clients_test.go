package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// protocol is one wire protocol the generated clients speak.
type protocol struct {
	name   string
	client func() *http.Client
	opts   []connect.ClientOption
}

var protocols = []protocol{
	{"connect", h1Client, nil},
	{"grpc", h2cClient, []connect.ClientOption{connect.WithGRPC()}},
}

// cred is what a client sends to authenticate: a session cookie value, an
// API key secret, and optionally an Origin header.
type cred struct {
	cookie, bearer, origin string
}

// clients are the generated clients of the services, sending one cred.
type clients struct {
	Auth   parleyv1connect.AuthServiceClient
	Keys   parleyv1connect.ApiKeyServiceClient
	Admin  parleyv1connect.AdminServiceClient
	Conv   parleyv1connect.ConversationServiceClient
	Bill   parleyv1connect.BillingServiceClient
	Chat   parleyv1connect.ChatServiceClient
	Attach parleyv1connect.AttachmentServiceClient
	Files  parleyv1connect.FileServiceClient
	// Batches is BatchService.
	Batches parleyv1connect.BatchServiceClient
}

// clients returns the service clients of s over p, authenticated with c.
func (s *server) clients(p protocol, c cred) clients {
	hc := p.client()
	hc.Transport = credTransport{base: hc.Transport, c: c}
	return clients{
		Auth:    parleyv1connect.NewAuthServiceClient(hc, s.BaseURL, p.opts...),
		Keys:    parleyv1connect.NewApiKeyServiceClient(hc, s.BaseURL, p.opts...),
		Admin:   parleyv1connect.NewAdminServiceClient(hc, s.BaseURL, p.opts...),
		Conv:    parleyv1connect.NewConversationServiceClient(hc, s.BaseURL, p.opts...),
		Bill:    parleyv1connect.NewBillingServiceClient(hc, s.BaseURL, p.opts...),
		Chat:    parleyv1connect.NewChatServiceClient(hc, s.BaseURL, p.opts...),
		Attach:  parleyv1connect.NewAttachmentServiceClient(hc, s.BaseURL, p.opts...),
		Files:   parleyv1connect.NewFileServiceClient(hc, s.BaseURL, p.opts...),
		Batches: parleyv1connect.NewBatchServiceClient(hc, s.BaseURL, p.opts...),
	}
}

// credTransport adds a cred's headers to every request.
type credTransport struct {
	base http.RoundTripper
	c    cred
}

func (t credTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if t.c.cookie != "" {
		r.Header.Set("Cookie", "Session_id="+t.c.cookie)
	}
	if t.c.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+t.c.bearer)
	}
	if t.c.origin != "" {
		r.Header.Set("Origin", t.c.origin)
	}
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// account is a signed-up user with a session and an API key.
type account struct {
	Email, Password string
	User            *parleyv1.User
	Cookie          string // the Session_id value
	Key             string // an API key secret
	KeyID           string
	// ConversationID is a conversation of the account's, with one exchange
	// in it, when a test made one.
	ConversationID string
	// AttachmentID is a ready attachment of the account's, where a test
	// made one.
	AttachmentID string
	// FileID is a file of the account's (an attachment with a purpose),
	// where a test made one.
	FileID string
}

// sessionCookie returns the Session_id value a response set.
func sessionCookie(t *testing.T, h http.Header) string {
	t.Helper()
	for _, line := range h.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(line, "Session_id="); ok {
			v, _, _ = strings.Cut(v, ";")
			return v
		}
	}
	t.Fatalf("no Session_id cookie in %q", h.Values("Set-Cookie"))
	return ""
}

// newAccount signs a user up over Connect and gives it an API key.
func (s *server) newAccount(t *testing.T, email string) *account {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	a := &account{Email: email, Password: "password-" + email}
	res, err := s.clients(protocols[0], cred{}).Auth.SignUp(ctx, connect.NewRequest(&parleyv1.SignUpRequest{
		Email: email, Password: a.Password, DisplayName: "User " + email,
	}))
	if err != nil {
		t.Fatalf("SignUp(%s): %v", email, err)
	}
	a.User, a.Cookie = res.Msg.GetUser(), sessionCookie(t, res.Header())
	key, err := s.clients(protocols[0], cred{cookie: a.Cookie}).Keys.CreateApiKey(ctx, connect.NewRequest(&parleyv1.CreateApiKeyRequest{Name: "e2e"}))
	if err != nil {
		t.Fatalf("CreateApiKey(%s): %v", email, err)
	}
	a.Key, a.KeyID = key.Msg.GetSecret(), key.Msg.GetApiKey().GetKeyId()
	return a
}

// as returns the clients of s over p authenticated as a's session or key.
func (s *server) as(p protocol, a *account, channel string) clients {
	if channel == "key" {
		return s.clients(p, cred{bearer: a.Key})
	}
	return s.clients(p, cred{cookie: a.Cookie})
}

func wantCode(t *testing.T, what string, err error, want connect.Code) {
	t.Helper()
	if connect.CodeOf(err) != want || err == nil {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}
