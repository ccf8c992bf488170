-- Uploads no message references within --attachment-unreferenced-ttl are
-- deleted with their blobs. referenced_at is set when a message naming the
-- attachment is saved (before it is); claimed_at hides an attachment a
-- sweeper claimed until its blobs are deleted and its row purged.
ALTER TABLE attachments ADD COLUMN referenced_at BIGINT;
ALTER TABLE attachments ADD COLUMN claimed_at BIGINT;
-- What was uploaded before counts as referenced: its messages may live in
-- another database (CQL), so the expiry never deletes it.
UPDATE attachments SET referenced_at = created_at;
CREATE INDEX attachments_unreferenced ON attachments(created_at) WHERE referenced_at IS NULL;
