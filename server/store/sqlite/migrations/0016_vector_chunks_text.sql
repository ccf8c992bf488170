-- The lexical half of vector store search (store.VectorIndex.SearchChunksText):
-- an FTS5 index of every chunk's text and its store, ranked by BM25, kept by
-- triggers. vector_chunk_rows maps each indexed row (its rowid in
-- vector_chunk_text) to its chunk, whose TEXT key has an implicit rowid a
-- VACUUM may renumber. The store column lets one MATCH keep a search to its
-- stores inside the index; its BM25 weight is 0.
CREATE TABLE vector_chunk_rows (
  id       INTEGER PRIMARY KEY,
  chunk_id TEXT    NOT NULL UNIQUE
) STRICT;

CREATE VIRTUAL TABLE vector_chunk_text USING fts5(store, text, tokenize = 'unicode61 remove_diacritics 2');

INSERT INTO vector_chunk_rows (chunk_id) SELECT id FROM vector_chunks ORDER BY id;
INSERT INTO vector_chunk_text (rowid, store, text)
  SELECT r.id, c.store_id, c.text FROM vector_chunk_rows r JOIN vector_chunks c ON c.id = r.chunk_id;

CREATE TRIGGER vector_chunks_text_insert AFTER INSERT ON vector_chunks BEGIN
  INSERT INTO vector_chunk_rows (chunk_id) VALUES (new.id);
  INSERT INTO vector_chunk_text (rowid, store, text) VALUES (last_insert_rowid(), new.store_id, new.text);
END;
CREATE TRIGGER vector_chunks_text_update AFTER UPDATE OF store_id, text ON vector_chunks BEGIN
  UPDATE vector_chunk_text SET store = new.store_id, text = new.text
  WHERE rowid = (SELECT id FROM vector_chunk_rows WHERE chunk_id = new.id);
END;
CREATE TRIGGER vector_chunks_text_delete AFTER DELETE ON vector_chunks BEGIN
  DELETE FROM vector_chunk_text WHERE rowid = (SELECT id FROM vector_chunk_rows WHERE chunk_id = old.id);
  DELETE FROM vector_chunk_rows WHERE chunk_id = old.id;
END;
