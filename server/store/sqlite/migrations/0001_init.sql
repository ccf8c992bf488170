-- Parley's embedded schema. Times are INTEGER unix nanoseconds (UTC), money is
-- INTEGER nano-USD, booleans are INTEGER 0/1. STRICT tables refuse a value of
-- the wrong type, so an overflowing sum can never be stored as a REAL.

CREATE TABLE users (
    id            TEXT    PRIMARY KEY,
    email         TEXT    NOT NULL,
    email_key     TEXT    NOT NULL UNIQUE, -- lower-cased email, for case-insensitive uniqueness
    display_name  TEXT    NOT NULL,
    password_hash TEXT    NOT NULL,
    tier          TEXT    NOT NULL,
    admin         INTEGER NOT NULL,
    created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE sessions (
    token_hash BLOB    PRIMARY KEY,
    user_id    TEXT    NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    ip         TEXT    NOT NULL,
    user_agent TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expires ON sessions(expires_at);

CREATE TABLE api_keys (
    id           TEXT    PRIMARY KEY,
    user_id      TEXT    NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    prefix       TEXT    NOT NULL,
    secret_hash  BLOB    NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
) STRICT;
CREATE INDEX api_keys_user ON api_keys(user_id, created_at DESC, id DESC);

CREATE TABLE conversations (
    id         TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title      TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    archived   INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX conversations_list ON conversations(user_id, archived, updated_at DESC, id DESC);
CREATE INDEX conversations_list_all ON conversations(user_id, updated_at DESC, id DESC);

-- No foreign key to conversations: messages may live in another backend.
CREATE TABLE messages (
    id              TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL,
    role            TEXT    NOT NULL,
    parts           TEXT    NOT NULL, -- JSON array of parts
    model           TEXT    NOT NULL,
    tokens          INTEGER NOT NULL,
    finish_reason   TEXT    NOT NULL,
    created_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX messages_conversation ON messages(conversation_id, created_at, id);

CREATE TABLE billing_accounts (
    user_id         TEXT    PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    available_nanos INTEGER NOT NULL CHECK (available_nanos >= 0),
    reserved_nanos  INTEGER NOT NULL CHECK (reserved_nanos >= 0)
) STRICT, WITHOUT ROWID;

CREATE TABLE ledger_adjustments (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     TEXT    NOT NULL,
    delta_nanos INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    at          INTEGER NOT NULL
) STRICT;
CREATE INDEX ledger_adjustments_user ON ledger_adjustments(user_id, at);

CREATE TABLE reservations (
    id             TEXT    PRIMARY KEY,
    user_id        TEXT    NOT NULL REFERENCES billing_accounts(user_id) ON DELETE CASCADE,
    amount_nanos   INTEGER NOT NULL CHECK (amount_nanos > 0),
    status         TEXT    NOT NULL CHECK (status IN ('held', 'settled', 'released')),
    charged_nanos  INTEGER NOT NULL DEFAULT 0,
    refunded_nanos INTEGER NOT NULL DEFAULT 0,
    late           INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    closed_at      INTEGER
) STRICT;
CREATE INDEX reservations_held ON reservations(expires_at) WHERE status = 'held';

-- No foreign key to users: usage rows are analytics (ClickHouse at scale).
CREATE TABLE usage_records (
    request_id        TEXT    PRIMARY KEY,
    user_id           TEXT    NOT NULL,
    api_key_id        TEXT    NOT NULL,
    channel           TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens     INTEGER NOT NULL,
    estimated         INTEGER NOT NULL,
    cost_nanos        INTEGER NOT NULL,
    finish_reason     TEXT    NOT NULL,
    created_at        INTEGER NOT NULL
) STRICT;
CREATE INDEX usage_records_user ON usage_records(user_id, created_at DESC, request_id DESC);

CREATE TABLE attachments (
    id             TEXT    PRIMARY KEY,
    user_id        TEXT    NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    filename       TEXT    NOT NULL,
    mime_type      TEXT    NOT NULL,
    size_bytes     INTEGER NOT NULL CHECK (size_bytes >= 0),
    sha256         TEXT    NOT NULL,
    status         TEXT    NOT NULL CHECK (status IN ('uploading', 'ready', 'failed')),
    failure_reason TEXT    NOT NULL,
    width          INTEGER NOT NULL,
    height         INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER
) STRICT;
CREATE INDEX attachments_user ON attachments(user_id, status);

-- No foreign key to users: the audit log outlives the accounts it mentions.
CREATE TABLE audit_log (
    id         TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    ip         TEXT    NOT NULL,
    user_agent TEXT    NOT NULL,
    detail     TEXT    NOT NULL,
    at         INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_log_user ON audit_log(user_id, at DESC, id DESC);
