-- usage_records.cache_hit (and the outbox's): the answer was served from the
-- response cache, with no GPU work, at the model's cache-hit price.
ALTER TABLE usage_records ADD COLUMN cache_hit BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE usage_outbox ADD COLUMN cache_hit BOOLEAN NOT NULL DEFAULT FALSE;
