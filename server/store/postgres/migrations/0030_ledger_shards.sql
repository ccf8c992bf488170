-- Moving a logical ledger shard between billing clusters while gateways
-- run (postgres.DB.MoveLedgerShard). ledger_shards lists the logical shards
-- (0–31) a database may write; a database owns all of them until a move
-- takes one away. Every write of a sharded ledger first calls
-- ledger_fence(shard) in its transaction: it holds the shard's row FOR SHARE
-- to the end of that transaction, so a move (which deletes the row) waits
-- for the writes in flight and every later write there fails with SQLSTATE
-- PRLSH, on which a gateway reads the shard map again. ledger_shard_map,
-- read in the users' database, says where each shard lives (written at
-- the first start with several clusters, then changed only by moves), and
-- ledger_cluster, in each billing database, its place in
-- --billing-postgres-url, so that a reordered list is refused.
CREATE TABLE ledger_shards (shard INT PRIMARY KEY);
INSERT INTO ledger_shards SELECT generate_series(0, 31);
CREATE TABLE ledger_shard_map (
  shard   INT PRIMARY KEY CHECK (shard BETWEEN 0 AND 31),
  cluster INT NOT NULL CHECK (cluster >= 0)
);
CREATE TABLE ledger_cluster (place INT PRIMARY KEY CHECK (place >= 0));
CREATE UNIQUE INDEX ledger_cluster_one ON ledger_cluster ((true));
CREATE FUNCTION ledger_fence(s INT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM ledger_shards WHERE shard = s FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'ledger shard % is not on this database', s USING ERRCODE = 'PRLSH';
  END IF;
END $$;
