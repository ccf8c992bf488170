-- audit_log partitioned by month (of `at`, unix nanoseconds), so old months
-- can be detached and archived or dropped cheaply. The primary key must hold
-- the partition key: (id, at). An event is appended with its own time, so a
-- retried append (same id, same at) is still a no-op. Rows of a month with
-- no partition land in audit_log_default; EnsurePartitions (run by Migrate,
-- so at every `parley migrate` and `parley serve` start) makes this month's
-- and the next two months' partitions ahead of time.

ALTER TABLE audit_log RENAME TO audit_log_old;
ALTER INDEX audit_log_user RENAME TO audit_log_old_user;

CREATE TABLE audit_log (
    id         TEXT   NOT NULL,
    user_id    TEXT   NOT NULL,
    kind       TEXT   NOT NULL,
    ip         TEXT   NOT NULL,
    user_agent TEXT   NOT NULL,
    detail     TEXT   NOT NULL,
    at         BIGINT NOT NULL,
    PRIMARY KEY (id, at)
) PARTITION BY RANGE (at);
CREATE INDEX audit_log_user ON audit_log(user_id, at DESC, id DESC);
CREATE TABLE audit_log_default PARTITION OF audit_log DEFAULT;

INSERT INTO audit_log SELECT id, user_id, kind, ip, user_agent, detail, at FROM audit_log_old;
DROP TABLE audit_log_old;

-- parley_audit_partition makes the partition of the month starting at
-- month_start (UTC), unless it exists; it does nothing if the default
-- partition already holds rows of that month (they stay there).
CREATE FUNCTION parley_audit_partition(month_start timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    lo bigint := (extract(epoch FROM month_start) * 1000000000)::bigint;
    hi bigint := (extract(epoch FROM month_start + interval '1 month') * 1000000000)::bigint;
    name text := 'audit_log_' || to_char(month_start AT TIME ZONE 'UTC', 'YYYYMM');
BEGIN
    IF to_regclass(name) IS NOT NULL THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM audit_log_default WHERE at >= lo AND at < hi) THEN
        RETURN;
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF audit_log FOR VALUES FROM (%s) TO (%s)', name, lo, hi);
END $$;
