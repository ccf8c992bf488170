-- Vector stores (store.VectorStores) and the ingestion state of their files.
-- A file row is claimed for ingestion by a random token until claim_until
-- (Unix nanoseconds); a claim that lapses is given again (FOR UPDATE SKIP
-- LOCKED, so gateways claiming at once take different files), so a gateway
-- that dies mid-file leaves the file to another. expires_at is
-- last_active_at plus expires_after (NULL when the store does not expire),
-- for the sweep. The chunks live in the vector index, not here.
CREATE TABLE vector_stores (
  id              TEXT   PRIMARY KEY,
  user_id         TEXT   NOT NULL,
  name            TEXT   NOT NULL,
  metadata        TEXT   NOT NULL,
  embedding_model TEXT   NOT NULL,
  expires_after   BIGINT NOT NULL,
  created_at      BIGINT NOT NULL,
  last_active_at  BIGINT NOT NULL,
  expires_at      BIGINT
);
CREATE INDEX vector_stores_user ON vector_stores (user_id, created_at, id);
CREATE INDEX vector_stores_expires ON vector_stores (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE vector_store_files (
  store_id       TEXT    NOT NULL REFERENCES vector_stores (id) ON DELETE CASCADE,
  file_id        TEXT    NOT NULL,
  user_id        TEXT    NOT NULL,
  status         TEXT    NOT NULL,
  last_error     TEXT    NOT NULL,
  attributes     TEXT    NOT NULL,
  chunk_tokens   INTEGER NOT NULL,
  overlap_tokens INTEGER NOT NULL,
  usage_bytes    BIGINT  NOT NULL,
  chunks         INTEGER NOT NULL,
  created_at     BIGINT  NOT NULL,
  batch_id       TEXT    NOT NULL,
  claim_token    TEXT    NOT NULL,
  claim_until    BIGINT  NOT NULL,
  PRIMARY KEY (store_id, file_id)
);
CREATE INDEX vector_store_files_list ON vector_store_files (store_id, created_at, file_id);
CREATE INDEX vector_store_files_file ON vector_store_files (user_id, file_id);
CREATE INDEX vector_store_files_waiting ON vector_store_files (claim_until, created_at) WHERE status = 'in_progress';
