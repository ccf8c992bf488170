-- usage_records.requested_model (and the outbox's): the name the client asked
-- for when it was an alias of the model that served it (model); empty when
-- the client named the model itself.
ALTER TABLE usage_records ADD COLUMN requested_model TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_outbox ADD COLUMN requested_model TEXT NOT NULL DEFAULT '';
