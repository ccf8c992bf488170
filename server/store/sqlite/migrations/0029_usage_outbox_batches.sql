-- A batch of usage_outbox rows handed to the Usage store is handed to it
-- again whole and unchanged until it is stored: ClickHouse's replicated
-- tables drop a retried INSERT only when its block is identical, and the
-- views that add records up per day count a record twice that comes again
-- in another block. batch is the batch a row was handed out in (NULL: not
-- yet), the seq of the batch's first row, set on the batch's rows in a
-- transaction that commits before they are shipped; the batch waiting is
-- found by usage_outbox_batched.
ALTER TABLE usage_outbox ADD COLUMN batch INTEGER;
CREATE INDEX usage_outbox_batched ON usage_outbox(batch) WHERE batch IS NOT NULL;
