package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parleyhq/parley/server/store"
)

type webhooks struct{ db *DB }

const endpointCols = `id, user_id, url, events, description, secret, created_at`

func scanEndpoint(r pgx.Row) (store.WebhookEndpoint, error) {
	var e store.WebhookEndpoint
	var events string
	var created int64
	if err := r.Scan(&e.ID, &e.UserID, &e.URL, &events, &e.Description, &e.Secret, &created); err != nil {
		return e, err
	}
	e.CreatedAt = fromTS(created)
	if err := json.Unmarshal([]byte(events), &e.Events); err != nil {
		return e, fmt.Errorf("postgres: webhook endpoint %s events: %w", e.ID, err)
	}
	return e, nil
}

func (w webhooks) CreateEndpoint(ctx context.Context, e store.WebhookEndpoint, max int) error {
	ev := e.Events
	if ev == nil {
		ev = []string{}
	}
	events, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var inserted bool
	err = pgx.BeginFunc(ctx, w.db.pool, func(tx pgx.Tx) error {
		// The user's row lock serialises the count of one user's endpoints
		// across every gateway (as for memories).
		if _, err := tx.Exec(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, e.UserID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO webhook_endpoints (`+endpointCols+`)
			SELECT $1, $2, $3, $4, $5, $6, $7
			WHERE (SELECT count(*) FROM webhook_endpoints WHERE user_id = $2) < $8::bigint`,
			e.ID, e.UserID, e.URL, string(events), e.Description, e.Secret, ts(e.CreatedAt), int64(max))
		inserted = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return mapErr(err)
	}
	if !inserted {
		return fmt.Errorf("%w: the user has %d webhook endpoints already", store.ErrQuotaExceeded, max)
	}
	return nil
}

func (w webhooks) ListEndpoints(ctx context.Context, userID string) ([]store.WebhookEndpoint, error) {
	out, err := readRows(ctx, w.db, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE user_id = $1 ORDER BY created_at DESC, id DESC`,
		[]any{userID}, func(r pgx.Rows) (store.WebhookEndpoint, error) { return scanEndpoint(r) })
	return out, mapErr(err)
}

func (w webhooks) DeleteEndpoint(ctx context.Context, userID, id string) error {
	tag, err := w.db.exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(tag, "webhook endpoint")
}

// Enqueue is one statement: a delivery for each of the user's endpoints
// whose events are empty or hold typ; an endpoint that has the event
// already (the same id) gets none.
func (w webhooks) Enqueue(ctx context.Context, userID, id, typ, payload string, now time.Time) (int, error) {
	tag, err := w.db.exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, user_id, type, payload, status, created_at, next_attempt_at)
		SELECT $1, e.id, e.user_id, $3, $4, 'pending', $5, $5 FROM webhook_endpoints e
		WHERE e.user_id = $2 AND (e.events::jsonb = '[]'::jsonb OR e.events::jsonb @> jsonb_build_array($3::text))
		ON CONFLICT (endpoint_id, id) DO NOTHING`, id, userID, typ, payload, ts(now))
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

const deliveryCols = `d.id, d.endpoint_id, d.user_id, d.type, d.payload, d.status, d.attempts, d.last_status_code, d.last_error,
	d.created_at, d.next_attempt_at, d.delivered_at`

func scanDelivery(r pgx.Row, extra ...any) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	var created, next int64
	var delivered *int64
	dest := append([]any{&d.ID, &d.EndpointID, &d.UserID, &d.Type, &d.Payload, &d.Status, &d.Attempts, &d.LastStatusCode, &d.LastError,
		&created, &next, &delivered}, extra...)
	if err := r.Scan(dest...); err != nil {
		return d, err
	}
	d.CreatedAt, d.NextAttemptAt, d.DeliveredAt = fromTS(created), fromTS(next), fromNullTS(delivered)
	return d, nil
}

// ClaimDeliveries locks the due rows it takes with SKIP LOCKED, so
// gateways claiming at once take different ones; a row claimed by a
// transaction that committed meanwhile fails the recheck of claim_until.
func (w webhooks) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.DeliveryClaim, error) {
	until := now.Add(lease)
	rows, err := w.db.pool.Query(ctx, `WITH c AS (
			SELECT endpoint_id, id FROM webhook_deliveries
			WHERE status = 'pending' AND next_attempt_at <= $1 AND claim_until <= $1
			ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED
		)
		UPDATE webhook_deliveries d SET claim_token = gen_random_uuid()::text, claim_until = $2
		FROM c, webhook_endpoints e
		WHERE d.endpoint_id = c.endpoint_id AND d.id = c.id AND e.id = d.endpoint_id
		RETURNING `+deliveryCols+`, e.url, e.secret, d.claim_token`, ts(now), ts(until), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collectRows(rows, func(r pgx.Rows) (store.DeliveryClaim, error) {
		c := store.DeliveryClaim{Until: until}
		var err error
		c.Delivery, err = scanDelivery(r, &c.URL, &c.Secret, &c.Token)
		return c, err
	})
	if err != nil {
		return nil, mapErr(err)
	}
	// RETURNING keeps no order: the most overdue first.
	slices.SortStableFunc(out, func(a, b store.DeliveryClaim) int { return a.Delivery.NextAttemptAt.Compare(b.Delivery.NextAttemptAt) })
	return out, nil
}

func (w webhooks) FinishAttempt(ctx context.Context, c store.DeliveryClaim, delivered bool, statusCode int, lastError string, now, next time.Time) error {
	status, nextAt, deliveredAt := store.DeliveryPending, ts(next), (*int64)(nil)
	switch {
	case delivered:
		status, nextAt, deliveredAt = store.DeliveryDelivered, ts(now), nullTS(now)
	case next.IsZero():
		status, nextAt = store.DeliveryFailed, ts(now)
	}
	tag, err := w.db.exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, last_status_code = $2, last_error = $3,
		next_attempt_at = $4, delivered_at = coalesce($5::bigint, delivered_at), claim_token = '', claim_until = 0
		WHERE endpoint_id = $6 AND id = $7 AND claim_token = $8 AND claim_token <> ''`,
		status, statusCode, lastError, nextAt, deliveredAt, c.Delivery.EndpointID, c.Delivery.ID, c.Token)
	if err != nil {
		return err
	}
	return affectedOne(tag, "delivery claim")
}

func (w webhooks) ListDeliveries(ctx context.Context, userID, endpointID string, p store.PageRequest) ([]store.WebhookDelivery, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+deliveryCols+` FROM webhook_deliveries d WHERE d.endpoint_id = $1 AND d.user_id = $2`, []any{endpointID, userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (d.created_at, d.id) < ($3, $4)`, append(args, at, id)
	}
	q += fmt.Sprintf(` ORDER BY d.created_at DESC, d.id DESC LIMIT %d`, limit+1)
	out, err := readRows(ctx, w.db, q, args, func(r pgx.Rows) (store.WebhookDelivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, next := store.Page(out, limit, func(d store.WebhookDelivery) (int64, string) { return ts(d.CreatedAt), d.ID })
	return out, next, nil
}

func (w webhooks) Redeliver(ctx context.Context, userID, endpointID, deliveryID string, now time.Time) (store.WebhookDelivery, error) {
	d, err := scanDelivery(w.db.pool.QueryRow(ctx, `UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = $1, claim_token = '', claim_until = 0
		WHERE d.endpoint_id = $2 AND d.id = $3 AND d.user_id = $4 RETURNING `+deliveryCols, ts(now), endpointID, deliveryID, userID))
	if err != nil {
		return store.WebhookDelivery{}, notFound(err, "webhook delivery")
	}
	return d, nil
}
