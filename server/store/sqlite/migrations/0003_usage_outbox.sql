-- usage_outbox: the usage records Ledger.Settle committed with their charges
-- while the Usage store is elsewhere (ClickHouse), waiting for the relay to
-- copy them there; deleted once copied. seq orders them (oldest first); a
-- request's record is there once.
CREATE TABLE usage_outbox (
    seq               INTEGER PRIMARY KEY,
    request_id        TEXT    NOT NULL UNIQUE,
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
    created_at        INTEGER NOT NULL,
    end_user          TEXT    NOT NULL
) STRICT;
