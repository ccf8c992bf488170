-- Memories (store.Memories): what a web chat user asked to be remembered.
CREATE TABLE memories (
    id         TEXT   PRIMARY KEY,
    user_id    TEXT   NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    text       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX memories_list ON memories(user_id, updated_at DESC, id DESC);

-- The user's memory switch (on unless turned off), beside the custom
-- instructions. A constant default rewrites no rows.
ALTER TABLE chat_settings ADD COLUMN memory_off BOOLEAN NOT NULL DEFAULT false;
