-- Parley's PostgreSQL schema (scale mode). Times are BIGINT unix nanoseconds
-- (UTC) like the embedded schema, so cursors and ordering are the same on
-- every backend and no precision is lost; money is BIGINT nano-USD.

CREATE TABLE users (
    id            TEXT    PRIMARY KEY,
    email         TEXT    NOT NULL,
    email_key     TEXT    NOT NULL UNIQUE, -- lower-cased email, for case-insensitive uniqueness
    display_name  TEXT    NOT NULL,
    password_hash TEXT    NOT NULL,
    tier          TEXT    NOT NULL,
    admin         BOOLEAN NOT NULL,
    created_at    BIGINT  NOT NULL
);

CREATE TABLE sessions (
    token_hash BYTEA  PRIMARY KEY,
    user_id    TEXT   NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    ip         TEXT   NOT NULL,
    user_agent TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expires ON sessions(expires_at);

CREATE TABLE api_keys (
    id           TEXT   PRIMARY KEY,
    user_id      TEXT   NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT   NOT NULL,
    prefix       TEXT   NOT NULL,
    secret_hash  BYTEA  NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);
CREATE INDEX api_keys_user ON api_keys(user_id, created_at DESC, id DESC);

CREATE TABLE conversations (
    id         TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title      TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    archived   BOOLEAN NOT NULL,
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL
);
CREATE INDEX conversations_list ON conversations(user_id, archived, updated_at DESC, id DESC);
CREATE INDEX conversations_list_all ON conversations(user_id, updated_at DESC, id DESC);

-- Messages live here only in a PostgreSQL-only deployment (the scale model
-- puts them in a CQL store); no foreign key for the same reason.
CREATE TABLE messages (
    conversation_id TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,
    id              TEXT   NOT NULL,
    role            TEXT   NOT NULL,
    parts           TEXT   NOT NULL, -- JSON array of parts
    model           TEXT   NOT NULL,
    tokens          BIGINT NOT NULL,
    finish_reason   TEXT   NOT NULL,
    PRIMARY KEY (conversation_id, created_at, id)
);
CREATE UNIQUE INDEX messages_id ON messages(conversation_id, id);

CREATE TABLE billing_accounts (
    user_id         TEXT   PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    available_nanos BIGINT NOT NULL CHECK (available_nanos >= 0),
    reserved_nanos  BIGINT NOT NULL CHECK (reserved_nanos >= 0)
);

CREATE TABLE ledger_adjustments (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     TEXT   NOT NULL,
    delta_nanos BIGINT NOT NULL,
    reason      TEXT   NOT NULL,
    at          BIGINT NOT NULL
);
CREATE INDEX ledger_adjustments_user ON ledger_adjustments(user_id, at);

CREATE TABLE reservations (
    id             TEXT    PRIMARY KEY,
    user_id        TEXT    NOT NULL REFERENCES billing_accounts(user_id) ON DELETE CASCADE,
    amount_nanos   BIGINT  NOT NULL CHECK (amount_nanos > 0),
    status         TEXT    NOT NULL CHECK (status IN ('held', 'settled', 'released')),
    charged_nanos  BIGINT  NOT NULL DEFAULT 0,
    refunded_nanos BIGINT  NOT NULL DEFAULT 0,
    late           BOOLEAN NOT NULL DEFAULT false,
    created_at     BIGINT  NOT NULL,
    expires_at     BIGINT  NOT NULL,
    closed_at      BIGINT
);
CREATE INDEX reservations_held ON reservations(expires_at) WHERE status = 'held';

-- Usage rows are analytics (ClickHouse at scale); kept here for a
-- PostgreSQL-only deployment.
CREATE TABLE usage_records (
    request_id        TEXT    PRIMARY KEY,
    user_id           TEXT    NOT NULL,
    api_key_id        TEXT    NOT NULL,
    channel           TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    prompt_tokens     BIGINT  NOT NULL,
    completion_tokens BIGINT  NOT NULL,
    cached_tokens     BIGINT  NOT NULL,
    estimated         BOOLEAN NOT NULL,
    cost_nanos        BIGINT  NOT NULL,
    finish_reason     TEXT    NOT NULL,
    created_at        BIGINT  NOT NULL
);
CREATE INDEX usage_records_user ON usage_records(user_id, created_at DESC, request_id DESC);

CREATE TABLE attachments (
    id             TEXT    PRIMARY KEY,
    user_id        TEXT    NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    filename       TEXT    NOT NULL,
    mime_type      TEXT    NOT NULL,
    size_bytes     BIGINT  NOT NULL CHECK (size_bytes >= 0),
    sha256         TEXT    NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN ('uploading', 'ready', 'failed')),
    failure_reason TEXT    NOT NULL,
    width          INTEGER NOT NULL,
    height         INTEGER NOT NULL,
    created_at     BIGINT  NOT NULL,
    expires_at     BIGINT
);
CREATE INDEX attachments_user ON attachments(user_id, status);

-- No foreign key to users: the audit log outlives the accounts it mentions.
CREATE TABLE audit_log (
    id         TEXT   PRIMARY KEY,
    user_id    TEXT   NOT NULL,
    kind       TEXT   NOT NULL,
    ip         TEXT   NOT NULL,
    user_agent TEXT   NOT NULL,
    detail     TEXT   NOT NULL,
    at         BIGINT NOT NULL
);
CREATE INDEX audit_log_user ON audit_log(user_id, at DESC, id DESC);
