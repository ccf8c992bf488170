-- Conversation search: an FTS5 index of titles and message texts, kept by
-- triggers. search_rows maps each indexed row (its rowid in search_text) to
-- the conversation and message it indexes ('' for the title), so the index
-- can be updated and deleted by rowid; the tables it indexes have TEXT keys,
-- whose implicit rowids a VACUUM may renumber.
CREATE TABLE search_rows (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT    NOT NULL,
    message_id      TEXT    NOT NULL
) STRICT;
CREATE INDEX search_rows_doc ON search_rows(conversation_id, message_id);

CREATE VIRTUAL TABLE search_text USING fts5(text, detail = none, tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER conversations_search_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO search_rows (conversation_id, message_id) VALUES (new.id, '');
    INSERT INTO search_text (rowid, text) VALUES (last_insert_rowid(), new.title);
END;
CREATE TRIGGER conversations_search_update AFTER UPDATE OF title ON conversations BEGIN
    UPDATE search_text SET text = new.title
    WHERE rowid IN (SELECT id FROM search_rows WHERE conversation_id = new.id AND message_id = '');
END;
CREATE TRIGGER conversations_search_delete AFTER DELETE ON conversations BEGIN
    DELETE FROM search_text WHERE rowid IN (SELECT id FROM search_rows WHERE conversation_id = old.id AND message_id = '');
    DELETE FROM search_rows WHERE conversation_id = old.id AND message_id = '';
END;

CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN
    INSERT INTO search_rows (conversation_id, message_id) VALUES (new.conversation_id, new.id);
    INSERT INTO search_text (rowid, text) VALUES (last_insert_rowid(),
        (SELECT coalesce(group_concat(json_extract(value, '$.text'), char(10)), '') FROM json_each(new.parts)
         WHERE json_extract(value, '$.text') IS NOT NULL));
END;
CREATE TRIGGER messages_search_update AFTER UPDATE OF parts ON messages BEGIN
    UPDATE search_text SET text =
        (SELECT coalesce(group_concat(json_extract(value, '$.text'), char(10)), '') FROM json_each(new.parts)
         WHERE json_extract(value, '$.text') IS NOT NULL)
    WHERE rowid IN (SELECT id FROM search_rows WHERE conversation_id = new.conversation_id AND message_id = new.id);
END;
CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN
    DELETE FROM search_text WHERE rowid IN (SELECT id FROM search_rows WHERE conversation_id = old.conversation_id AND message_id = old.id);
    DELETE FROM search_rows WHERE conversation_id = old.conversation_id AND message_id = old.id;
END;

-- Index what is already stored.
INSERT INTO search_rows (conversation_id, message_id) SELECT id, '' FROM conversations;
INSERT INTO search_rows (conversation_id, message_id) SELECT conversation_id, id FROM messages;
INSERT INTO search_text (rowid, text)
    SELECT r.id, c.title FROM search_rows r JOIN conversations c ON c.id = r.conversation_id WHERE r.message_id = '';
INSERT INTO search_text (rowid, text)
    SELECT r.id, (SELECT coalesce(group_concat(json_extract(value, '$.text'), char(10)), '') FROM json_each(m.parts)
                  WHERE json_extract(value, '$.text') IS NOT NULL)
    FROM search_rows r JOIN messages m ON m.id = r.message_id AND m.conversation_id = r.conversation_id;

-- Public share links: one per conversation, gone with it.
CREATE TABLE shares (
    id              TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL UNIQUE REFERENCES conversations(id) ON DELETE CASCADE,
    user_id         TEXT    NOT NULL,
    snapshot        BLOB    NOT NULL,
    created_at      INTEGER NOT NULL
) STRICT;
