package bench

// The users profile: simulated people rather than requests. Each signs in
// (signing up the first time), lists their conversations, opens the newest,
// then until the run ends thinks for a while and sends a message, reading
// the answer as it streams; every so often the message carries a small
// document. The report is each RPC class's latency percentiles and the time
// to the first token, as the seed's scaling article reports them (P95 at
// 5,000 and 10,000 users).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// UsersConfig is a users-profile run.
type UsersConfig struct {
	// URLs are the gateways; user i uses URLs[i % len(URLs)] throughout,
	// as a browser keeps to the gateway a balancer gave it.
	URLs []string
	// Users is how many people are simulated at once.
	Users int
	// Ramp spreads their sign-ins evenly over this long.
	Ramp time.Duration
	// Duration is the run's length from the first sign-in.
	Duration time.Duration
	// Think is the mean time between a user's answer and their next
	// message (exponentially distributed, at least a tenth of it).
	Think time.Duration
	// Model and MaxTokens are each message's.
	Model     string
	MaxTokens int
	// AttachEvery: every AttachEvery-th message of a user carries a small
	// text document (0: none).
	AttachEvery int
	// NewChatEvery: a user starts a new conversation after this many
	// messages in one (its history grows until then).
	NewChatEvery int
	// Accounts are user1@DOMAIN … userN@DOMAIN with Password; signed up
	// when they do not exist.
	Domain, Password string
	// Progress, when set, gets a line a second.
	Progress io.Writer
}

// The RPC classes a users run reports.
const (
	classFirst = "send: first token"
	classWhole = "send: whole answer"
)

var userClasses = []string{"sign-in", "list conversations", "open conversation", "upload document", classFirst, classWhole}

// UsersReport is a users run's result.
type UsersReport struct {
	Users, SignedIn   int
	Elapsed           time.Duration
	Messages, Uploads int
	Classes           []ClassReport
	Errors            int
	Requests          int
	ErrorKinds        []ErrorKind
}

// ClassReport is one RPC class's latencies over its successful calls.
type ClassReport struct {
	Class         string
	OK, Errors    int
	P50, P95, P99 time.Duration
}

func (r UsersReport) String() string {
	var b strings.Builder
	writeKinds(&b, "", r.ErrorKinds, r.Errors, r.Requests)
	fmt.Fprintf(&b, "users %d (signed in %d), %s; messages %d (%.1f/s), uploads %d; calls %d, failed %d\n", r.Users, r.SignedIn, r.Elapsed.Round(time.Second),
		r.Messages, float64(r.Messages)/max(r.Elapsed.Seconds(), 1e-9), r.Uploads, r.Requests, r.Errors)
	fmt.Fprintf(&b, "%-20s %8s %7s %9s %9s %9s\n", "class", "ok", "errors", "p50", "p95", "p99")
	for _, c := range r.Classes {
		fmt.Fprintf(&b, "%-20s %8d %7d %9s %9s %9s\n", c.Class, c.OK, c.Errors, fmtMS(c.P50), fmtMS(c.P95), fmtMS(c.P99))
	}
	return strings.TrimRight(b.String(), "\n")
}

// Check fails when more than maxRate of the calls failed.
func (r UsersReport) Check(maxRate float64) error {
	return CheckErrors(r.ErrorKinds, r.Errors, r.Requests, maxRate)
}

// usersRun gathers every user's measurements.
type usersRun struct {
	mu       sync.Mutex
	lat      map[string][]time.Duration
	errs     map[string]int
	tally    errorTally
	signedIn atomic.Int64
	messages atomic.Int64
	uploads  atomic.Int64
	calls    atomic.Int64
}

func (u *usersRun) record(class string, d time.Duration, err error) {
	if class != classWhole { // (one call: a send's first token and whole answer)
		u.calls.Add(1)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		u.errs[class]++
		u.tally.add(fmt.Errorf("%s: %w", class, err))
		return
	}
	u.lat[class] = append(u.lat[class], d)
}

