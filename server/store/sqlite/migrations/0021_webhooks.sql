-- Webhook endpoints (store.Webhooks) and their deliveries: one row per
-- event and endpoint, attempted by whichever gateway claims it (a random
-- token until claim_until, Unix nanoseconds) once next_attempt_at is due.
CREATE TABLE webhook_endpoints (
  id          TEXT    PRIMARY KEY,
  user_id     TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  url         TEXT    NOT NULL,
  events      TEXT    NOT NULL,
  description TEXT    NOT NULL,
  secret      TEXT    NOT NULL,
  created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_endpoints_user ON webhook_endpoints (user_id, created_at);

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
  created_at       INTEGER NOT NULL,
  next_attempt_at  INTEGER NOT NULL,
  delivered_at     INTEGER,
  claim_token      TEXT    NOT NULL DEFAULT '',
  claim_until      INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (endpoint_id, id)
) STRICT;
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (endpoint_id, created_at, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
