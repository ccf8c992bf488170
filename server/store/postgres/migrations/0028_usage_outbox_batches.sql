-- A batch of usage_outbox rows handed to the Usage store is handed to it
-- again whole and unchanged until it is stored: ClickHouse's replicated
-- tables drop a retried INSERT only when its block is identical, and the
-- views that add records up per day count a record twice that comes again
-- in another block. batch is the batch a row was handed out in (NULL: not
-- yet), a value of usage_outbox_batches set on the batch's rows by one
-- statement that commits before they are shipped; the batches waiting are
-- found by usage_outbox_batched.
ALTER TABLE usage_outbox ADD COLUMN batch BIGINT;
CREATE SEQUENCE usage_outbox_batches;
CREATE INDEX usage_outbox_batched ON usage_outbox(batch) WHERE batch IS NOT NULL;
