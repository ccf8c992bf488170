-- Conversation search: tsvector columns the database keeps itself (generated
-- from the title, and from the text parts of a message's JSON), each with a
-- GIN index. The 'simple' configuration neither stems nor drops stop words,
-- so every language is matched the same way, by word prefix, as SQLite's FTS5
-- index does. Messages kept in a CQL store are not in this table: there only
-- titles are found.
ALTER TABLE conversations ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', title)) STORED;
CREATE INDEX conversations_search ON conversations USING GIN (search);

ALTER TABLE messages ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', jsonb_path_query_array(parts::jsonb, '$[*].text'))) STORED;
CREATE INDEX messages_search ON messages USING GIN (search);

-- Public share links: one per conversation, gone with it.
CREATE TABLE shares (
    id              TEXT   PRIMARY KEY,
    conversation_id TEXT   NOT NULL UNIQUE REFERENCES conversations(id) ON DELETE CASCADE,
    user_id         TEXT   NOT NULL,
    snapshot        BYTEA  NOT NULL,
    created_at      BIGINT NOT NULL
);
