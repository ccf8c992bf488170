-- A person's conversations pinned to the top of the list, and filed in
-- folders (a name; empty for none).
ALTER TABLE conversations ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE conversations ADD COLUMN folder TEXT NOT NULL DEFAULT '';
