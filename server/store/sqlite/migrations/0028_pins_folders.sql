-- A person's conversations pinned to the top of the list, and filed in
-- folders (a name; empty for none).
ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN folder TEXT NOT NULL DEFAULT '';
