// Package webhook tells users when work that does not need an answer now
// has ended: it signs and delivers events (batch.completed,
// response.completed, …) to their endpoints as OpenAI sends them, with the
// Standard Webhooks scheme (webhook-id, webhook-timestamp,
// webhook-signature: "v1," and the base64 HMAC-SHA256 of
// "id.timestamp.body" under the endpoint's secret).
//
// Every event becomes one delivery per endpoint that receives its type, in
// the store (store.Webhooks), so that it survives a restart; any gateway
// claims a due delivery under a lease and attempts it. A delivery that gets
// no 2xx within Timeout is tried again on the Standard Webhooks schedule
// (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: about a day) and then failed;
// each attempt is recorded and the owner may ask for one again. Endpoints
// whose host is or resolves to a loopback, private, link-local or
// unspecified address are refused, at creation and again at each
// connection (so a name re-pointed later is refused too), unless the
// operator allows them.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// Events are the event types an endpoint may receive.
var Events = []string{"batch.completed", "batch.failed", "batch.expired", "batch.cancelled",
	"response.completed", "response.failed", "response.cancelled", "response.incomplete"}

// MaxEndpoints bounds one user's endpoints.
const MaxEndpoints = 10

// schedule is the wait before each retry (Standard Webhooks' own).
var schedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Config is the deliveries' settings.
type Config struct {
	// AllowPrivate lets endpoints be on loopback and private addresses.
	AllowPrivate bool
	// Timeout bounds one attempt.
	Timeout time.Duration
	// Poll is how often a gateway looks for due deliveries.
	Poll time.Duration
	// Lease is how long a gateway's claim on an attempt lasts.
	Lease time.Duration
}

// RegisterFlags registers the webhook settings with their defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.AllowPrivate, "webhook-allow-private", false, "allow webhook endpoints on loopback, private and link-local addresses (a private deployment's receivers; off, they are refused, so users cannot reach the gateway's network)")
	fs.DurationVar(&c.Timeout, "webhook-timeout", 10*time.Second, "how long one webhook delivery attempt may take before it counts as failed")
	fs.DurationVar(&c.Poll, "webhook-poll", time.Second, "how often a gateway looks for webhook deliveries that are due (a new event wakes it at once)")
	fs.DurationVar(&c.Lease, "webhook-lease", time.Minute, "how long a gateway's claim on a delivery attempt lasts; longer than --webhook-timeout")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Timeout <= 0 || c.Poll <= 0:
		return fmt.Errorf("--webhook-timeout and --webhook-poll must be positive")
	case c.Lease <= c.Timeout:
		return fmt.Errorf("--webhook-lease %v must be longer than --webhook-timeout %v", c.Lease, c.Timeout)
	}
	return nil
}

