-- Moving a logical data shard between data clusters while gateways run
-- (postgres.DB.MoveDataShard), as 0030 does for the ledger. data_shards
-- lists the logical shards (0–63) a database may hold users' data of; a
-- database holds all of them until a move takes one away. Every statement
-- of a gateway with several data clusters first calls data_fence(shard)
-- in its transaction: it holds the shard's row FOR SHARE to the end of
-- that transaction, so a move (which deletes the row) waits for the
-- statements in flight and every later one there fails with SQLSTATE
-- PRLSH, on which a gateway reads the shard map again. data_shard_map,
-- read in the accounts database (the first of --postgres-url), says where
-- each shard lives: written at the first start with several clusters, then
-- changed only by moves.
CREATE TABLE data_shards (shard INT PRIMARY KEY);
INSERT INTO data_shards SELECT generate_series(0, 63);
CREATE TABLE data_shard_map (
  shard   INT PRIMARY KEY CHECK (shard BETWEEN 0 AND 63),
  cluster INT NOT NULL CHECK (cluster >= 0)
);
CREATE FUNCTION data_fence(s INT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM data_shards WHERE shard = s FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'data shard % is not on this database', s USING ERRCODE = 'PRLSH';
  END IF;
END $$;
