-- Webhook endpoints (store.Webhooks) and their deliveries: one row per
-- event and endpoint, attempted by whichever gateway claims it (a random
-- token until claim_until, Unix nanoseconds) once next_attempt_at is due.
-- Gateways claiming at once take different rows (FOR UPDATE SKIP LOCKED);
-- a claim that lapses is given again. events is a JSON array of types
-- (all when empty).
CREATE TABLE webhook_endpoints (
  id          TEXT   PRIMARY KEY,
  user_id     TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  url         TEXT   NOT NULL,
  events      TEXT   NOT NULL,
  description TEXT   NOT NULL,
  secret      TEXT   NOT NULL,
  created_at  BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_user ON webhook_endpoints (user_id, created_at, id);

CREATE TABLE webhook_deliveries (
  id               TEXT    NOT NULL,
  endpoint_id      TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  user_id          TEXT    NOT NULL,
  type             TEXT    NOT NULL,
  payload          TEXT    NOT NULL,
  status           TEXT    NOT NULL,
  attempts         INTEGER NOT NULL DEFAULT 0,
  last_status_code INTEGER NOT NULL DEFAULT 0,
  last_error       TEXT    NOT NULL DEFAULT '',
  created_at       BIGINT  NOT NULL,
  next_attempt_at  BIGINT  NOT NULL,
  delivered_at     BIGINT,
  claim_token      TEXT    NOT NULL DEFAULT '',
  claim_until      BIGINT  NOT NULL DEFAULT 0,
  PRIMARY KEY (endpoint_id, id)
);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (endpoint_id, created_at, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
