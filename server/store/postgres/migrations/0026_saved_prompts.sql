-- People's prompt libraries: a name (what follows / in the message box)
-- unique per person, and the text it inserts.
CREATE TABLE saved_prompts (
  id         TEXT    PRIMARY KEY,
  user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name       TEXT    NOT NULL,
  text       TEXT    NOT NULL,
  updated_at BIGINT  NOT NULL,
  UNIQUE (user_id, name)
);