// Service keeps endpoints and delivers events.
type Service struct {
	Store  store.Webhooks
	Config Config
	Logger *slog.Logger
	Now    func() time.Time

	client *http.Client
	wake   chan struct{}
	once   sync.Once
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Service) init() {
	s.once.Do(func() {
		s.wake = make(chan struct{}, 1)
		d := &net.Dialer{Timeout: s.Config.Timeout, Control: func(_, address string, _ syscall.RawConn) error {
			if s.Config.AllowPrivate {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil || private(ap.Addr()) {
				return fmt.Errorf("%s is a private address: webhook endpoints must be public", address)
			}
			return nil
		}}
		s.client = &http.Client{Timeout: s.Config.Timeout, Transport: &http.Transport{DialContext: d.DialContext, Proxy: nil,
			TLSHandshakeTimeout: s.Config.Timeout, MaxIdleConnsPerHost: 4},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	})
}

// private reports whether a is an address users must not reach the
// gateway's network through.
func private(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(a) // carrier-grade NAT
}

// NewEndpoint is an endpoint as its owner asks for it.
type NewEndpoint struct {
	URL, Description string
	Events           []string
}

// Create checks and stores a new endpoint of the caller's and returns it
// with its secret.
func (s *Service) Create(ctx context.Context, req NewEndpoint) (store.WebhookEndpoint, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return store.WebhookEndpoint{}, apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return store.WebhookEndpoint{}, apierr.FailedPrecondition("webhooks are not available on this server")
	}
	if err := s.checkURL(ctx, req.URL); err != nil {
		return store.WebhookEndpoint{}, err
	}
	for i, e := range req.Events {
		if !slices.Contains(Events, e) {
			return store.WebhookEndpoint{}, apierr.InvalidArgument(fmt.Sprintf("events[%d]", i), fmt.Sprintf("%q is not an event type; one of %s", e, strings.Join(Events, ", ")))
		}
	}
	if len(req.Description) > 512 {
		return store.WebhookEndpoint{}, apierr.InvalidArgument("description", "is over 512 bytes")
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	e := store.WebhookEndpoint{ID: "we_" + hex.EncodeToString(uuidBytes()), UserID: p.UserID, URL: req.URL, Events: slices.Compact(slices.Sorted(slices.Values(req.Events))),
		Description: req.Description, Secret: "whsec_" + base64.StdEncoding.EncodeToString(key), CreatedAt: s.now()}
	if err := s.Store.CreateEndpoint(ctx, e, MaxEndpoints); errors.Is(err, store.ErrQuotaExceeded) {
		return e, apierr.FailedPrecondition(fmt.Sprintf("you have %d webhook endpoints, the most allowed; delete one first", MaxEndpoints))
	} else if err != nil {
		return e, s.internal(ctx, "creating a webhook endpoint", err)
	}
	return e, nil
}

func uuidBytes() []byte {
	u := uuid.Must(uuid.NewV7())
	return u[:]
}

// checkURL refuses what the service will not call: not http(s), too long,
// with credentials, or on a private address (unless allowed).
func (s *Service) checkURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return apierr.InvalidArgument("url", "is required")
	case len(raw) > 2048:
		return apierr.InvalidArgument("url", "is over 2048 bytes")
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return apierr.InvalidArgument("url", "must be an absolute http or https URL")
	case u.User != nil:
		return apierr.InvalidArgument("url", "must not hold a user name or password")
	}
	if s.Config.AllowPrivate {
		return nil
	}
	if u.Scheme != "https" {
		return apierr.InvalidArgument("url", "must be https")
	}
	host := u.Hostname()
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		if err != nil {
			return apierr.InvalidArgument("url", fmt.Sprintf("the host %s does not resolve", host))
		}
		addrs = ips
	}
	for _, a := range addrs {
		if private(a) {
			return apierr.InvalidArgument("url", fmt.Sprintf("%s is (or resolves to) the private address %s; webhook endpoints must be public", host, a))
		}
	}
	return nil
}

// List returns the caller's endpoints.
func (s *Service) List(ctx context.Context) ([]store.WebhookEndpoint, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return nil, apierr.FailedPrecondition("webhooks are not available on this server")
	}
	out, err := s.Store.ListEndpoints(ctx, p.UserID)
	if err != nil {
		return nil, s.internal(ctx, "listing webhook endpoints", err)
	}
	return out, nil
}

// Delete removes one of the caller's endpoints.
func (s *Service) Delete(ctx context.Context, id string) error {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return apierr.FailedPrecondition("webhooks are not available on this server")
	}
	if err := s.Store.DeleteEndpoint(ctx, p.UserID, id); errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("webhook endpoint")
	} else if err != nil {
		return s.internal(ctx, "deleting a webhook endpoint", err)
	}
	return nil
}

// Deliveries lists the deliveries to one of the caller's endpoints.
func (s *Service) Deliveries(ctx context.Context, endpointID string, page store.PageRequest) ([]store.WebhookDelivery, string, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, "", apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return nil, "", apierr.FailedPrecondition("webhooks are not available on this server")
	}
	if err := s.owns(ctx, p.UserID, endpointID); err != nil {
		return nil, "", err
	}
	out, next, err := s.Store.ListDeliveries(ctx, p.UserID, endpointID, page)
	if err != nil {
		return nil, "", s.internal(ctx, "listing webhook deliveries", err)
	}
	return out, next, nil
}

func (s *Service) owns(ctx context.Context, userID, endpointID string) error {
	eps, err := s.Store.ListEndpoints(ctx, userID)
	if err != nil {
		return s.internal(ctx, "listing webhook endpoints", err)
	}
	for _, e := range eps {
		if e.ID == endpointID {
			return nil
		}
	}
	return apierr.NotFound("webhook endpoint")
}

