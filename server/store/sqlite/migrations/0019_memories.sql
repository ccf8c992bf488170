-- Memories (store.Memories): what a web chat user asked to be remembered.
CREATE TABLE memories (
    id         TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    text       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX memories_list ON memories(user_id, updated_at DESC, id DESC);

-- The user's memory switch (on unless turned off), beside the custom
-- instructions.
ALTER TABLE chat_settings ADD COLUMN memory_off INTEGER NOT NULL DEFAULT 0;
