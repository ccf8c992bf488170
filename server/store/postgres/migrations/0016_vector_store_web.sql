-- A web chat project's vector store: its ingestion counts against the
-- owner's tier limits instead of charging the balance.
ALTER TABLE vector_stores ADD COLUMN web BOOLEAN NOT NULL DEFAULT false;
