-- Whether the model wrote a conversation's title (a rename clears it).
ALTER TABLE conversations ADD COLUMN title_generated INTEGER NOT NULL DEFAULT 0;
