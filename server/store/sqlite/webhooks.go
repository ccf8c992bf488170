package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/server/store"
)

type webhooks struct{ db *DB }

const endpointCols = `id, user_id, url, events, description, secret, created_at`

func scanEndpoint(r interface{ Scan(...any) error }) (store.WebhookEndpoint, error) {
	var e store.WebhookEndpoint
	var events string
	var created int64
	if err := r.Scan(&e.ID, &e.UserID, &e.URL, &events, &e.Description, &e.Secret, &created); err != nil {
		return e, err
	}
	e.CreatedAt = fromTS(created)
	return e, json.Unmarshal([]byte(events), &e.Events)
}

func (w webhooks) CreateEndpoint(ctx context.Context, e store.WebhookEndpoint, max int) error {
	events, err := json.Marshal(orEmptySlice(e.Events))
	if err != nil {
		return err
	}
	res, err := w.db.exec(ctx, `INSERT INTO webhook_endpoints (`+endpointCols+`)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE (SELECT count(*) FROM webhook_endpoints WHERE user_id = ?2) < ?8`,
		e.ID, e.UserID, e.URL, string(events), e.Description, e.Secret, ts(e.CreatedAt), max)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: the user has %d webhook endpoints already", store.ErrQuotaExceeded, max)
	}
	return nil
}

func orEmptySlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (w webhooks) ListEndpoints(ctx context.Context, userID string) ([]store.WebhookEndpoint, error) {
	return readRows(ctx, w.db, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE user_id = ? ORDER BY created_at DESC, id DESC`,
		[]any{userID}, func(r *sql.Rows) (store.WebhookEndpoint, error) { return scanEndpoint(r) })
}

func (w webhooks) DeleteEndpoint(ctx context.Context, userID, id string) error {
	res, err := w.db.exec(ctx, `DELETE FROM webhook_endpoints WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return err
	}
	return affectedOne(res, "webhook endpoint")
}

func (w webhooks) Enqueue(ctx context.Context, userID, id, typ, payload string, now time.Time) (int, error) {
	n := 0
	err := w.db.write(ctx, func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE user_id = ?`, userID)
		if err != nil {
			return err
		}
		var targets []string
		for rows.Next() {
			e, err := scanEndpoint(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if e.Receives(typ) {
				targets = append(targets, e.ID)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n = 0
		for _, ep := range targets {
			res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, user_id, type, payload, status, created_at, next_attempt_at)
				VALUES (?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT DO NOTHING`, id, ep, userID, typ, payload, ts(now), ts(now))
			if err != nil {
				return err
			}
			// An event enqueued before makes no second delivery.
			made, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += int(made)
		}
		return nil
	})
	return n, err
}

const deliveryCols = `d.id, d.endpoint_id, d.user_id, d.type, d.payload, d.status, d.attempts, d.last_status_code, d.last_error,
	d.created_at, d.next_attempt_at, d.delivered_at`

// deliveryReturning is deliveryCols unqualified: SQLite's RETURNING takes
// no table names.
const deliveryReturning = `id, endpoint_id, user_id, type, payload, status, attempts, last_status_code, last_error,
	created_at, next_attempt_at, delivered_at`

func scanDelivery(r interface{ Scan(...any) error }, extra ...any) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	var created, next int64
	var delivered sql.NullInt64
	dest := append([]any{&d.ID, &d.EndpointID, &d.UserID, &d.Type, &d.Payload, &d.Status, &d.Attempts, &d.LastStatusCode, &d.LastError,
		&created, &next, &delivered}, extra...)
	if err := r.Scan(dest...); err != nil {
		return d, err
	}
	d.CreatedAt, d.NextAttemptAt, d.DeliveredAt = fromTS(created), fromTS(next), fromNullTS(delivered)
	return d, nil
}

func (w webhooks) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.DeliveryClaim, error) {
	var out []store.DeliveryClaim
	err := w.db.write(ctx, func(tx *txn) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `SELECT `+deliveryCols+`, e.url, e.secret FROM webhook_deliveries d
			JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND d.claim_until <= ? ORDER BY d.next_attempt_at LIMIT ?`, ts(now), ts(now), limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c store.DeliveryClaim
			if c.Delivery, err = scanDelivery(rows, &c.URL, &c.Secret); err != nil {
				rows.Close()
				return err
			}
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range out {
			out[i].Token, out[i].Until = uuid.NewString(), now.Add(lease)
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET claim_token = ?, claim_until = ? WHERE endpoint_id = ? AND id = ?`,
				out[i].Token, ts(out[i].Until), out[i].Delivery.EndpointID, out[i].Delivery.ID); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func (w webhooks) FinishAttempt(ctx context.Context, c store.DeliveryClaim, delivered bool, statusCode int, lastError string, now, next time.Time) error {
	status, nextAt, deliveredAt := store.DeliveryPending, ts(next), any(nil)
	switch {
	case delivered:
		status, nextAt, deliveredAt = store.DeliveryDelivered, ts(now), ts(now)
	case next.IsZero():
		status, nextAt = store.DeliveryFailed, ts(now)
	}
	res, err := w.db.exec(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_status_code = ?, last_error = ?,
		next_attempt_at = ?, delivered_at = coalesce(?, delivered_at), claim_token = '', claim_until = 0
		WHERE endpoint_id = ? AND id = ? AND claim_token = ? AND claim_token <> ''`,
		status, statusCode, lastError, nextAt, deliveredAt, c.Delivery.EndpointID, c.Delivery.ID, c.Token)
	if err != nil {
		return err
	}
	return affectedOne(res, "delivery claim")
}

func (w webhooks) ListDeliveries(ctx context.Context, userID, endpointID string, p store.PageRequest) ([]store.WebhookDelivery, string, error) {
	limit := p.Limit()
	q, args := `SELECT `+deliveryCols+` FROM webhook_deliveries d WHERE d.endpoint_id = ? AND d.user_id = ?`, []any{endpointID, userID}
	if p.Cursor != "" {
		at, id, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q, args = q+` AND (d.created_at, d.id) < (?, ?)`, append(args, at, id)
	}
	out, err := readRows(ctx, w.db, q+` ORDER BY d.created_at DESC, d.id DESC LIMIT ?`, append(args, limit+1), func(r *sql.Rows) (store.WebhookDelivery, error) {
		return scanDelivery(r)
	})
	if err != nil {
		return nil, "", err
	}
	out, next := store.Page(out, limit, func(d store.WebhookDelivery) (int64, string) { return ts(d.CreatedAt), d.ID })
	return out, next, nil
}

func (w webhooks) Redeliver(ctx context.Context, userID, endpointID, deliveryID string, now time.Time) (store.WebhookDelivery, error) {
	d, err := scanDelivery(w.db.w.QueryRowContext(ctx, `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, claim_token = '', claim_until = 0
		WHERE endpoint_id = ? AND id = ? AND user_id = ? RETURNING `+deliveryReturning, ts(now), endpointID, deliveryID, userID))
	return d, notFound(err, "webhook delivery")
}
