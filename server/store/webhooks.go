package store

import (
	"context"
	"time"
)

// WebhookEndpoint is a URL of a user's that receives events.
type WebhookEndpoint struct {
	ID, UserID string
	URL        string
	// Events are the event types it receives; all when empty.
	Events      []string
	Description string
	// Secret signs its deliveries (Standard Webhooks: "whsec_" + base64).
	Secret    string
	CreatedAt time.Time
}

// Receives reports whether the endpoint takes events of type typ.
func (e WebhookEndpoint) Receives(typ string) bool {
	if len(e.Events) == 0 {
		return true
	}
	for _, t := range e.Events {
		if t == typ {
			return true
		}
	}
	return false
}

// The states of a webhook delivery.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// WebhookDelivery is one event for one endpoint, and how its attempts
// went.
type WebhookDelivery struct {
	// ID is the event's id, sent as webhook-id ("evt_…"); unique per
	// endpoint.
	ID         string
	EndpointID string
	UserID     string
	Type       string
	Payload    string
	Status     string
	Attempts   int
	// LastStatusCode and LastError are the last attempt's.
	LastStatusCode int
	LastError      string
	CreatedAt      time.Time
	NextAttemptAt  time.Time
	DeliveredAt    time.Time
}

// DeliveryClaim is a gateway's claim on attempting a delivery: until Until
// no other claim is given, and only its Token records the attempt.
type DeliveryClaim struct {
	Delivery WebhookDelivery
	// URL and Secret are the endpoint's, read with the claim.
	URL, Secret string
	Token       string
	Until       time.Time
}

// Webhooks keeps webhook endpoints and their deliveries. Reads by the
// owner are scoped to a user (another user's endpoint is ErrNotFound); the
// delivery methods work on any user's under a claim.
type Webhooks interface {
	// CreateEndpoint stores e unless its user has max endpoints already
	// (ErrQuotaExceeded).
	CreateEndpoint(ctx context.Context, e WebhookEndpoint, max int) error
	// ListEndpoints returns the user's endpoints, newest first.
	ListEndpoints(ctx context.Context, userID string) ([]WebhookEndpoint, error)
	// DeleteEndpoint removes the user's endpoint and its deliveries.
	DeleteEndpoint(ctx context.Context, userID, id string) error
	// Enqueue records an event for each of the user's endpoints that
	// receives its type, pending from now, in one transaction; id is the
	// event's id, the same for every endpoint. It returns how many
	// deliveries it made (none when the user has no such endpoint).
	Enqueue(ctx context.Context, userID, id, typ, payload string, now time.Time) (int, error)
	// ClaimDeliveries claims up to limit pending deliveries of any user
	// whose next attempt is due and whose claim is free or lapsed, until
	// now+lease, the most overdue first.
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]DeliveryClaim, error)
	// FinishAttempt records an attempt of a claimed delivery: delivered
	// (status code 2xx), or failed with its code and error and tried again
	// at next (a zero next fails it for good). A claim no longer held is
	// ErrNotFound, and nothing changes.
	FinishAttempt(ctx context.Context, c DeliveryClaim, delivered bool, statusCode int, lastError string, now, next time.Time) error
	// ListDeliveries lists the deliveries to the user's endpoint, newest
	// first.
	ListDeliveries(ctx context.Context, userID, endpointID string, page PageRequest) ([]WebhookDelivery, string, error)
	// Redeliver makes the user's delivery pending again, due now, and
	// returns it.
	Redeliver(ctx context.Context, userID, endpointID, deliveryID string, now time.Time) (WebhookDelivery, error)
}
