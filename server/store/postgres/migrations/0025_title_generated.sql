-- Whether the model wrote a conversation's title (a rename clears it).
ALTER TABLE conversations ADD COLUMN title_generated BOOLEAN NOT NULL DEFAULT false;
