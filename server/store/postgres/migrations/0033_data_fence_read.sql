-- A read replica of a data cluster serves a shard's stale-tolerant
-- listings only while the shard is on its primary: data_fence_read(shard)
-- is data_fence without the row lock (a standby takes none), failing with
-- PRLSH once the replica has replayed a move's fence. A move deletes the
-- shard's data_shards row before it deletes the shard's rows, so a replica
-- that still shows the rows still shows the row too, and one that no
-- longer does sends the gateway to the shard map.
CREATE FUNCTION data_fence_read(s INT) RETURNS void LANGUAGE plpgsql STABLE AS $$
BEGIN
  PERFORM 1 FROM data_shards WHERE shard = s;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'data shard % is not on this database', s USING ERRCODE = 'PRLSH';
  END IF;
END $$;