// RunUsers runs the users profile.
func RunUsers(ctx context.Context, cfg UsersConfig) (UsersReport, error) {
	if len(cfg.URLs) == 0 || cfg.Users <= 0 {
		return UsersReport{}, errors.New("bench users: no gateway or no users")
	}
	run := &usersRun{lat: map[string][]time.Duration{}, errs: map[string]int{}}
	transport := httpClient("connect", cfg.Users).Transport
	ctx, cancel := runFor(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	var finished, tokens atomic.Int64
	stopProgress := progress(cfg.Progress, start, &finished, &tokens)
	var wg sync.WaitGroup
	for i := range cfg.Users {
		wg.Go(func() {
			delay := time.Duration(0)
			if cfg.Users > 1 {
				delay = cfg.Ramp * time.Duration(i) / time.Duration(cfg.Users)
			}
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return
			}
			u := &simUser{cfg: cfg, run: run, n: i + 1, base: cfg.URLs[i%len(cfg.URLs)], rng: rand.New(rand.NewPCG(uint64(i), 7))}
			u.clients(transport)
			u.live(ctx, &finished)
		})
	}
	wg.Wait()
	stopProgress()
	r := UsersReport{Users: cfg.Users, SignedIn: int(run.signedIn.Load()), Elapsed: time.Since(start),
		Messages: int(run.messages.Load()), Uploads: int(run.uploads.Load()), Requests: int(run.calls.Load())}
	for _, c := range userClasses {
		l := run.lat[c]
		cr := ClassReport{Class: c, OK: len(l), Errors: run.errs[c], P50: percentile(l, 0.50), P95: percentile(l, 0.95), P99: percentile(l, 0.99)}
		r.Errors += cr.Errors
		r.Classes = append(r.Classes, cr)
	}
	r.ErrorKinds = run.tally.list()
	return r, nil
}

// simUser is one simulated person.
type simUser struct {
	cfg     UsersConfig
	run     *usersRun
	n       int
	base    string
	rng     *rand.Rand
	session string // the Session_id cookie
	http    *http.Client
	auth    parleyv1connect.AuthServiceClient
	conv    parleyv1connect.ConversationServiceClient
	attach  parleyv1connect.AttachmentServiceClient
}

// sessionTransport sends the user's session cookie, as a browser does.
type sessionTransport struct {
	base http.RoundTripper
	u    *simUser
}

func (t sessionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.u.session != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Cookie", "Session_id="+t.u.session)
	}
	return t.base.RoundTrip(r)
}

func (u *simUser) clients(base http.RoundTripper) {
	u.http = &http.Client{Transport: sessionTransport{base: base, u: u}}
	u.auth = parleyv1connect.NewAuthServiceClient(u.http, u.base)
	u.conv = parleyv1connect.NewConversationServiceClient(u.http, u.base)
	u.attach = parleyv1connect.NewAttachmentServiceClient(u.http, u.base)
}

// timed runs one call of a class and records it (not when the run's end
// cut it short).
func (u *simUser) timed(ctx context.Context, class string, call func() error) error {
	t0 := time.Now()
	err := call()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	u.run.record(class, time.Since(t0), err)
	return err
}

func (u *simUser) live(ctx context.Context, finished *atomic.Int64) {
	email := fmt.Sprintf("user%d@%s", u.n, u.cfg.Domain)
	if u.timed(ctx, "sign-in", func() error { return u.signIn(ctx, email) }) != nil {
		return
	}
	u.run.signedIn.Add(1)
	var convID string
	_ = u.timed(ctx, "list conversations", func() error {
		res, err := u.conv.ListConversations(ctx, connect.NewRequest(&parleyv1.ListConversationsRequest{PageSize: 30}))
		if err == nil && len(res.Msg.GetConversations()) > 0 {
			convID = res.Msg.GetConversations()[0].GetConversationId()
		}
		return err
	})
	if convID != "" {
		_ = u.timed(ctx, "open conversation", func() error {
			_, err := u.conv.GetConversation(ctx, connect.NewRequest(&parleyv1.GetConversationRequest{ConversationId: convID}))
			return err
		})
	}
	for sent := 0; ; sent++ {
		think := time.Duration(u.rng.ExpFloat64() * float64(u.cfg.Think))
		select {
		case <-time.After(max(think, u.cfg.Think/10)):
		case <-ctx.Done():
			return
		}
		if u.cfg.NewChatEvery > 0 && sent%u.cfg.NewChatEvery == 0 && sent > 0 {
			convID = ""
		}
		parts := []*parleyv1.Part{{Kind: &parleyv1.Part_Text{Text: fmt.Sprintf("Message %d from user %d: tell me about rabbits and watches.", sent+1, u.n)}}}
		if u.cfg.AttachEvery > 0 && (sent+1)%u.cfg.AttachEvery == 0 {
			var id string
			if u.timed(ctx, "upload document", func() (err error) { id, err = u.upload(ctx, sent); return err }) != nil {
				continue
			}
			u.run.uploads.Add(1)
			parts = append(parts, &parleyv1.Part{Kind: &parleyv1.Part_AttachmentId{AttachmentId: id}})
		}
		id, err := u.send(ctx, convID, parts)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			convID = id
			u.run.messages.Add(1)
			finished.Add(1)
		}
	}
}

