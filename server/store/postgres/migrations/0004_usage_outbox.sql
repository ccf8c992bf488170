-- usage_outbox: the usage records Ledger.Settle committed with their charges
-- while the Usage store is elsewhere (ClickHouse), waiting for a relay to
-- copy them there; deleted once copied. seq orders them (oldest first); a
-- request's record is there once.
CREATE TABLE usage_outbox (
    seq               BIGSERIAL PRIMARY KEY,
    request_id        TEXT    NOT NULL UNIQUE,
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
    created_at        BIGINT  NOT NULL,
    end_user          TEXT    NOT NULL
);
