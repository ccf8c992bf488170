package e2e

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/webhook"
)

func (s *server) webhooks(c cred) parleyv1connect.WebhookServiceClient {
	hc := protocols[0].client()
	hc.Transport = credTransport{base: hc.Transport, c: c}
	return parleyv1connect.NewWebhookServiceClient(hc, s.BaseURL, protocols[0].opts...)
}

// Endpoints on loopback and private addresses are refused by default,
// naming url; so are bad URLs and event types; another user's endpoint is
// not found.
func TestWebhookEndpointsRefusePrivateAddresses(t *testing.T) {
	s := startServer(t, fastAuth...)
	a, b := s.newAccount(t, "hooks@example.com"), s.newAccount(t, "other-hooks@example.com")
	w := s.webhooks(cred{bearer: a.Key})
	ctx := ctxTimeout(t, 20*time.Second)
	for _, tc := range []struct{ url, field, want string }{
		{"https://127.0.0.1/hook", "url", "private"},
		{"https://localhost:8443/hook", "url", "private"},
		{"https://10.1.2.3/hook", "url", "private"},
		{"https://169.254.169.254/latest", "url", "private"},
		{"https://[::1]/hook", "url", "private"},
		{"http://example.com/hook", "url", "https"},
		{"ftp://example.com/", "url", "http"},
		{"https://user:pw@example.com/", "url", "password"},
	} {
		_, err := w.CreateWebhookEndpoint(ctx, connect.NewRequest(&parleyv1.CreateWebhookEndpointRequest{Url: tc.url}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.url, err)
		}
	}
	_, err := w.CreateWebhookEndpoint(ctx, connect.NewRequest(&parleyv1.CreateWebhookEndpointRequest{Url: "https://203.0.113.7/hook", Events: []string{"batch.done"}}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "events[0]") {
		t.Errorf("an unknown event type: %v", err)
	}
	e, err := w.CreateWebhookEndpoint(ctx, connect.NewRequest(&parleyv1.CreateWebhookEndpointRequest{Url: "https://203.0.113.7/hook"}))
	if err != nil || !strings.HasPrefix(e.Msg.GetSecret(), "whsec_") {
		t.Fatalf("a public endpoint: %v %v", e, err)
	}
	other := s.webhooks(cred{bearer: b.Key})
	if _, err := other.DeleteWebhookEndpoint(ctx, connect.NewRequest(&parleyv1.DeleteWebhookEndpointRequest{EndpointId: e.Msg.GetEndpoint().GetId()})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("another user's delete: %v", err)
	}
	if _, err := other.ListWebhookDeliveries(ctx, connect.NewRequest(&parleyv1.ListWebhookDeliveriesRequest{EndpointId: e.Msg.GetEndpoint().GetId()})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("another user's deliveries: %v", err)
	}
}

// A batch's end is delivered to a receiver that is down at first (503),
// signed (checked with webhook.Sign), recorded with its attempts, and
// delivered again on request with the same webhook-id.
func TestWebhookDeliveryRetriesAndRedelivers(t *testing.T) {
	s := startServer(t, append(fastAuth, "--webhook-allow-private")...)
	a := s.newAccount(t, "deliver@example.com")
	s.topup(t, a, "5")
	type hit struct {
		h    http.Header
		body []byte
	}
	var mu sync.Mutex
	var hits []hit
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, hit{r.Header.Clone(), body})
		n := len(hits)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	w := s.webhooks(cred{bearer: a.Key})
	ctx := ctxTimeout(t, 60*time.Second)
	e, err := w.CreateWebhookEndpoint(ctx, connect.NewRequest(&parleyv1.CreateWebhookEndpointRequest{Url: "http://" + ln.Addr().String() + "/hook", Events: []string{"batch.completed"}}))
	if err != nil {
		t.Fatal(err)
	}
	b := waitBatch(t, s, a.Key, createBatch(t, s, a.Key, "/v1/chat/completions", []string{chatLine("x", "sim-small", "hi")}).ID, 30*time.Second)
	waitFor(t, 30*time.Second, "the delivery after the outage", func() bool { mu.Lock(); defer mu.Unlock(); return len(hits) >= 2 })
	mu.Lock()
	last := hits[1]
	mu.Unlock()
	id, ts := last.h.Get("webhook-id"), last.h.Get("webhook-timestamp")
	var stamp int64
	for _, c := range ts {
		stamp = stamp*10 + int64(c-'0')
	}
	want, _ := webhook.Sign(e.Msg.GetSecret(), id, stamp, last.body)
	if last.h.Get("webhook-signature") != want || hits[0].h.Get("webhook-id") != id || !strings.Contains(string(last.body), `"type":"batch.completed"`) ||
		!strings.Contains(string(last.body), b.ID) {
		t.Fatalf("delivery: %v %s (want signature %s)", last.h, last.body, want)
	}
	ds, err := w.ListWebhookDeliveries(ctx, connect.NewRequest(&parleyv1.ListWebhookDeliveriesRequest{EndpointId: e.Msg.GetEndpoint().GetId()}))
	if err != nil || len(ds.Msg.GetDeliveries()) != 1 {
		t.Fatalf("deliveries: %v %v", ds, err)
	}
	d := ds.Msg.GetDeliveries()[0]
	if d.GetStatus() != parleyv1.WebhookDeliveryStatus_WEBHOOK_DELIVERY_STATUS_DELIVERED || d.GetAttempts() != 2 || d.GetLastStatusCode() != 200 {
		t.Fatalf("the delivery: %v", d)
	}
	if _, err := w.RedeliverWebhook(ctx, connect.NewRequest(&parleyv1.RedeliverWebhookRequest{EndpointId: d.GetEndpointId(), DeliveryId: d.GetId()})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the redelivery", func() bool { mu.Lock(); defer mu.Unlock(); return len(hits) >= 3 })
	mu.Lock()
	defer mu.Unlock()
	if hits[2].h.Get("webhook-id") != id {
		t.Fatalf("the redelivery's id %q, want %q", hits[2].h.Get("webhook-id"), id)
	}
}
