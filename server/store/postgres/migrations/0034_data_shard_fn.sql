-- data_shard(user_id) is postgres.DataShard in SQL: FNV-1a (32 bits) of the
-- ID's UTF-8 bytes, modulo 64. The sweeps that span users on a data cluster
-- (expired and unreferenced uploads, expired vector stores, ingestion
-- claims, rating counts) keep to the shards the cluster holds
-- (data_shards), so that a shard being moved away, whose rows stay until
-- the move deletes them, is swept only where it now lives.
CREATE FUNCTION data_shard(u TEXT) RETURNS INT LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  h BIGINT := 2166136261;
  b BYTEA := convert_to(u, 'UTF8');
BEGIN
  FOR i IN 0 .. length(b) - 1 LOOP
    h := ((h # get_byte(b, i)) * 16777619) & 4294967295;
  END LOOP;
  RETURN (h % 64)::INT;
END $$;
