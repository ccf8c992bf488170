-- The in-process limiter's buckets that are not full, saved about every
-- second and at shutdown, so that a restart (or a crash) of the embedded
-- gateway does not forgive the usage they count.
CREATE TABLE limiter_buckets (
  key       TEXT PRIMARY KEY,
  limit_n   INTEGER NOT NULL,
  window_ns INTEGER NOT NULL,
  tokens    INTEGER NOT NULL,
  frac      INTEGER NOT NULL,
  last_ns   INTEGER NOT NULL
) WITHOUT ROWID;
