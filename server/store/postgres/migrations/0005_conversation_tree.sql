-- Branching conversations: each message names the message it follows
-- (parent_id, '' for a root); an answer is stored as it grows (status
-- 'in_progress', then '' when complete, or 'interrupted' when its gateway
-- died). Messages stored before this read as the chain they were: each
-- one's parent becomes the message before it.
ALTER TABLE messages ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN status TEXT NOT NULL DEFAULT '';
UPDATE messages SET parent_id = chain.prev
FROM (SELECT conversation_id, id, lag(id, 1, '') OVER (PARTITION BY conversation_id ORDER BY created_at, id) AS prev FROM messages) AS chain
WHERE messages.conversation_id = chain.conversation_id AND messages.id = chain.id AND chain.prev <> '';

-- A conversation's own system prompt, and the leaf of its active branch
-- ('' until set: then the newest message is).
ALTER TABLE conversations ADD COLUMN system_prompt TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN leaf_id TEXT NOT NULL DEFAULT '';

-- A user's custom instructions, applied to every conversation.
CREATE TABLE chat_settings (
    user_id      TEXT   PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    instructions TEXT   NOT NULL,
    updated_at   BIGINT NOT NULL
);
