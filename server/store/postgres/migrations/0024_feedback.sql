-- People's ratings of answers: one per person and answer, gone with the
-- conversation.
CREATE TABLE message_feedback (
  user_id         TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  message_id      TEXT    NOT NULL,
  conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  model           TEXT    NOT NULL,
  good            BOOLEAN NOT NULL,
  note            TEXT    NOT NULL,
  updated_at      BIGINT  NOT NULL,
  PRIMARY KEY (user_id, message_id)
);
CREATE INDEX message_feedback_conversation ON message_feedback (conversation_id);
CREATE INDEX message_feedback_time ON message_feedback (updated_at);
