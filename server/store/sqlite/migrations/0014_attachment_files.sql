-- Files (FileService, /v1/files) are attachments with a purpose. A file is
-- never deleted as unreferenced: it is kept until its owner deletes it or,
-- when it was given expires_after, until delete_at, when the sweep deletes
-- it, bytes and record. Attachments uploaded for messages have purpose ''.
ALTER TABLE attachments ADD COLUMN purpose TEXT NOT NULL DEFAULT '';
ALTER TABLE attachments ADD COLUMN delete_at INTEGER;
CREATE INDEX attachments_files ON attachments(user_id, id) WHERE purpose != '';
CREATE INDEX attachments_delete_at ON attachments(delete_at) WHERE delete_at IS NOT NULL;
