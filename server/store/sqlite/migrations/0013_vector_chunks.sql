-- The chunks of vector stores (store.VectorIndex): each file's passages with
-- their embeddings, scaled to unit length (dims little-endian float32s), and
-- the file's attributes as a JSON object. Searches read a store's vectors
-- once and scan them in memory.
CREATE TABLE vector_chunks (
  id         TEXT    PRIMARY KEY,
  store_id   TEXT    NOT NULL,
  file_id    TEXT    NOT NULL,
  ordinal    INTEGER NOT NULL,
  text       TEXT    NOT NULL,
  attributes TEXT    NOT NULL,
  dims       INTEGER NOT NULL,
  vector     BLOB    NOT NULL
) STRICT;
CREATE INDEX vector_chunks_file ON vector_chunks (store_id, file_id, ordinal);
