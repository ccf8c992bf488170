-- usage_records.cache_hit (and the outbox's): 1 when the answer was served
-- from the response cache, with no GPU work, at the model's cache-hit price.
ALTER TABLE usage_records ADD COLUMN cache_hit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_outbox ADD COLUMN cache_hit INTEGER NOT NULL DEFAULT 0;
