-- usage_records.end_user: the end user the API caller named in the request's
-- `user` field ('' when none), and an index to list one account's records of
-- one end user, newest first. The old index still serves the unfiltered list.
-- A constant default makes ADD COLUMN a catalogue-only change (PostgreSQL 11+).
ALTER TABLE usage_records ADD COLUMN end_user TEXT NOT NULL DEFAULT '';
CREATE INDEX usage_records_user_end_user ON usage_records(user_id, end_user, created_at DESC, request_id DESC);