// Redeliver makes one delivery of the caller's due now.
func (s *Service) Redeliver(ctx context.Context, endpointID, deliveryID string) (store.WebhookDelivery, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return store.WebhookDelivery{}, apierr.Unauthenticated("no credentials")
	}
	if s == nil || s.Store == nil {
		return store.WebhookDelivery{}, apierr.FailedPrecondition("webhooks are not available on this server")
	}
	d, err := s.Store.Redeliver(ctx, p.UserID, endpointID, deliveryID, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return d, apierr.NotFound("webhook delivery")
	} else if err != nil {
		return d, s.internal(ctx, "redelivering a webhook", err)
	}
	s.Wake()
	return d, nil
}

// Emit records event typ about object objectID (a batch's or a response's
// id) for userID's endpoints that receive it; delivery follows. A nil
// Service emits nothing.
func (s *Service) Emit(ctx context.Context, userID, typ, objectID string) {
	if s == nil || s.Store == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	now := s.now()
	id := "evt_" + hex.EncodeToString(uuidBytes())
	payload, _ := json.Marshal(map[string]any{"object": "event", "id": id, "type": typ, "created_at": now.Unix(),
		"data": map[string]string{"id": objectID}})
	n, err := s.Store.Enqueue(ctx, userID, id, typ, string(payload), now)
	if err != nil {
		s.logger().ErrorContext(ctx, "recording a webhook event", "type", typ, "object", objectID, "err", err)
		return
	}
	if n > 0 {
		s.Wake()
	}
}

// Wake makes the delivery loop look for due deliveries now.
func (s *Service) Wake() {
	s.init()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run attempts due deliveries until ctx ends.
func (s *Service) Run(ctx context.Context) {
	s.init()
	t := time.NewTicker(s.Config.Poll)
	defer t.Stop()
	for {
		for ctx.Err() == nil && s.attemptDue(ctx) {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// attemptDue claims and attempts a round of due deliveries; false when
// there were none.
func (s *Service) attemptDue(ctx context.Context) bool {
	claims, err := s.Store.ClaimDeliveries(ctx, s.now(), s.Config.Lease, 16)
	if err != nil {
		if ctx.Err() == nil {
			s.logger().WarnContext(ctx, "claiming webhook deliveries", "err", err)
		}
		return false
	}
	var wg sync.WaitGroup
	for _, c := range claims {
		wg.Go(func() { s.attempt(ctx, c) })
	}
	wg.Wait()
	return len(claims) > 0
}

// Sign returns the webhook-signature of a delivery: "v1," and the base64
// HMAC-SHA256 of "id.timestamp.body" under the secret's key.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, timestamp)
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// attempt posts one delivery and records how it went.
func (s *Service) attempt(ctx context.Context, c store.DeliveryClaim) {
	d := c.Delivery
	now := s.now()
	code, failure := s.post(ctx, c, now)
	delivered := failure == ""
	var next time.Time
	if !delivered && d.Attempts < len(schedule) {
		next = now.Add(schedule[d.Attempts])
	}
	if err := s.Store.FinishAttempt(context.WithoutCancel(ctx), c, delivered, code, failure, s.now(), next); err != nil {
		s.logger().WarnContext(ctx, "recording a webhook attempt", "delivery", d.ID, "err", err)
	}
	if !delivered && next.IsZero() {
		s.logger().WarnContext(ctx, "a webhook delivery failed for good", "delivery", d.ID, "endpoint", d.EndpointID, "last_error", failure)
	}
}

func (s *Service) post(ctx context.Context, c store.DeliveryClaim, now time.Time) (int, string) {
	body := []byte(c.Delivery.Payload)
	sig, err := Sign(c.Secret, c.Delivery.ID, now.Unix(), body)
	if err != nil {
		return 0, "the endpoint's secret is unreadable"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "the endpoint's URL is unusable"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Parley-Webhooks/1")
	req.Header.Set("webhook-id", c.Delivery.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	res, err := s.client.Do(req)
	if err != nil {
		return 0, trim(err.Error())
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, fmt.Sprintf("the endpoint answered %s", res.Status)
	}
	return res.StatusCode, ""
}

func trim(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}

func (s *Service) internal(ctx context.Context, what string, err error) error {
	s.logger().ErrorContext(ctx, what, "err", err)
	return apierr.Internal()
}
