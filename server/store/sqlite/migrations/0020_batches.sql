-- Batches (store.Batches): a file of requests run on idle capacity, and its
-- lines. A batch is claimed by one gateway at a time with a random token
-- until claim_until (Unix nanoseconds); a claim that lapses is given again,
-- so a gateway that dies mid-batch leaves it to another. A line is done once:
-- its result (the output or error file's line) is written with the batch's
-- counts in one transaction.
CREATE TABLE batches (
  id                TEXT    PRIMARY KEY,
  user_id           TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  api_key_id        TEXT    NOT NULL,
  endpoint          TEXT    NOT NULL,
  input_file_id     TEXT    NOT NULL,
  completion_window TEXT    NOT NULL,
  status            TEXT    NOT NULL,
  output_file_id    TEXT    NOT NULL DEFAULT '',
  error_file_id     TEXT    NOT NULL DEFAULT '',
  metadata          TEXT    NOT NULL,
  errors            TEXT    NOT NULL DEFAULT '[]',
  total             INTEGER NOT NULL DEFAULT 0,
  completed         INTEGER NOT NULL DEFAULT 0,
  failed            INTEGER NOT NULL DEFAULT 0,
  cost_nanos        INTEGER NOT NULL DEFAULT 0,
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL,
  in_progress_at    INTEGER,
  finalizing_at     INTEGER,
  completed_at      INTEGER,
  failed_at         INTEGER,
  expired_at        INTEGER,
  cancelling_at     INTEGER,
  cancelled_at      INTEGER,
  claim_token       TEXT    NOT NULL DEFAULT '',
  claim_until       INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX batches_user ON batches (user_id, created_at, id);
CREATE INDEX batches_open ON batches (claim_until, created_at)
  WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

CREATE TABLE batch_lines (
  batch_id  TEXT    NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  idx       INTEGER NOT NULL,
  custom_id TEXT    NOT NULL,
  body      TEXT    NOT NULL,
  done      INTEGER NOT NULL DEFAULT 0,
  failed    INTEGER NOT NULL DEFAULT 0,
  result    TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (batch_id, idx)
) STRICT;
CREATE INDEX batch_lines_pending ON batch_lines (batch_id, idx) WHERE done = 0;