func (u *simUser) signIn(ctx context.Context, email string) error {
	res, err := u.auth.Login(ctx, connect.NewRequest(&parleyv1.LoginRequest{Email: email, Password: u.cfg.Password}))
	var header http.Header
	if err == nil {
		header = res.Header()
	} else if connect.CodeOf(err) == connect.CodeUnauthenticated || connect.CodeOf(err) == connect.CodeNotFound {
		up, err := u.auth.SignUp(ctx, connect.NewRequest(&parleyv1.SignUpRequest{Email: email, Password: u.cfg.Password, DisplayName: fmt.Sprintf("User %d", u.n)}))
		if err != nil {
			return err
		}
		header = up.Header()
	} else {
		return err
	}
	for _, line := range header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(line, "Session_id="); ok {
			u.session, _, _ = strings.Cut(v, ";")
			return nil
		}
	}
	return errors.New("no Session_id cookie")
}

// upload sends a small text document the way the web app does: an upload
// slot, the bytes to its URL, then completion.
func (u *simUser) upload(ctx context.Context, n int) (string, error) {
	body := []byte(strings.Repeat(fmt.Sprintf("Notes of user %d, page %d: rabbits keep watches in their pockets.\n", u.n, n), 40))
	sum := sha256.Sum256(body)
	up, err := u.attach.CreateUpload(ctx, connect.NewRequest(&parleyv1.CreateUploadRequest{
		Filename: fmt.Sprintf("notes-%d.txt", n), MimeType: "text/plain", SizeBytes: int64(len(body)), Sha256: hex.EncodeToString(sum[:])}))
	if err != nil {
		return "", err
	}
	url := up.Msg.GetUploadUrl()
	if strings.HasPrefix(url, "/") {
		url = u.base + url
	}
	req, err := http.NewRequestWithContext(ctx, up.Msg.GetMethod(), url, strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	for k, v := range up.Msg.GetHeaders() {
		req.Header.Set(k, v)
	}
	res, err := u.http.Do(req)
	if err != nil {
		return "", err
	}
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 300))
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", &httpStatusError{status: res.StatusCode, body: string(msg)}
	}
	if _, err := u.attach.CompleteUpload(ctx, connect.NewRequest(&parleyv1.CompleteUploadRequest{AttachmentId: up.Msg.GetAttachmentId()})); err != nil {
		return "", err
	}
	return up.Msg.GetAttachmentId(), nil
}

// send sends one message and reads its answer to the end; it records the
// time to the first token and to the whole answer.
func (u *simUser) send(ctx context.Context, convID string, parts []*parleyv1.Part) (string, error) {
	t0 := time.Now()
	stream, err := u.conv.SendMessage(ctx, connect.NewRequest(&parleyv1.SendMessageRequest{
		ConversationId: convID, Model: u.cfg.Model, Parts: parts, MaxOutputTokens: int64(u.cfg.MaxTokens)}))
	if err != nil {
		if ctx.Err() == nil {
			u.run.record(classFirst, 0, err)
		}
		return "", err
	}
	defer stream.Close()
	first := time.Duration(0)
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if s := ev.GetStarted(); s != nil {
			convID = s.GetConversationId()
		}
		if first == 0 && ev.GetDelta().GetText() != "" {
			first = time.Since(t0)
		}
	}
	err = stream.Err()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if first == 0 {
		if err == nil {
			err = errors.New("an answer without text")
		}
		u.run.record(classFirst, 0, err)
		return "", err
	}
	u.run.record(classFirst, first, nil)
	u.run.record(classWhole, time.Since(t0), err)
	return convID, err
}
