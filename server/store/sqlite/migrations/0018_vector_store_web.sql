-- A web chat project's vector store: its ingestion counts against the
-- owner's tier limits instead of charging the balance.
ALTER TABLE vector_stores ADD COLUMN web INTEGER NOT NULL DEFAULT 0;
