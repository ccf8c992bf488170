-- The vector index (store.VectorIndex) for a deployment on PostgreSQL
-- without Cassandra. Searches are exact and run in the gateways, over each
-- store's vectors read once and cached (server/store/vectorscan); these
-- tables keep the chunks and say when a cached copy is stale.
--
-- vector_index_stores has a row per vector store with chunks: gen, a value
-- of vector_index_gen that every write to the store's chunks (put, delete,
-- attribute change) sets afresh in its own transaction, so a gateway's
-- cached vectors are current exactly while the gen they were read at is;
-- and the store's chunk count and total length in terms, BM25's N and
-- average length. A write takes the row's lock first, so writes to one
-- store are serialised.
CREATE SEQUENCE vector_index_gen;

CREATE TABLE vector_index_stores (
  store_id  TEXT   PRIMARY KEY,
  gen       BIGINT NOT NULL,
  chunks    BIGINT NOT NULL DEFAULT 0,
  total_len BIGINT NOT NULL DEFAULT 0
);

-- The chunks: the embedding scaled to unit length (dims little-endian
-- float32s, stored uncompressed: floats do not compress), the file's
-- attributes, and len, the chunk's length in terms (store.TermCounts).
CREATE TABLE vector_chunks (
  store_id   TEXT    NOT NULL,
  id         TEXT    NOT NULL,
  file_id    TEXT    NOT NULL,
  ordinal    INTEGER NOT NULL,
  text       TEXT    NOT NULL,
  attributes JSONB   NOT NULL,
  dims       INTEGER NOT NULL,
  len        INTEGER NOT NULL,
  vector     BYTEA   NOT NULL,
  PRIMARY KEY (store_id, id)
);
ALTER TABLE vector_chunks ALTER COLUMN vector SET STORAGE EXTERNAL;
CREATE INDEX vector_chunks_file ON vector_chunks (store_id, file_id, ordinal);

-- The lexical index (SearchChunksText): a posting per store, term and chunk
-- holding it, with the term's count there (tf) and the chunk's length, all
-- BM25 needs without reading the chunk. Terms are store.TermCounts'.
CREATE TABLE vector_chunk_terms (
  store_id TEXT    NOT NULL,
  term     TEXT    NOT NULL,
  chunk_id TEXT    NOT NULL,
  tf       INTEGER NOT NULL,
  len      INTEGER NOT NULL,
  PRIMARY KEY (store_id, term, chunk_id)
);
CREATE INDEX vector_chunk_terms_chunk ON vector_chunk_terms (store_id, chunk_id);
